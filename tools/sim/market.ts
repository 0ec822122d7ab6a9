/**
 * The simulator's synthetic market: seeded, so that a seed replays a run exactly. Per segment, the
 * price to beat is the best of 1 + Poisson(λ) competing bids, each log-normal (median, σ), and the
 * segment's floor. Its distribution is known in closed form, which is what the oracle bids from:
 *   P(best competitor ≤ b) = F(b) · exp(λ (F(b) − 1)),  F the log-normal CDF.
 */

export interface SegmentShape {
  readonly publisher: string;
  readonly w: number;
  readonly h: number;
  readonly deviceType: number;
  /** Share of requests (relative). */
  readonly weight: number;
  /** USD CPM. */
  readonly floor: number;
  readonly median: number;
  readonly sigma: number;
  /** Mean number of competitors beyond the first. */
  readonly lambda: number;
  /** Floors drawn uniformly in [floor, floorTo] per auction (default: `floor` always). */
  readonly floorTo?: number;
  /** Competition tied to the floor: each competitor's median is this × the auction's floor (instead of `median`). */
  readonly floorTied?: number;
}

export interface MarketShape {
  readonly name: string;
  readonly auction: 'first' | 'second';
  readonly segments: readonly SegmentShape[];
  /** Share of win and loss notices that carry `${AUCTION_MIN_TO_WIN}`. */
  readonly minToWinShare: number;
  /** The competitors' medians are multiplied by `factor` from `at` (a share of the run) on. */
  readonly shift?: { readonly at: number; readonly factor: number };
  /**
   * What the exchange sends: win notices (default true), loss notices (default true), a loss's
   * clearing price in `${AUCTION_PRICE}` (default false: empty), the bill's delay range in ms
   * (default 500-3000).
   */
  readonly notices?: { readonly win?: boolean; readonly loss?: boolean; readonly lossPrice?: boolean; readonly billDelayMs?: readonly [number, number] };
  /** A short run at a constant rate instead of days of diurnal traffic (the markets of issue-shaped checks): seconds, auctions a second. */
  readonly run?: { readonly seconds: number; readonly perSecond: number };
}

/** mulberry32: small, fast, seeded, good enough for a simulation. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function erf(x: number): number {
  const s = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  return s * (1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a));
}

/** One competitor's CDF. */
export function logNormalCdf(b: number, median: number, sigma: number): number {
  if (b <= 0) return 0;
  return 0.5 * (1 + erf(Math.log(b / median) / (sigma * Math.SQRT2)));
}

/** The competitors' median of an auction at `floor`. */
export function medianAt(s: SegmentShape, floor: number): number {
  return s.floorTied !== undefined ? s.floorTied * floor : s.median;
}

/** P(best competing bid ≤ b) for a segment, at an auction's floor. */
export function competitionCdf(s: SegmentShape, b: number, floor = s.floor): number {
  const f = logNormalCdf(b, medianAt(s, floor), s.sigma);
  return f * Math.exp(s.lambda * (f - 1));
}

