/**
 * Fixture-driven cases over real HTTP: every OpenRTB sample request (test/fixtures/samples) must get
 * a valid bid or a clean 204, and every case in test/fixtures/cases/{exemplary,supplemental} must get
 * its expected answer. Every 200 passes the response validator.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PayloadCodec, trackingKeys } from '../../src/tracking/payload';
import { request, startTestApp, type TestApp } from '../support/app';
import { sampleRequests } from '../support/samples';
import { validateBidResponse } from '../support/validate';

const CASES_DIR = path.resolve(__dirname, '..', '..', '..', 'test', 'fixtures', 'cases');

interface Case {
  description: string;
  request: Record<string, unknown>;
  headers?: Record<string, string>;
  expect: { status: number; bids?: number; mtypes?: number[]; error?: string };
}

let t: TestApp;
let codec: PayloadCodec;
before(async () => {
  t = await startTestApp();
  codec = new PayloadCodec(trackingKeys(t.config));
});
after(async () => {
  await t.close();
});

async function post(body: unknown, headers: Record<string, string> = {}) {
  return request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } });
}

describe('sample requests from real exchanges and libraries', () => {
  const samples = sampleRequests();
  it('finds the samples', () => assert.ok(samples.length >= 15, `only ${samples.length} samples found`));
  let bids = 0;
  for (const s of samples) {
    it(s.name, async () => {
      const r = await post(s.request);
      assert.ok(r.status === 200 || r.status === 204, `status ${r.status}: ${r.body.toString()}`);
      if (r.status === 204) {
        assert.equal(r.body.length, 0, '204 must have an empty body');
        return;
      }
      bids++;
      const problems = validateBidResponse(s.request, JSON.parse(r.body.toString()), { codec });
      assert.deepEqual(problems, []);
    });
  }
  it('most samples get a bid', () => assert.ok(bids >= Math.ceil(samples.length * 0.6), `${bids} of ${samples.length} got bids`));
});

for (const group of ['exemplary', 'supplemental']) {
  describe(`cases: ${group}`, () => {
    const dir = path.join(CASES_DIR, group);
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
      const c = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as Case;
      it(`${f}: ${c.description}`, async () => {
        const r = await post(c.request, c.headers);
        assert.equal(r.status, c.expect.status, r.body.toString());
        if (c.expect.status === 204) assert.equal(r.body.length, 0);
        if (c.expect.error !== undefined) assert.equal((JSON.parse(r.body.toString()) as { error: string }).error, c.expect.error);
        if (c.expect.status !== 200) return;
        const res = JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Array<{ mtype: number }> }> };
        assert.deepEqual(validateBidResponse(c.request, res, { codec }), []);
        const all = res.seatbid.flatMap((s) => s.bid);
        if (c.expect.bids !== undefined) assert.equal(all.length, c.expect.bids);
        if (c.expect.mtypes !== undefined) assert.deepEqual(all.map((b) => b.mtype).sort(), [...c.expect.mtypes].sort());
      });
    }
  });
}
