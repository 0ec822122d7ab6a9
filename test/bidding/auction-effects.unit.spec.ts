/**
 * The auction changes nothing itself (src/bidding/auction.ts): what a request would change comes
 * back with its answer (AuctionEffects: the pacing gate's counts, the budget its bids commit, their
 * prices), the bid path applies it and explain and the warm-up drop it. Over the real services
 * (SpendService, CapsService, the pacing gate, metrics) above in-memory stores
 * (test/support/fake-stores.ts). Over real HTTP and a real Redis: explain-readonly.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { type AuctionEffects, BidAuction } from '../../src/bidding/auction';
import { loadConfig } from '../../src/config/config';
import { CurrencyService } from '../../src/currency/currency.service';
import { CapsService } from '../../src/delivery/caps.service';
import { Clock } from '../../src/delivery/clock';
import { PacingGate } from '../../src/delivery/pacing.gate';
import { Random } from '../../src/delivery/random';
import type { ShadingRepository } from '../../src/delivery/shading.repository';
import { ShadingService } from '../../src/delivery/shading.service';
import { SpendService } from '../../src/delivery/spend.service';
import { utcDay } from '../../src/delivery/utc-day';
import { MetricsService } from '../../src/metrics/metrics.service';
import { parseBidRequest } from '../../src/openrtb/parse';
import type { BidRequest } from '../../src/openrtb/types';
import type { RedisBatch } from '../../src/redis/batch';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { PayloadCodec } from '../../src/tracking/payload';
import { bannerCampaign } from '../support/campaigns';
import { MemoryCampaignSource, MemoryCapsRepository, MemorySpendRepository } from '../support/fake-stores';

Logger.overrideLogger(false);

const OPEN = { w: 300, h: 250 };
const TINY = { w: 468, h: 60 };
const EVEN = { w: 728, h: 90 };
const USER = 'user-key-1';

/**
 * `capped` (2 CPM) has capped the user; `budgeted` (1 CPM) bids under it; `tiny`'s
 * budget holds one bid and a half (1 CPM: 0.001 USD a bid); `even` is paced at half the requests.
 */
const campaigns = [
  { ...bannerCampaign('capped', OPEN, { budget: { total: 10, daily: 10 }, frequencyCap: { perDay: 1 } }), creatives: [{ id: 'capped-cr', type: 'banner', price: 2, banner: { ...OPEN, imageUrl: 'https://cdn.capped.example/a.png' } }] },
  bannerCampaign('budgeted', OPEN, { budget: { total: 10, daily: 10 } }),
  bannerCampaign('tiny', TINY, { budget: { total: 0.0015, daily: 0.0015 } }),
  bannerCampaign('even', EVEN, { budget: { total: 10, daily: 10 }, pacing: 'even' }),
];

/** A Random that says how often it was drawn from, always 0.9 (above the even campaign's share). */
class CountingRandom extends Random {
  draws = 0;
  override next = (): number => {
    this.draws++;
    return 0.9;
  };
}

async function world() {
  const config = loadConfig({ HOST_ID: 'h', WORKER_ID: '1', LOG_LEVEL: 'error' });
  const store = new CampaignStore(new MemoryCampaignSource(JSON.stringify({ version: 1, campaigns })));
  const clock = new Clock();
  const random = new CountingRandom();
  const currency = new CurrencyService({ file: null, url: null, refreshSeconds: 3600, maxAgeSeconds: 0, maxChangePct: 20 });
  await currency.onModuleInit();
  const spend = new SpendService(config, new MemorySpendRepository(), store, clock, currency, random);
  await spend.refresh();
  const capsDb = new MemoryCapsRepository();
  capsDb.capped.set(utcDay(clock.now()), new Set([`capped\u0000${USER}`]));
  const caps = new CapsService(capsDb, store, clock, null as unknown as RedisBatch);
  await caps.reload();
  // The even campaign enters half the requests it is eligible for (its controller's share, set here).
  spend['budgets'].get('even')!.share = 0.5;
  const gate = new PacingGate(spend, caps);
  const metrics = new MetricsService(config);
  const shading = new ShadingService(config, null as unknown as ShadingRepository, store, random, clock);
  const codec = new PayloadCodec({ current: { id: 1, secret: 'test-secret-0123456789abcdef' }, accepted: [{ id: 1, secret: 'test-secret-0123456789abcdef' }], legacy: false });
  const auction = new BidAuction(config, store, gate, spend, codec, currency, shading, clock);
  return { spend, caps, gate, metrics, random, auction };
}

type World = Awaited<ReturnType<typeof world>>;

/** One imp of `OPEN`, two of `TINY`, one of `EVEN`, from the user. */
function request(id: string): BidRequest {
  const imp = (i: number, size: { w: number; h: number }) => ({ id: String(i), banner: size });
  const req = parseBidRequest({ id, imp: [imp(1, OPEN), imp(2, TINY), imp(3, TINY), imp(4, EVEN)], site: { domain: 'fx.example', publisher: { name: 'P' } }, user: { id: 'u' } });
  req.userKey = USER;
  return req;
}