function normal(r: () => number): number {
  // Box–Muller; 1 − r() keeps the log's argument in (0, 1].
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

function poisson(lambda: number, r: () => number): number {
  const l = Math.exp(-lambda);
  let k = 0;
  let p = r();
  while (p > l) {
    k++;
    p *= r();
  }
  return k;
}

/** The best competing bid of one auction at `floor`. */
export function drawCompetition(s: SegmentShape, r: () => number, floor = s.floor): number {
  const n = 1 + poisson(s.lambda, r);
  const median = medianAt(s, floor);
  let best = 0;
  for (let i = 0; i < n; i++) {
    const b = median * Math.exp(s.sigma * normal(r));
    if (b > best) best = b;
  }
  return best;
}

/** Three first-price market shapes (and a second-price one) of the report. */
export const MARKETS: Record<string, MarketShape> = {
  narrow: {
    name: 'narrow: 2-3 competitors close to 0.8, low floors, prices to win always told',
    auction: 'first',
    minToWinShare: 1,
    segments: [
      { publisher: 'pub-a', w: 300, h: 250, deviceType: 2, weight: 3, floor: 0.1, median: 0.8, sigma: 0.3, lambda: 1.5 },
      { publisher: 'pub-b', w: 300, h: 250, deviceType: 4, weight: 2, floor: 0.2, median: 0.6, sigma: 0.3, lambda: 1 },
      { publisher: 'pub-a', w: 728, h: 90, deviceType: 2, weight: 3, floor: 0.1, median: 0.5, sigma: 0.35, lambda: 2 },
      { publisher: 'pub-c', w: 728, h: 90, deviceType: 4, weight: 2, floor: 0.05, median: 0.4, sigma: 0.3, lambda: 1 },
    ],
  },
  wide: {
    name: 'wide: one or two widely spread competitors, high floors, only wins and losses told',
    auction: 'first',
    minToWinShare: 0,
    segments: [
      { publisher: 'pub-a', w: 300, h: 250, deviceType: 2, weight: 3, floor: 0.6, median: 0.7, sigma: 0.8, lambda: 0.5 },
      { publisher: 'pub-b', w: 300, h: 250, deviceType: 4, weight: 2, floor: 0.4, median: 0.9, sigma: 0.7, lambda: 0.5 },
      { publisher: 'pub-a', w: 728, h: 90, deviceType: 2, weight: 3, floor: 0.3, median: 0.5, sigma: 0.8, lambda: 0.3 },
      { publisher: 'pub-c', w: 728, h: 90, deviceType: 4, weight: 2, floor: 0.5, median: 0.3, sigma: 0.9, lambda: 0.3 },
    ],
  },
  crowded: {
    name: 'crowded: 5-8 competitors, half the notices with prices to win',
    auction: 'first',
    minToWinShare: 0.5,
    segments: [
      { publisher: 'pub-a', w: 300, h: 250, deviceType: 2, weight: 3, floor: 0.2, median: 0.5, sigma: 0.5, lambda: 5 },
      { publisher: 'pub-b', w: 300, h: 250, deviceType: 4, weight: 2, floor: 0.2, median: 0.45, sigma: 0.5, lambda: 6 },
      { publisher: 'pub-a', w: 728, h: 90, deviceType: 2, weight: 3, floor: 0.1, median: 0.3, sigma: 0.5, lambda: 5 },
      { publisher: 'pub-c', w: 728, h: 90, deviceType: 4, weight: 2, floor: 0.1, median: 0.25, sigma: 0.6, lambda: 6 },
    ],
  },
  second: {
    name: 'second price: the narrow market as a second-price auction (every strategy bids the value)',
    auction: 'second',
    minToWinShare: 0,
    segments: [
      { publisher: 'pub-a', w: 300, h: 250, deviceType: 2, weight: 3, floor: 0.1, median: 0.8, sigma: 0.3, lambda: 1.5 },
      { publisher: 'pub-b', w: 300, h: 250, deviceType: 4, weight: 2, floor: 0.2, median: 0.6, sigma: 0.3, lambda: 1 },
      { publisher: 'pub-a', w: 728, h: 90, deviceType: 2, weight: 3, floor: 0.1, median: 0.5, sigma: 0.35, lambda: 2 },
      { publisher: 'pub-c', w: 728, h: 90, deviceType: 4, weight: 2, floor: 0.05, median: 0.4, sigma: 0.3, lambda: 1 },
    ],
  },
};

/** The markets of the table: 35 auctions a second for 150 s, one log-normal competitor, one publisher. */
const ONE = { publisher: 'pub-a', w: 300, h: 250, deviceType: 2, weight: 1, floor: 0.05, median: 0.9, sigma: 0.3, lambda: 0 } as const;
const SHORT = { seconds: 150, perSecond: 35 } as const;
Object.assign(MARKETS, {
  lognormal: { name: 'log-normal: one competitor (median 0.9), every notice, prices to win on half', auction: 'first', minToWinShare: 0.5, run: SHORT, segments: [ONE] },
  shift: {
    name: 'shift: the competitor\'s median jumps from 0.9 to 1.5 half way, every notice, prices to win on half',
    auction: 'first',
    minToWinShare: 0.5,
    run: SHORT,
    shift: { at: 0.5, factor: 1.5 / 0.9 },
    segments: [ONE],
  },
  'floor-tied': {
    name: 'floor-tied: floors U(0.2, 1.4), the competitor at 1.25 × the floor (σ 0.25), every notice, prices to win on half',
    auction: 'first',
    minToWinShare: 0.5,
    run: SHORT,
    segments: [{ ...ONE, floor: 0.2, floorTo: 1.4, floorTied: 1.25, sigma: 0.25 }],
  },
  'wins-only': { name: 'wins-only: no loss notices, no prices to win', auction: 'first', minToWinShare: 0, run: SHORT, notices: { loss: false }, segments: [ONE] },
  'priced-loss': { name: 'priced-loss: loss notices carry the clearing price, no prices to win', auction: 'first', minToWinShare: 0, run: SHORT, notices: { lossPrice: true }, segments: [ONE] },
  'late-bills': { name: 'late-bills: no win notices, bills 20-60 s late, loss notices', auction: 'first', minToWinShare: 0, run: SHORT, notices: { win: false, billDelayMs: [20_000, 60_000] }, segments: [ONE] },
} satisfies Record<string, MarketShape>);

/** Relative traffic by hour of the UTC day: a night trough and an evening peak (mean 1). */
export function diurnal(hour: number): number {
  return 1 + 0.5 * Math.sin((2 * Math.PI * (hour - 14)) / 24);
}
