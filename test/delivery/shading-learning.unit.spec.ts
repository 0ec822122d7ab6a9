/**
 * What ShadingService learns from the notices of its own bids (unit test, no Redis: its sync is not
 * called), on a known market at 35 auctions a second: one log-normal competitor (median 0.9, σ 0.3),
 * value 2, prices to win never told, bids sent on the 4-decimal price grid as the auction sends them.
 * An outcome counted at a grid price below the bid (a bid between two grid prices, or a grid price
 * rounded down to 4 decimals) reads every win as a win at a lower price: the bids would settle up to
 * a grid step or two (8-16 %) under the optimum.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import { onTick, type Rates } from '../../src/currency/rates';
import { Clock } from '../../src/delivery/clock';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { bestBid, oracleBid } from '../../src/delivery/shading';
import { floorBucket, segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate, Match } from '../../src/targeting/types';
import { logNormalCdf, seeded } from '../../tools/sim/market';
import { MemoryShadingRepository } from '../support/fake-stores';

const START = Date.UTC(2026, 10, 28, 9, 30);
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;

const MEDIAN = 0.9;
const SIGMA = 0.3;
const cdf = (b: number): number => logNormalCdf(b, MEDIAN, SIGMA);
const OPTIMUM = oracleBid(cdf, 2, 0.05);

/**
 * 150 s of auctions at 35 a second through price() and learn(); notices come 50-300 ms after the
 * bid (wins always, losses when `losses`), or with `lateBills` no win notice and each win's bill
 * 20-60 s after the bid. Returns the expected surplus of the last 30 s of bids, and of all of them,
 * as a share of the optimum's, and the estimate's best price at the end (without exploration).
 */
function run(seed: number, losses: boolean, lateBills = false): { share: number; shareAll: number; best: number } {
  const r = seeded(seed);
  const config = { shading: true, shadingExplore: 0.05, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 1000, shadingHalfLifeMs: 600_000 } as unknown as Config;
  const store = { current: () => ({ get: (crid: string) => (crid === 'cr-banner' ? banner : undefined) }) } as unknown as CampaignStore;
  const random = new Random();
  random.next = r;
  let now = START;
  const clock = new Clock();
  clock.now = () => now;
  const s = new ShadingService(config, new MemoryShadingRepository(), store, random, clock);
  const rates = { convert: (v: number) => v } as unknown as Rates;
  const imp = { bidfloor: 0.05, bidfloorcur: 'USD' } as unknown as Imp;
  const req = { at: 1, publisher: 'pub-a', deviceType: 2, source: 0 } as unknown as BidRequest;
  const match = { dealId: null, price: 2, candidate: banner } as unknown as Match;
  const pending: Array<{ at: number; event: 'win' | 'bill' | 'loss'; p: NoticedBid; bid: number; sd: number }> = [];
  const last: number[] = [];
  const all: number[] = [];
  let nextTick = START + 100;
  for (let i = 0; i < 35 * 150; i++) {
    now = START + (i * 1000) / 35;
    while (nextTick <= now) {
      pending.sort((a, b) => a.at - b.at);
      while (pending.length > 0 && pending[0].at <= nextTick) {
        const n = pending.shift()!;
        now = n.at;
        s.learn(n.event, n.p, n.bid, null, n.sd, n.event === 'loss' ? 102 : null);
      }
      now = nextTick;
      s.tick();
      nextTick += 100;
    }
    now = START + (i * 1000) / 35;
    // On the 4-decimal grid of prices, as the auction sends it (a grid price 1.07634… goes out as 1.0763).
    const bid = onTick(s.price(req, imp, match, 'USD', rates, now), 0.05);
    const sd = Number(s.noticeParam(req, match).slice(4));
    // One competitor, log-normal.
    const m = MEDIAN * Math.exp(SIGMA * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()));
    const won = bid >= Math.max(m, 0.05);
    const p: NoticedBid = { bidId: `b-${i}`, cid: 'c1', crid: 'cr-banner', price: bid, cur: 'USD', ts: now, publisher: 'pub-a', source: 0 };
    if (won && lateBills) pending.push({ at: now + 20_000 + 40_000 * r(), event: 'bill', p, bid, sd });
    else if (won || losses) pending.push({ at: now + 50 + 250 * r(), event: won ? 'win' : 'loss', p, bid, sd });
    if (i >= 35 * 120) last.push(bid);
    all.push(bid);
  }
  const expected = (b: number): number => (2 - b) * cdf(b);
  const share = last.reduce((sum, b) => sum + expected(b), 0) / (last.length * expected(OPTIMUM));
  const shareAll = all.reduce((sum, b) => sum + expected(b), 0) / (all.length * expected(OPTIMUM));
  const best = bestBid(s.cdfOf(segmentKey(0, 'pub-a', '300x250', 2, floorBucket(0.05))), 2, 0.05, s.settings);
  if (process.env.TRACE_SHADING) {
    const bySecond: string[] = [];
    for (let t = 0; t < all.length; t += 350) bySecond.push(all.slice(t, t + 350).sort((a, b) => a - b)[175].toFixed(2));
    console.log(`seed ${seed} losses ${losses} late ${lateBills}: best ${best.toFixed(3)} share ${share.toFixed(3)} all ${shareAll.toFixed(3)} medians/10 s ${bySecond.join(' ')}`);
  }
  return { share, shareAll, best };
}

