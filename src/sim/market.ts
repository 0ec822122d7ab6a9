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
}

export interface MarketShape {
  readonly name: string;
  readonly auction: 'first' | 'second';
  readonly segments: readonly SegmentShape[];
  /** Share of win and loss notices that carry `${AUCTION_MIN_TO_WIN}`. */
  readonly minToWinShare: number;
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

/** P(best competing bid ≤ b) for a segment. */
export function competitionCdf(s: SegmentShape, b: number): number {
  const f = logNormalCdf(b, s.median, s.sigma);
  return f * Math.exp(s.lambda * (f - 1));
}

/** P(win | bid b): the floor, then the competition (ties win). */
export function winProbability(s: SegmentShape, b: number): number {
  return b < s.floor ? 0 : competitionCdf(s, b);
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

/** The best competing bid of one auction. */
export function drawCompetition(s: SegmentShape, r: () => number): number {
  const n = 1 + poisson(s.lambda, r);
  let best = 0;
  for (let i = 0; i < n; i++) {
    const b = s.median * Math.exp(s.sigma * normal(r));
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

/** Relative traffic by hour of the UTC day: a night trough and an evening peak (mean 1). */
export function diurnal(hour: number): number {
  return 1 + 0.5 * Math.sin((2 * Math.PI * (hour - 14)) / 24);
}
