/**
 * `test` = 1 (OpenRTB 2.6 §3.2.1): the exchange checks its integration. Such a request bids as a
 * live one would, but never reserves or spends budget, never counts toward frequency caps, and its
 * records are marked. Over real HTTP against the app and a real Redis.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { readRedisLog, until } from '../log/support';
import { startTestApp, type TestApp } from '../support/app';
import { fire as fireAt, postBid } from '../support/bid';

const CAMPAIGNS = {
  version: 1,
  currency: 'USD',
  campaigns: [
    {
      // 10 CPM against a $0.055 day: five live bids of $0.01 fit, a sixth does not.
      id: 'tbudget',
      adomain: ['tbudget.example'],
      cat: ['IAB3'],
      landingUrl: 'https://tbudget.example/landing',
      budget: { total: 1000, daily: 0.055 },
      creatives: [{ id: 'tbudget-cr', type: 'banner', price: 10, banner: { w: 300, h: 250, imageUrl: 'https://cdn.tbudget.example/a.png' } }],
    },
    {
      id: 'tcap',
      adomain: ['tcap.example'],
      cat: ['IAB3'],
      landingUrl: 'https://tcap.example/landing',
      budget: { total: 1000, daily: 1000 },
      frequencyCap: { perDay: 1 },
      creatives: [{ id: 'tcap-cr', type: 'banner', price: 1, banner: { w: 728, h: 90, imageUrl: 'https://cdn.tcap.example/a.png' } }],
    },
  ],
};

interface Bid { id: string; price: number; cid: string; adm: string; burl: string }

describe('test = 1 requests', () => {
  let t: TestApp;
  let dir: string;
  let redis: Redis;
  let seq = 0;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-testflag-'));
    fs.writeFileSync(path.join(dir, 'campaigns.json'), JSON.stringify(CAMPAIGNS));
    t = await startTestApp({ CAMPAIGNS_FILE: path.join(dir, 'campaigns.json'), LOG_REDIS_KEY: 'testflag-log', LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'error', SHED_MAX_WAIT_MS: '0' });
    redis = new Redis(t.redis.url);
    await new Promise((r) => setTimeout(r, 400)); // the first budget refresh
  });
  after(async () => {
    redis?.disconnect();
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function bid(size: { w: number; h: number }, test: boolean, user = 'user-1'): Promise<{ id: string; status: number; bid: Bid | null }> {
    const id = `tf-${seq++}`;
    const body = { id, test: test ? 1 : 0, imp: [{ id: '1', banner: size }], site: { domain: 'news.example' }, user: { id: user } };
    const r = await postBid<Bid>(t.url, body);
    return { id, status: r.status, bid: r.bids[0] ?? null };
  }

  function fire(url: string, price: number): Promise<number> {
    return fireAt(t.url, url, { AUCTION_PRICE: String(price), AUCTION_CURRENCY: 'USD' });
  }

  it('bid as often as they like without reserving budget; their bills spend nothing', async () => {
    const bids: Bid[] = [];
    for (let i = 0; i < 20; i++) {
      const r = await bid({ w: 300, h: 250 }, true);
      assert.equal(r.status, 200, `test request ${i} got no bid: the lease was taken by test bids`);
      bids.push(r.bid!);
    }
    for (const b of bids) assert.equal(await fire(b.burl, b.price), 204);
    await new Promise((r) => setTimeout(r, 300)); // a budget refresh reads the spend
    assert.equal(await redis.get(spendKeys.total('tbudget')), null, 'a test bill was counted as spend');
    // Live requests still have the whole day: five bids of $0.01.
    let live = 0;
    for (let i = 0; i < 8; i++) if ((await bid({ w: 300, h: 250 }, false)).status === 200) live++;
    assert.equal(live, 5);
  });

  it("their impressions count toward no user's cap", async () => {
    const r = await bid({ w: 728, h: 90 }, true, 'capped-user');
    assert.equal(r.status, 200);
    const imp = /(https?:\/\/[^'"\s]+\/t\/imp\?[^'"\s<]+)/.exec(r.bid!.adm);
    assert.ok(imp, r.bid!.adm);
    assert.equal(await fire(imp[1], 0), 200);
    await new Promise((res) => setTimeout(res, 200)); // impressions are counted in 50 ms batches
    const live = await bid({ w: 728, h: 90 }, false, 'capped-user');
    assert.equal(live.status, 200, 'the test impression capped the user (perDay 1)');
  });

  it('are marked in the bid log, and so are their notices', async () => {
    const r = await bid({ w: 728, h: 90 }, true, 'log-user');
    const liveR = await bid({ w: 728, h: 90 }, false, 'log-user-2');
    assert.equal(await fire(r.bid!.burl, r.bid!.price), 204);
    let recs: Array<Record<string, unknown>> = [];
    await until('the records', async () => {
      recs = (await readRedisLog(t.redis.url, 'testflag-log')).records;
      return recs.filter((x) => x.id === r.id).length === 3 && recs.filter((x) => x.id === liveR.id).length === 2;
    });
    const mine = recs.filter((x) => x.id === r.id);
    for (const x of mine) assert.equal(x.test, true, JSON.stringify(x));
    const bill = mine.find((x) => x.type === 'bill');
    assert.equal(bill?.counted, false);
    for (const x of recs.filter((y) => y.id === liveR.id)) assert.equal(x.test, undefined, 'live records carry no test mark');
  });
});