/** Everything the effects would change: leases and windows, traffic counts, the gate's counters, the bid price metric, the draws. */
async function state(w: World): Promise<unknown> {
  const budgets: Record<string, unknown> = {};
  for (const [id, b] of w.spend['budgets']) budgets[id] = { lease: b.lease, held: b.held(), source: [...b.sourceCurrent], seen: b.seen };
  const prices = (await w.metrics.render()).split('\n').filter((l) => l.startsWith('bidder_bid_price_cpm_count'));
  return { budgets, spend: { ...w.spend.stats }, caps: { ...w.caps.stats }, prices, draws: w.random.draws };
}

/** The effects as plain values. */
function values(fx: AuctionEffects): unknown {
  return {
    seen: fx.seen.slice(0, fx.seenCount).map(campaignOf),
    blocked: fx.blocked,
    throttled: fx.throttled,
    capBlocked: fx.capBlocked,
    commits: fx.commits.slice(0, fx.commitCount).map((c) => c.id),
    prices: fx.prices.slice(0, fx.priceCount),
  };
}

let current: World | null = null;
/** The campaign id of a budget seen (by identity, in the current world's budgets). */
function campaignOf(b: unknown): string {
  for (const [id, x] of current!.spend['budgets']) if (x === b) return id;
  return '?';
}

describe('the auction returns its effects; only the bid path applies them', () => {
  it('returns the gate counts, commits and prices of a bid, and changes nothing until they are applied', async () => {
    const w = (current = await world());
    const before = await state(w);
    const { answer, effects } = w.auction.hold(request('r1'), true);
    assert.equal(answer.status, 200);
    const bids = JSON.parse(answer.bytes!.toString()) as { seatbid: Array<{ bid: Array<{ impid: string; crid: string }> }> };
    assert.deepEqual(
      bids.seatbid[0].bid.map((b) => [b.impid, b.crid]),
      [
        ['1', 'budgeted-cr'],
        ['2', 'tiny-cr'],
      ],
      'the capped campaign and the third imp (tiny: its one bid is pending) bid nothing, the even campaign sat out its draw',
    );
    assert.deepEqual(values(effects), {
      // Every budget check counts a request its campaign was eligible for.
      seen: ['capped', 'budgeted', 'tiny', 'tiny', 'even'],
      blocked: 1,
      throttled: 1,
      capBlocked: 1,
      commits: ['budgeted-cr', 'tiny-cr'],
      prices: [1, 1],
    });
    assert.deepEqual(await state(w), { ...(before as object), draws: 1 }, 'nothing applied: only the draw was taken');

    w.gate.apply(effects);
    assert.deepEqual(values(effects), { seen: [], blocked: 0, throttled: 0, capBlocked: 0, commits: [], prices: [1, 1] }, "applied once; the prices are left to the bid path's metric");
    const after = (await state(w)) as { budgets: Record<string, { lease: number; seen: number }>; spend: { blockedBids: number; throttled: number }; caps: { blockedBids: number } };
    assert.equal(after.budgets.capped.seen, 1);
    assert.equal(after.budgets.budgeted.seen, 1);
    assert.equal(after.budgets.tiny.seen, 2);
    assert.equal(after.budgets.even.seen, 1);
    assert.ok(Math.abs(after.budgets.tiny.lease - 0.0005) < 1e-12, `tiny's lease less one bid: ${after.budgets.tiny.lease}`);
    assert.ok(Math.abs(after.budgets.budgeted.lease - 9.999) < 1e-12);
    assert.deepEqual([after.spend.blockedBids, after.spend.throttled, after.caps.blockedBids], [1, 1, 1]);
  });

  it('dropped (explain, the warm-up): the same answers again and again, no draw, and nothing changed', async () => {
    const w = (current = await world());
    const before = await state(w);
    for (let i = 0; i < 3; i++) {
      const imps: Parameters<BidAuction['explain']>[2] = [];
      const explained = w.auction.explain(request(`e${i}`), true, imps);
      assert.equal(explained.answer.status, 200);
      assert.deepEqual(
        imps.map((x) => x.reason),
        [null, null, 'budget', null],
        "the third imp sees the second's pending bid; the even campaign is judged as entering (no draw)",
      );
      assert.deepEqual((values(explained.effects) as { commits: string[] }).commits, ['budgeted-cr', 'tiny-cr', 'even-cr']);
      const rehearsed = w.auction.rehearse(request(`w${i}`), true);
      assert.equal(rehearsed.answer.status, 200);
      assert.equal((JSON.parse(rehearsed.answer.bytes!.toString()) as { seatbid: Array<{ bid: unknown[] }> }).seatbid[0].bid.length, 3, 'the even campaign bids too: no draw');
      assert.deepEqual(values(rehearsed.effects), {
        seen: ['capped', 'budgeted', 'tiny', 'tiny', 'even'],
        blocked: 1,
        throttled: 0,
        capBlocked: 1,
        commits: ['budgeted-cr', 'tiny-cr', 'even-cr'],
        prices: [1, 1, 1],
      });
    }
    assert.deepEqual(await state(w), before, 'leases, traffic counts, counters, metrics and draws as they were');
    // The bid path's own auction, effects applied, does change them: the comparison above can fail.
    w.gate.apply(w.auction.hold(request('r2'), true).effects);
    assert.notDeepEqual(await state(w), before);
  });
});
