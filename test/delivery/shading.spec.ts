/**
 * The shading estimator on known markets (a seeded random source, so every run is the same): it
 * learns P(win | price) from wins and losses alone, or from prices to win, and bids near the
 * optimum of expected surplus.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bestBid, DEFAULT_SHADING, GRID, gridBelow, logNormalBins, oracleBid, Segment, updateSegment } from '../../src/delivery/shading';

/** mulberry32: a small seeded generator. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const S = DEFAULT_SHADING;
const PRIOR = logNormalBins(1, 1.5);

/** Virtual time of the auctions, ms: 35 a second. */
let clock = 0;
const GAP_MS = 1000 / 35;

/**
 * Bids `n` times at value `v` into a market drawing M from `market`, 35 auctions a second; learns
 * from each outcome (change detection included), an update every 100 ms; returns the last 500 bids'
 * mean and the median of the best price per virtual second.
 */
function play(seg: Segment, n: number, v: number, market: () => number, rand: () => number, opts: { minToWin?: boolean } = {}): { meanBid: number; surplus: number; medians: number[] } {
  let sumBid = 0;
  let surplus = 0;
  let counted = 0;
  const medians: number[] = [];
  let second: number[] = [];
  let lastUpdate = clock;
  for (let i = 0; i < n; i++) {
    clock += GAP_MS;
    const b = bestBid(seg.weight > 0 ? seg.cdf : PRIOR_CDF, v, 0, S, rand());
    const m = market();
    const j = gridBelow(b);
    seg.own.bids[j]++;
    seg.own.answered[j]++;
    const exact = opts.minToWin ? Math.min(GRID.length, gridBelow(m) + 1) : -1;
    seg.observe(exact, j, m <= GRID[j]);
    if (exact >= 0) seg.own.exact[exact]++;
    else if (m <= GRID[j]) seg.own.won[j]++;
    else seg.own.lost[j]++;
    if (clock - lastUpdate >= 100) {
      updateSegment(seg, PRIOR, S, clock);
      lastUpdate = clock;
    }
    if (m <= b) surplus += v - b;
    second.push(bestBid(seg.weight > 0 ? seg.cdf : PRIOR_CDF, v, 0, S, 1));
    if (second.length === 35) {
      medians.push(second.sort((x, y) => x - y)[17]);
      second = [];
    }
    if (i >= n - 500) {
      sumBid += b;
      counted++;
    }
  }
  return { meanBid: sumBid / counted, surplus, medians };
}

const PRIOR_CDF = new Segment(PRIOR).cdf;

function erf(x: number): number {
  const sign = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  return sign * (1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a));
}
const uniform = (lo: number, hi: number, r: () => number) => () => lo + (hi - lo) * r();

describe('oracle', () => {
  it('is exact for a uniform market', () => {
    // M ~ U[0, 1], value 1: (1 − b) b is largest at 0.5; with a floor of 0.6, the floor.
    const cdf = (b: number) => Math.min(1, Math.max(0, b));
    assert.ok(Math.abs(oracleBid(cdf, 1, 0) - 0.5) < 1e-6);
    assert.ok(Math.abs(oracleBid(cdf, 1, 0.6) - 0.6) < 1e-9);
    // M ~ U[0.5, 1.5], value 2: (2 − b)(b − 0.5) is largest at 1.25.
    assert.ok(Math.abs(oracleBid((b) => Math.min(1, Math.max(0, b - 0.5)), 2, 0) - 1.25) < 1e-6);
  });
});

describe('shading estimator', () => {
  it('a constant market, wins and losses only: bids settle near the optimum and earn most of its surplus', () => {
    const r = rng(1);
    const seg = new Segment(PRIOR);
    const market = uniform(0.5, 1.5, r);
    const got = play(seg, 4000, 2, market, r);
    assert.ok(Math.abs(got.meanBid - 1.25) < 0.15, `mean bid ${got.meanBid}, optimum 1.25`);
    // The oracle's expected surplus per bid: (2 − 1.25) × 0.75.
    const oracle = 4000 * 0.75 * 0.75;
    assert.ok(got.surplus > 0.9 * oracle, `surplus ${got.surplus} against the oracle's ${oracle}`);
  });

  it('a market that shifts at noon: a few hundred notices move the bids to the new optimum', () => {
    const r = rng(2);
    const seg = new Segment(PRIOR);
    play(seg, 3000, 2, uniform(0.5, 1.5, r), r);
    const before = bestBid(seg.cdf, 2, 0, S, 1);
    assert.ok(Math.abs(before - 1.25) < 0.2, `morning bid ${before}`);
    // After noon M ~ U[0.1, 0.6]: 0.6 wins every auction.
    const after = play(seg, 600, 2, uniform(0.1, 0.6, r), r, { minToWin: true });
    const now = bestBid(seg.cdf, 2, 0, S, 1);
    assert.ok(now < 0.75 && now >= 0.55, `afternoon bid ${now} (mean of the last 500: ${after.meanBid})`);
  });

  for (const minToWin of [true, false]) {
    // Wins and losses alone show the curve at the bids only: the estimate's noise is about a grid step (8 %).
    const bound = minToWin ? 0.05 : 0.08;
    it(`after the market moves up (median 0.9 to 1.5), the median bid is within ${100 * bound} % of the new optimum within 60 s at 35 auctions/s (${minToWin ? 'prices to win told' : 'wins and losses only'})`, () => {
      const r = rng(minToWin ? 4 : 5);
      const logNormal = (median: number) => () => median * Math.exp(0.3 * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()));
      const cdf = (median: number) => (b: number) => 0.5 * (1 + erf(Math.log(b / median) / (0.3 * Math.SQRT2)));
      const seg = new Segment(PRIOR);
      // Ten minutes of the old market.
      play(seg, 35 * 600, 2, logNormal(0.9), r, { minToWin });
      const optimum = oracleBid(cdf(1.5), 2, 0);
      const { medians } = play(seg, 35 * 90, 2, logNormal(1.5), r, { minToWin });
      const at60 = medians.slice(55, 65);
      for (const m of at60) assert.ok(Math.abs(m / optimum - 1) <= bound, `medians 55-65 s after the move ${at60.map((x) => x.toFixed(3)).join(' ')}, optimum ${optimum.toFixed(3)}`);
    });
  }

  it('a segment without data bids from its prior, never below the floor nor above the value', () => {
    const r = rng(3);
    const pool = new Segment(PRIOR);
    play(pool, 3000, 2, uniform(0.5, 1.5, r), r);
    // A new segment's estimate starts as the pool's: it bids the pool's optimum.
    const fresh = new Segment(pool.q);
    assert.equal(bestBid(fresh.cdf, 2, 0, S, 1), bestBid(pool.cdf, 2, 0, S, 1));
    // The wide prior alone: some price in [floor, value], the floor respected.
    for (const [v, f] of [[2, 0], [2, 1.7], [0.5, 0.1], [3, 2.99]]) {
      for (const d of [0, 0.01, 0.03, 0.5, 1]) {
        const b = bestBid(PRIOR_CDF, v, f, S, d);
        assert.ok(b >= f && b <= v, `value ${v}, floor ${f}, draw ${d}: bid ${b}`);
      }
    }
    // Exploration stays within its steps of the best price.
    const best = bestBid(pool.cdf, 2, 0, S, 1);
    for (let d = 0; d < S.explore; d += S.explore / 10) {
      const b = bestBid(pool.cdf, 2, 0, S, d);
      assert.ok(b / best < 1.09 ** 5.5 && best / b < 1.09 ** 5.5, `explored ${b} around ${best}`);
    }
  });
});
