// LOG_REQUEST_SAMPLE: every request has its compact request and response records; the redacted body
// (and the response as sent) only for the sampled fraction, within 3σ of the rate.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { toBatch } from '../../src/shipper/batch';
import { ParquetStore } from '../../src/shipper/parquet-store';
import { frameOf, readShipped, tmpDir } from '../shipper/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { assertExactlyOnce, bidRequest, readRedisLog, type LogLine } from '../log/support';

const N = 1200;
const RATE = 0.1;

describe('LOG_REQUEST_SAMPLE: compact records for every request, the body for a sample', () => {
  const KEY = 'sample-log';
  let t: TestApp;
  let records: LogLine[] = [];
  let lines: string[] = [];
  const ids: string[] = [];
  let bids = 0;

  before(async () => {
    t = await startTestApp({ LOG_REDIS_KEY: KEY, LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'warn', WORKER_ID: 'sample', LOG_REQUEST_SAMPLE: String(RATE), SHED_MAX_WAIT_MS: '0' });
    for (let i = 0; i < N; i++) {
      const id = `smp-${i}`;
      ids.push(id);
      let body = bidRequest(id);
      if (i % 5 === 4) body = body.replace('"w":300,"h":250', '"w":1,"h":1');
      const r = await request(`${t.url}/openrtb2/bid`, { body, headers: { 'content-type': 'application/json' } });
      assert.ok(r.status === 200 || r.status === 204, `${r.status} ${r.body.toString()}`);
      if (r.status === 200) bids++;
    }
    await t.app.close();
    ({ records, lines } = await readRedisLog(t.redis.url, KEY));
  });
  after(async () => {
    await t?.close();
  });

  it('every request has exactly one request and one response record', () => {
    assertExactlyOnce(records, ids);
    assert.ok(bids > N / 2, `${bids} bids`);
  });

  it(`the body is kept for ${RATE * 100} % of requests (within 3σ), and the record says so`, () => {
    const requests = records.filter((r) => r.type === 'request');
    const kept = requests.filter((r) => r.body === true);
    for (const r of requests) {
      assert.equal(typeof r.body, 'boolean');
      assert.equal('req' in r, r.body === true, `${r.id}: req present exactly when body is true`);
    }
    const sigma = Math.sqrt(N * RATE * (1 - RATE));
    assert.ok(Math.abs(kept.length - N * RATE) <= 3 * sigma, `${kept.length} kept of ${N}, expected ${N * RATE} ± ${(3 * sigma).toFixed(1)}`);
    const keptIds = new Set(kept.map((r) => r.id));
    for (const r of records.filter((x) => x.type === 'response' && x.status === 200)) {
      assert.equal('res' in r, keptIds.has(r.id), `${r.id}: the response as sent exactly with the request's body`);
    }
  });

  it('the compact request record: what the bidder read and decided on', () => {
    const r = records.find((x) => x.type === 'request' && x.id === 'smp-0') as Record<string, unknown>;
    assert.ok(r);
    assert.equal(r.inv, 'site');
    assert.equal(r.domain, 'www.foobar.com');
    assert.equal(r.imps, 1);
    assert.deepEqual(r.media, ['banner']);
    assert.deepEqual(r.sizes, ['300x250']);
    assert.deepEqual(r.floors, [0.03]);
    assert.deepEqual(r.curs, ['USD']);
    assert.equal(r.at, 1);
    assert.equal(r.tmax, 120);
    assert.equal(r.bytes, Buffer.byteLength(bidRequest('smp-0')));
    assert.match(String(r.hash), /^[A-Za-z0-9_-]{22}$/);
    assert.equal(typeof r.user, 'string');
  });

  it('the compact response record: each bid\'s ids, price, currency, campaign, creative, deal, value and the markup version', () => {
    const responses = records.filter((x) => x.type === 'response' && x.status === 200) as Array<Record<string, unknown>>;
    assert.equal(responses.length, bids);
    for (const r of responses) {
      assert.equal(r.cur, 'USD');
      assert.match(String(r.mv), /^[A-Za-z0-9_-]{12}$/);
      const list = r.bids as Array<Record<string, unknown>>;
      assert.ok(Array.isArray(list) && list.length === 1);
      const b = list[0];
      assert.match(String(b.id), /^[0-9a-f-]{36}$/);
      assert.equal(b.impid, '1');
      assert.ok(typeof b.price === 'number' && b.price > 0 && typeof b.value === 'number' && b.price <= (b.value));
      assert.ok(typeof b.cid === 'string' && typeof b.crid === 'string' && 'dealid' in b && b.mtype === 1);
      if ('res' in r) {
        const sent = (r.res as { seatbid: Array<{ bid: Array<{ id: string; price: number; cid: string; crid: string }> }> }).seatbid[0].bid[0];
        assert.deepEqual([sent.id, sent.price, sent.cid, sent.crid], [b.id, b.price, b.cid, b.crid]);
      }
    }
    const nobid = records.find((x) => x.type === 'response' && x.status === 204);
    assert.ok(nobid && typeof nobid.reason === 'string' && !('bids' in nobid));
  });

  it('a record of the earlier form (req and res only) and the compact one fill the same Parquet columns', async () => {
    // A pair whose body was kept has both forms in one line: without its compact fields it is an earlier record.
    const COMPACT = ['inv', 'domain', 'bundle', 'devicetype', 'os', 'country', 'imps', 'media', 'sizes', 'floors', 'floorcurs', 'deals', 'curs', 'at', 'tmax', 'user', 'bytes', 'hash', 'body', 'cur', 'mv', 'bids'];
    const kept = records.filter((r) => r.type === 'response' && r.status === 200 && 'res' in r).map((r) => r.id);
    assert.ok(kept.length > 0);
    const id = kept[0];
    const pair = lines.filter((l, i) => records[i].id === id && (records[i].type === 'request' || records[i].type === 'response'));
    assert.equal(pair.length, 2);
    const earlier = pair.map((l) => {
      const o = JSON.parse(l) as Record<string, unknown>;
      for (const k of COMPACT) delete o[k];
      o.id = `${id}-earlier`;
      return JSON.stringify(o);
    });
    const dir = tmpDir('sample-parquet-');
    const store = new ParquetStore({ dir, shipperId: 'sample', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      await store.store(toBatch([frameOf([...pair, ...earlier])]));
    } finally {
      store.close();
    }
    const cols = 'type, id, imps, media, bids, bid_ids, imp_ids, prices, cids, crids, deals, cur';
    const rows = (await readShipped(dir, cols));
    fs.rmSync(dir, { recursive: true, force: true });
    for (const type of ['request', 'response']) {
      const now = rows.find((r) => r.type === type && r.id === id)!;
      const before = rows.find((r) => r.type === type && r.id === `${id}-earlier`)!;
      // A request's deal ids are new with the compact form (earlier records had them only in `req`).
      if (type === 'request') assert.deepEqual([before.deals, now.deals], [null, []]);
      assert.deepEqual({ ...before, id, deals: now.deals }, now, type);
    }
    const res = rows.find((r) => r.type === 'response' && r.id === id)!;
    assert.equal(res.bids, 1n);
    assert.equal(rows.find((r) => r.type === 'request' && r.id === id)!.imps, 1n);
  });
});
