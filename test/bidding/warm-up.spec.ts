/**
 * The bid path's warm-up before a worker listens (src/bidding/warm-up.ts, WARM_UP_REQUESTS): the
 * requests it makes from the campaigns reach their auction, it stops at its bounds, and running it
 * leaves no trace: no bid-log record, no request, bid, privacy or pacing count, no budget, and the
 * first real bids are as without it. Over the real app and a real Redis.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ExplainService } from '../../src/bidding/explain.service';
import { warmUp, warmUpBodies } from '../../src/bidding/warm-up';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { bidRequest, readRedisLog, sleep } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';

/**
 * The `bidder_*` counters that a bid request, a bid, a privacy decision, the pacing gate, shading or
 * the bid log move, by name and labels (the worker's label left out, so two apps compare).
 */
const COUNTED =
  /^(bidder_(?:bid_requests_total|bid_request_duration_seconds_count|bid_request_wait_seconds_count|bid_price_cpm_count|privacy_decisions_total|pacing_blocked_total|pacing_throttled_total|shading_total|exchange_requests_total|log_records_logged_total)(?:\{[^}]*\})?) (\S+)$/;

async function counters(t: TestApp): Promise<Map<string, number>> {
  const text = (await request(`${t.adminUrl}/metrics`, { method: 'GET' })).body.toString('utf8');
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = COUNTED.exec(line);
    if (m) out.set(m[1].replace(/,?worker="[^"]*"/, '').replace('{}', ''), Number(m[2]));
  }
  return out;
}

describe('the bid path warm-up', () => {
  let warmed: TestApp;
  let cold: TestApp;

  before(async () => {
    const env = { LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'error', SHED_MAX_WAIT_MS: '0' };
    warmed = await startTestApp({ ...env, LOG_REDIS_KEY: 'warm-log', WARM_UP_REQUESTS: '2000' });
    cold = await startTestApp({ ...env, LOG_REDIS_KEY: 'cold-log', WARM_UP_REQUESTS: '0' });
  });
  after(async () => {
    await warmed?.close();
    await cold?.close();
  });

  it('makes requests the campaigns bid on, one per creative', () => {
    const candidates = warmed.app.get(CampaignStore).current().candidates;
    const bodies = warmUpBodies(candidates, 64);
    assert.equal(bodies.length, Math.min(candidates.length, 64));
    const explainer = warmed.app.get(ExplainService);
    const eligible = bodies.filter((b) => explainer.explain(b).status === 200).length;
    // Deal-only campaigns do not bid in the open market these requests are.
    const open = candidates.slice(0, bodies.length).filter((c) => !c.dealsOnly).length;
    assert.ok(open > 0, 'the demo campaigns have open-market creatives');
    assert.ok(eligible >= open * 0.8, `${eligible} of ${open} open-market creatives' requests would get a bid`);
    assert.equal(warmUpBodies([], 64).length, 1, 'without campaigns, one request still exercises the reader');
  });

  it('stops at its request count and at its time bound, and runs past refused bodies', () => {
    let calls = 0;
    const target = { warm: () => void calls++ };
    assert.deepEqual({ ...warmUp(target, [Buffer.from('{}')], 500, 60_000), ms: 0 }, { requests: 500, bodies: 1, ms: 0 });
    assert.equal(calls, 500);
    let clock = 0;
    const slow = { warm: () => void (clock += 1) };
    const r = warmUp(slow, [Buffer.from('{}')], 1_000_000, 100, () => clock);
    assert.ok(r.requests >= 100 && r.requests <= 164, `stopped after ${r.requests} requests at 1 ms each with a 100 ms bound`);
    const refusing = { warm: () => { throw new Error('400'); } };
    assert.equal(warmUp(refusing, [Buffer.from('x')], 10, 60_000).requests, 10);
    assert.equal(warmUp(target, [], 10, 60_000).requests, 0);
  });

  it('leaves no bid-log record and moves no counter', async () => {
    await sleep(300); // several flushes of the log
    const log = await readRedisLog(warmed.redis.url, 'warm-log');
    assert.equal(log.records.length, 0, 'no bid-log record of the warm-up');
    const moved = [...(await counters(warmed))].filter(([, v]) => v !== 0);
    assert.deepEqual(moved, [], 'no request, bid, privacy, pacing, shading or log counter moved');
  });

  it('bids afterwards as a worker that did not warm up, and counts the same', async () => {
    for (const t of [warmed, cold]) {
      const a = await request(`${t.url}/openrtb2/bid`, { body: bidRequest('after-warm-up'), headers: { 'content-type': 'application/json' } });
      assert.equal(a.status, 200, a.body.toString());
      const res = JSON.parse(a.body.toString()) as { seatbid: Array<{ bid: unknown[] }> };
      assert.equal(res.seatbid[0].bid.length, 1);
    }
    await sleep(300);
    for (const [t, key] of [[warmed, 'warm-log'], [cold, 'cold-log']] as const) {
      const log = await readRedisLog(t.redis.url, key);
      assert.deepEqual(
        log.records.map((r) => `${r.type} ${r.id}`),
        ['request after-warm-up', 'response after-warm-up'],
        'only the real request is in the log',
      );
    }
    const w = await counters(warmed);
    const c = await counters(cold);
    assert.ok(c.get('bidder_bid_requests_total{outcome="bid",reason="",status="200"}') === 1, `the counters are read: ${[...c].join(' ')}`);
    // Whether a shaded bid explores is a random draw (SHADING_EXPLORE_PERCENT), in either worker.
    const drawn = ([k]: [string, number]) => k !== 'bidder_shading_total{what="explored"}';
    assert.deepEqual([...w].filter(drawn).sort(), [...c].filter(drawn).sort(), 'the same counts as the worker without a warm-up');
  });
});