describe('shading: learning from wins and losses alone', () => {
  for (const losses of [true, false]) {
    for (const seed of [1, 2, 3]) {
      it(`${losses ? 'wins and loss notices' : 'wins only (no loss notices)'}, seed ${seed}: after 2 minutes the best price is within 4 % of the optimum and the bids of the last 30 s expect ≥ 98 % of its surplus`, () => {
        const { share, best } = run(seed, losses);
        assert.ok(Math.abs(best / OPTIMUM - 1) <= 0.04, `best price ${best.toFixed(3)}, optimum ${OPTIMUM.toFixed(3)} (${((100 * best) / OPTIMUM - 100).toFixed(1)} %)`);
        assert.ok(share >= 0.98, `expected surplus ${(100 * share).toFixed(1)} % of the optimum's`);
      });
    }
  }
});

describe('shading: an exchange whose wins come late (no win notices, bills 20-60 s after the bid)', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: the bids of the whole run expect ≥ 92 % of the optimum's surplus, those of the last 30 s ≥ 97 %`, () => {
      const { share, shareAll } = run(seed, true, true);
      assert.ok(shareAll >= 0.92, `whole run: ${(100 * shareAll).toFixed(1)} % of the optimum's surplus`);
      assert.ok(share >= 0.97, `last 30 s: ${(100 * share).toFixed(1)} %`);
    });
  }
});

describe('shading: whether an exchange sends loss notices, as EXCHANGES_FILE says', () => {
  const exchanges = [
    { name: 'sends', addresses: ['127.0.0.1'], token: null, header: 'x-bidder-token', lossNotices: true },
    { name: 'sends-none', addresses: ['127.0.0.1'], token: null, header: 'x-bidder-token', lossNotices: false },
    { name: 'learned', addresses: ['127.0.0.1'], token: null, header: 'x-bidder-token', lossNotices: 'learned' },
  ];
  /** A service, a bid on `source` (its price), and `n` bids a second apart that no notice answers, then the price again. */
  function silentBids(source: number, lossFirst: boolean, n: number): { before: number; after: number } {
    const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 1000, shadingHalfLifeMs: 600_000, exchanges } as unknown as Config;
    const store = { current: () => ({ get: (crid: string) => (crid === 'cr-banner' ? banner : undefined) }) } as unknown as CampaignStore;
    const random = new Random();
    random.next = () => 0.5;
    let now = START;
    const clock = new Clock();
    clock.now = () => now;
    const s = new ShadingService(config, new MemoryShadingRepository(), store, random, clock);
    const rates = { convert: (v: number) => v } as unknown as Rates;
    const imp = { bidfloor: 0.05, bidfloorcur: 'USD' } as unknown as Imp;
    const req = { at: 1, publisher: 'pub-a', deviceType: 2, source } as unknown as BidRequest;
    const match = { dealId: null, price: 2, candidate: banner } as unknown as Match;
    const before = s.price(req, imp, match, 'USD', rates, now);
    const sd = Number(s.noticeParam(req, match).slice(4));
    if (lossFirst) {
      // One loss notice (at the bid's price, no price to win): the exchange sends them, as far as can be seen.
      s.learn('loss', { bidId: 'first', cid: 'c1', crid: 'cr-banner', price: before, cur: 'USD', ts: now, publisher: 'pub-a', source }, before, null, sd, 102);
      // Learned once the wins of its time could have come (a minute at most, before the exchange's first win).
      now += 61_000;
      s.tick();
    }
    const start = s.price(req, imp, match, 'USD', rates, now);
    for (let i = 0; i < n; i++) {
      now += 1000;
      s.price(req, imp, match, 'USD', rates, now);
      s.tick();
    }
    return { before: start, after: s.price(req, imp, match, 'USD', rates, now) };
  }

  it('lossNotices true: bids no notice answered are not losses, even after 10 minutes without a loss notice', () => {
    const sends = silentBids(1, false, 700);
    assert.equal(sends.after, sends.before, `${sends.before} -> ${sends.after}`);
    // The same bids on a learned exchange that never sent a loss notice: losses, the price goes up.
    const learned = silentBids(3, false, 700);
    assert.ok(learned.after > 1.2 * learned.before, `learned: ${learned.before} -> ${learned.after}`);
  });

  it('lossNotices false: bids no notice answered are losses at once, even after a loss notice', () => {
    const none = silentBids(2, true, 300);
    assert.ok(none.after > 1.1 * none.before, `sends none: ${none.before} -> ${none.after}`);
    // A learned exchange that sent a loss notice 5 minutes ago is taken to send them: its unanswered bids teach nothing.
    const learned = silentBids(3, true, 300);
    assert.equal(learned.after, learned.before, `learned: ${learned.before} -> ${learned.after}`);
  });
});
