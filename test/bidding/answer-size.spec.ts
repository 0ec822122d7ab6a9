/**
 * Output amplification: the answer to one request stays within ANSWER_MAX_BYTES. Bids past it are
 * dropped (in imp order: the first imps' bids are kept), never a 5xx. Over real HTTP.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';

const CAMPAIGNS = {
  version: 1,
  currency: 'USD',
  campaigns: [
    {
      id: 'big',
      adomain: ['big.example'],
      cat: ['IAB3'],
      landingUrl: 'https://big.example/landing',
      budget: { total: 100000, daily: 100000 },
      creatives: [{ id: 'big-cr', type: 'banner', price: 1, banner: { w: 300, h: 250, imageUrl: 'https://cdn.big.example/a.png' } }],
    },
  ],
};

/** 100 imps whose ids are 256 two-byte characters each (within the request limits). */
function hostile(id: string): string {
  return JSON.stringify({
    id,
    imp: Array.from({ length: 100 }, (_, i) => ({ id: `${i}`.padEnd(256, 'é'), banner: { w: 300, h: 250 } })),
    site: { domain: 'news.example' },
  });
}

async function withApp(env: Record<string, string>, fn: (t: TestApp) => Promise<void>): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-answer-'));
  fs.writeFileSync(path.join(dir, 'campaigns.json'), JSON.stringify(CAMPAIGNS));
  const t = await startTestApp({ CAMPAIGNS_FILE: path.join(dir, 'campaigns.json'), LOG_REDIS_KEY: 'answer-log', LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'error', SHED_MAX_WAIT_MS: '0', ...env });
  try {
    await new Promise((r) => setTimeout(r, 400)); // the first budget refresh
    await fn(t);
  } finally {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('the answer size budget', () => {
  let gzBody: Buffer;
  before(() => {
    gzBody = gzipSync(hostile('amp-1'));
  });
  after(() => undefined);

  it('a small gzipped request with 100 long-id imps gets at most ANSWER_MAX_BYTES (64 KiB) of answer', async () => {
    await withApp({}, async (t) => {
      assert.ok(gzBody.length < 4096, `the request is ${gzBody.length} B gzipped`);
      const r = await request(`${t.url}/openrtb2/bid`, { body: gzBody, headers: { 'content-encoding': 'gzip', 'content-type': 'application/json' } });
      assert.equal(r.status, 200, r.body.toString().slice(0, 200));
      assert.ok(r.body.length <= 64 * 1024, `answer of ${r.body.length} B from a ${gzBody.length} B request`);
      const bids = (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Array<{ impid: string }> }> }).seatbid[0].bid;
      assert.ok(bids.length > 0 && bids.length < 100, `${bids.length} bids`);
      // The first imps' bids are the ones kept.
      assert.deepEqual(bids.map((b) => b.impid), Array.from({ length: bids.length }, (_, i) => `${i}`.padEnd(256, 'é')));
      let rec: Record<string, unknown> | undefined;
      await until('the response record', async () => {
        rec = (await readRedisLog(t.redis.url, 'answer-log')).records.find((x) => x.id === 'amp-1' && x.type === 'response');
        return rec !== undefined;
      });
      assert.equal(rec!.dropped, 100 - bids.length, JSON.stringify({ ...rec, res: undefined }));
    });
  });

  it('when not even one bid fits, the answer is a no-bid with reason answer_size, never a 5xx', async () => {
    await withApp({ ANSWER_MAX_BYTES: '4096' }, async (t) => {
      const r = await request(`${t.url}/openrtb2/bid`, { body: hostile('amp-2') });
      assert.equal(r.status, 204, r.body.toString().slice(0, 200));
      let rec: Record<string, unknown> | undefined;
      await until('the response record', async () => {
        rec = (await readRedisLog(t.redis.url, 'answer-log')).records.find((x) => x.id === 'amp-2' && x.type === 'response');
        return rec !== undefined;
      });
      assert.equal(rec!.reason, 'answer_size');
      assert.equal(rec!.dropped, 100);
      // An ordinary request still bids under the same budget.
      const ok = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify({ id: 'amp-3', imp: [{ id: '1', banner: { w: 300, h: 250 } }] }) });
      assert.equal(ok.status, 200);
      assert.ok(ok.body.length <= 4096);
    });
  });
});
