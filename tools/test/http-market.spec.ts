/**
 * The short markets over HTTP (tools/sim/http-market.ts): a real bidder (two PM2 workers, a real
 * Redis) answers a few seconds of a market in real time; every bid request and notice is answered
 * 2xx, the figures are well formed, and the harness leaves no PM2 daemon behind.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { driveHttp, startHttpBidder } from '../sim/http-market';
import { MARKETS } from '../sim/market';

const root = path.resolve(__dirname, '..', '..', '..');

describe('short markets over HTTP', () => {
  it('priced loss notices, 6 s at 35 auctions/s against two PM2 workers: every request and notice answered 2xx, figures well formed', { timeout: 120_000 }, async () => {
    const bidder = await startHttpBidder({ market: MARKETS['priced-loss'], workers: 2, root });
    let r: Awaited<ReturnType<typeof driveHttp>>;
    try {
      r = await driveHttp({ url: bidder.url, market: MARKETS['priced-loss'], rate: 35, seconds: 6, seed: 1 });
    } finally {
      await bidder.stop();
    }
    assert.equal(fs.existsSync(bidder.pm2Home), false, 'the temporary PM2_HOME is removed');
    assert.ok(r.requests >= 150 && r.requests <= 280, `${r.requests} requests in 6 s at 35/s`);
    assert.equal(r.bidErrors, 0);
    assert.equal(r.bids + r.noBids, r.requests);
    assert.ok(r.bids >= 0.9 * r.requests, `${r.bids} bids of ${r.requests} requests (a campaign worth 2.00 above every floor bids on each, unless a busy worker sheds it)`);
    assert.ok(r.wins > 0 && r.wins < r.bids, `${r.wins} wins of ${r.bids}`);
    assert.ok(r.oracle.wins > 0 && r.oracle.wins <= r.requests);
    assert.ok(Number.isFinite(r.surplus) && r.surplus > 0 && r.surplus <= r.wins * 2e-3, `surplus ${r.surplus}`);
    assert.ok(Number.isFinite(r.oracle.surplus) && r.oracle.surplus > 0);
    assert.equal(r.noticeErrors, 0, JSON.stringify(r.notices));
    // A win notice and a bill per win, a loss notice per loss, all 204.
    assert.deepEqual(r.notices, { win: { '204': r.wins }, bill: { '204': r.wins }, loss: { '204': r.bids - r.wins } });
    assert.ok(r.oracle.wins <= r.requests && r.wins <= r.bids);
    assert.ok(r.latencyMs.p50 > 0 && r.latencyMs.p99 >= r.latencyMs.p50);
  });
});
