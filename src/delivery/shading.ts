/**
 * First-price bid shading: bid the price b that maximises the expected surplus (value − b) × P(win | b),
 * where P(win | b) = P(M ≤ b) and M is the price needed to win (the best competing bid or the floor),
 * learned online per segment from what the bidder sees of its own bids. Pure: no I/O, no clock
 * (ShadingService owns the timing, the notices and the sharing; times are passed in).
 *
 * Prices live on a log grid (GRID_SIZE points from GRID_MIN to GRID_MAX USD CPM, ~8 % apart); a
 * segment keeps, decayed in time (half-life `halfLifeMs`) so that recent data counts most:
 *   bids[j]     its bids at grid price j (counted on the bid path),
 *   answered[j] its bids at j that got any notice,
 *   exact[k]    prices to win seen exactly (`${AUCTION_MIN_TO_WIN}`, or a loss's clearing price),
 *   won[j]      wins at bid j without a price to win (M ≤ grid[j]),
 *   lost[j]     losses at bid j without one (M > grid[j]), plus, when `unanswered` is on, the bids
 *               never answered (bids − answered: an exchange that sends no loss notices);
 *               for an exchange that sends loss notices at once and wins late, the bids not answered
 *               (yet) count as wins instead (`lateWins`).
 * The distribution of M (q over GRID_SIZE + 1 bins) is the maximum a posteriori estimate from these
 * censored counts (EM, two O(GRID) iterations per update, à la Turnbull), with a prior: the estimate
 * of the segment's parent (a coarser segment), the coarsest starting from a wide log-normal.
 */

export const GRID_SIZE = 128;
export const GRID_MIN = 0.01;
export const GRID_MAX = 200;
/** Grid prices, USD CPM. */
export const GRID: Float64Array = (() => {
  const g = new Float64Array(GRID_SIZE);
  const step = Math.log(GRID_MAX / GRID_MIN) / (GRID_SIZE - 1);
  for (let j = 0; j < GRID_SIZE; j++) g[j] = GRID_MIN * Math.exp(step * j);
  return g;
})();
const LOG_MIN = Math.log(GRID_MIN);
const LOG_STEP = Math.log(GRID_MAX / GRID_MIN) / (GRID_SIZE - 1);

/** Index of the highest grid price ≤ p (−1 below the grid). */
export function gridBelow(p: number): number {
  if (!(p >= GRID_MIN)) return -1;
  let j = Math.floor((Math.log(p) - LOG_MIN) / LOG_STEP + 1e-9);
  if (j >= GRID_SIZE) j = GRID_SIZE - 1;
  while (j + 1 < GRID_SIZE && GRID[j + 1] <= p) j++;
  while (j >= 0 && GRID[j] > p) j--;
  return j;
}

/**
 * The grid index of a bid as its notice gives it back: a bid of grid price j goes out rounded down to
 * the 4-decimal price grid (onTick) and may come back converted from its currency, a hair below
 * grid[j]; 0.1 % and 0.0001 USD (less than a tenth of the grid's step anywhere) bring it back to j.
 */
export function gridOfBid(bidUsd: number): number {
  return gridBelow(bidUsd * 1.001 + 0.0001);
}

/** Bin of a price to win M: the first k with M ≤ grid[k], GRID_SIZE above the grid. */
export function binOf(m: number): number {
  const j = gridBelow(m);
  if (j >= 0 && GRID[j] >= m) return j;
  return j + 1;
}

export interface ShadingSettings {
  /** Weight of the prior, in observations. */
  readonly priorWeight: number;
  /** Counts halve every this many ms. */
  readonly halfLifeMs: number;
  /**
   * Share of bids placed at random within ±exploreSteps grid steps of the best price, for a segment
   * without prices to win; it decays with the weight w of the prices to win the segment was told as
   * explore × exploreWeight ÷ (exploreWeight + w). Wins and losses alone show the curve at the bid
   * only: without exploration its slope, hence the best price, is the prior's guess.
   */
  readonly explore: number;
  readonly exploreSteps: number;
  readonly exploreWeight: number;
  /** Bids without any notice count as losses (exchanges that send no loss notices), or as wins (`Segment.lateWins`). */
  readonly unanswered: boolean;
}

export const DEFAULT_SHADING: ShadingSettings = { priorWeight: 10, halfLifeMs: 600_000, explore: 0.05, exploreSteps: 5, exploreWeight: 100, unanswered: true };

/** Change detection: the running mean of the standardised surprises (smoothing SURPRISE_ALPHA) beyond ±SURPRISE_LIMIT means the market moved. */
export const SURPRISE_ALPHA = 0.02;
export const SURPRISE_LIMIT = 0.6;
/** What a segment keeps of its counts when its market moved. */
export const MOVED_KEEP = 0.05;
/** Observations after a move (or a segment's start) before the next move can be detected. */
export const SURPRISE_HOLD = 100;

/** A log-normal over the bins: median `median` USD CPM, log-sd `sigma`. */
export function logNormalBins(median: number, sigma: number): Float32Array {
  const q = new Float32Array(GRID_SIZE + 1);
  const cdf = (x: number) => 0.5 * (1 + erf((Math.log(x) - Math.log(median)) / (sigma * Math.SQRT2)));
  let prev = 0;
  for (let k = 0; k < GRID_SIZE; k++) {
    const c = cdf(GRID[k]);
    q[k] = c - prev;
    prev = c;
  }
  q[GRID_SIZE] = 1 - prev;
  return q;
}

function erf(x: number): number {
  // Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): plenty for a prior.
  const s = x < 0 ? -1 : 1;
  const a = Math.abs(x);
  const t = 1 / (1 + 0.3275911 * a);
  const y = 1 - ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
  return s * y;
}

const BINS = GRID_SIZE + 1;
/** Values of one Counts: the five arrays end to end. */
const COUNTS = 4 * GRID_SIZE + BINS;
/** Counts decayed below this are dropped (kept, they would end as subnormal floats, slow to compute with). */
const TINY = 1e-30;

/**
 * The counts one segment learns from (one worker's, or the sum of every worker's), as 32-bit
 * floats: what the sharing sends (toCompact), and 7 significant digits for decayed counts that
 * weigh observations; the estimate sums them in double precision (updateSegment).
 */
export class Counts {
  /** One allocation for the five arrays (views of it): thousands of segments, little garbage. */
  private readonly all = new Float32Array(COUNTS);
  readonly bids = this.all.subarray(0, GRID_SIZE);
  readonly answered = this.all.subarray(GRID_SIZE, 2 * GRID_SIZE);
  readonly exact = this.all.subarray(2 * GRID_SIZE, 2 * GRID_SIZE + BINS);
  readonly won = this.all.subarray(2 * GRID_SIZE + BINS, 3 * GRID_SIZE + BINS);
  readonly lost = this.all.subarray(3 * GRID_SIZE + BINS, 4 * GRID_SIZE + BINS);

  scale(f: number): void {
    const a = this.all;
    if (f < TINY) a.fill(0);
    else
      for (let i = 0; i < a.length; i++) {
        const v = a[i] * f;
        a[i] = v < TINY ? 0 : v;
      }
  }

  /** Adds these counts to `out` (COUNTS values, the five arrays end to end, as `all`). */
  addTo(out: Float64Array): void {
    const a = this.all;
    for (let i = 0; i < a.length; i++) out[i] += a[i];
  }

  /** Takes these counts from `out` (as addTo), none below 0: held counts are part of own counts, decayed alike but for rounding. */
  takeFrom(out: Float64Array): void {
    const a = this.all;
    for (let i = 0; i < a.length; i++) {
      const v = out[i] - a[i];
      out[i] = v > 0 ? v : 0;
    }
  }

  /** Compact form for sharing: 6 bytes per non-zero count (array, bin, value as a 32-bit float), base64. */
  toCompact(): string {
    const arrays = [this.bids, this.answered, this.exact, this.won, this.lost];
    let n = 0;
    for (const a of arrays) for (let i = 0; i < a.length; i++) if (a[i] >= 0.0005) n++;
    const buf = Buffer.allocUnsafe(6 * n);
    let o = 0;
    arrays.forEach((a, ai) => {
      for (let i = 0; i < a.length; i++) {
        if (!(a[i] >= 0.0005)) continue;
        buf[o] = ai;
        buf[o + 1] = i;
        buf.writeFloatLE(a[i], o + 2);
        o += 6;
      }
    });
    return buf.toString('base64');
  }

  /**
   * Adds the counts of `toCompact`'s text from `from` on (a shared value's counts follow its time),
   * scaled by `f`. Decoded in place, 8 base64 characters to an entry, allocating nothing (a sync
   * reads thousands a turn); entries of no known array or bin, or not finite and positive, are
   * skipped, and a text stops at its first character that is not base64.
   */
  addCompact(text: string, f = 1, from = 0): void {
    const a = this.all;
    for (let i = from; i + 8 <= text.length; i += 8) {
      let hi = 0;
      let lo = 0;
      for (let c = 0; c < 4; c++) {
        const x = text.charCodeAt(i + c);
        const y = text.charCodeAt(i + 4 + c);
        const dx = x < 128 ? BASE64[x] : -1;
        const dy = y < 128 ? BASE64[y] : -1;
        if (dx < 0 || dy < 0) return;
        hi = (hi << 6) | dx;
        lo = (lo << 6) | dy;
      }
      // 48 bits: array, bin, then the count as a little-endian 32-bit float.
      const array = hi >>> 16;
      const bin = (hi >>> 8) & 0xff;
      FLOAT.setUint32(0, (((hi & 0xff) << 24) | lo) >>> 0);
      const v = FLOAT.getFloat32(0, true);
      if (array < 5 && bin < ARRAY_LENGTH[array] && v > 0 && v < 1e12) a[ARRAY_START[array] + bin] += v * f;
    }
  }
}

/** Where each of the five arrays starts in a Counts' values, and its length (addCompact). */
const ARRAY_START = [0, GRID_SIZE, 2 * GRID_SIZE, 2 * GRID_SIZE + BINS, 3 * GRID_SIZE + BINS];
const ARRAY_LENGTH = [GRID_SIZE, GRID_SIZE, BINS, GRID_SIZE, GRID_SIZE];
/** Four bytes, read as the little-endian 32-bit float toCompact writes (addCompact). */
const FLOAT = new DataView(new ArrayBuffer(4));
/** The value of each base64 character (standard and URL-safe alphabets, as Buffer reads them), −1 for others. */
const BASE64 = (() => {
  const t = new Int8Array(128).fill(-1);
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  for (let i = 0; i < 64; i++) t[alphabet.charCodeAt(i)] = i;
  t['-'.charCodeAt(0)] = 62;
  t['_'.charCodeAt(0)] = 63;
  return t;
})();

/** One segment: its own counts (this worker's), the others' (shared), and the estimate. */
export class Segment {
  readonly own = new Counts();
  others: Counts | null = null;
  /** Estimated distribution of M over the bins, and its cumulative form at the grid prices (32-bit floats, as the counts). */
  readonly q: Float32Array;
  readonly cdf = new Float32Array(GRID_SIZE);
  /** Observations in all (decayed), at the last update: how far the segment trusts its own data. */
  weight = 0;
  /** Of the weight, prices to win seen exactly: they show the whole curve, where wins and losses show it at the bid only. */
  exactWeight = 0;
  /** When `own` was last decayed (ms; NaN: never). */
  at = NaN;
  /** Change detection: running mean of the standardised surprises, and observations since the last move. */
  surprise = 0;
  since = 0;
  /** Moves detected, and when the last was (ms, the service's clock; ShadingService sets it). */
  moves = 0;
  movedAt = -Infinity;
  /** Its source sends no loss notices: bids never answered count as losses (with the settings' `unanswered`). */
  silent = false;
  /** Its source sends loss notices at once and its wins late (bills only): bids not answered (yet) count as wins (with the settings' `unanswered`). */
  lateWins = false;
  /** Waiting for an update because of its bids (ShadingService). */
  queued = false;
  /** The other workers' counts being read by a sync (swapped with `others` at its end), and that sync's mark. */
  othersNext: Counts | null = null;
  syncMark = 0;
  /**
   * Of its own counts, those held out of its estimate until the other workers' shared state is as
   * recent (shading-held.ts; null until it first holds one), and how many events they are.
   */
  held: Counts | null = null;
  heldEvents = 0;
  /** Learned something since it was last shared (ShadingService.sync), and the bytes it holds in the shared state. */
  changed = false;
  sharedBytes = 0;

  /** `parent`: the coarser segment whose estimate is this one's prior (null: the base prior). */
  constructor(
    prior: Float32Array,
    readonly parent: Segment | null = null,
    readonly level = 0,
  ) {
    this.q = Float32Array.from(prior);
    this.fillCdf();
  }

  fillCdf(): void {
    let c = 0;
    for (let k = 0; k < GRID_SIZE; k++) {
      c += this.q[k];
      this.cdf[k] = c;
    }
  }

  /**
   * Change detection, before an observation joins the counts: how surprising it is under the current
   * estimate (standardised: mean 0, variance 1 if the estimate is right), smoothed; past the limit
   * the market moved and the segment keeps MOVED_KEEP of what it knew. `exact`: a price to win's bin
   * (−1: none); `j`: the bid's grid index; `won`: the outcome (without a price to win).
   */
  observe(exact: number, j: number, won: boolean): boolean {
    let z: number;
    if (exact >= 0) {
      const below = exact > 0 ? this.cdf[exact - 1] : 0;
      // Signed as a win's: positive when the price to win is lower than the estimate expects.
      z = (0.5 - below - this.q[exact] / 2) * 3.4641;
    } else {
      const f = Math.min(0.98, Math.max(0.02, this.cdf[j]));
      z = won ? Math.sqrt((1 - f) / f) : -Math.sqrt(f / (1 - f));
    }
    this.surprise += SURPRISE_ALPHA * (Math.max(-3, Math.min(3, z)) - this.surprise);
    this.since++;
    if (this.since < SURPRISE_HOLD || Math.abs(this.surprise) < SURPRISE_LIMIT || this.weight <= 0) return false;
    this.own.scale(MOVED_KEEP);
    this.others?.scale(MOVED_KEEP);
    this.held?.scale(MOVED_KEEP);
    this.surprise = 0;
    this.since = 0;
    this.moves++;
    return true;
  }
}

/** Scratch space of the EM step (one per estimator): a segment's own and shared counts summed in double precision, the five arrays as in Counts. */
const sum = new Float64Array(COUNTS);
const sumBids = sum.subarray(0, GRID_SIZE);
const sumAnswered = sum.subarray(GRID_SIZE, 2 * GRID_SIZE);
const sumExact = sum.subarray(2 * GRID_SIZE, 2 * GRID_SIZE + BINS);
const sumWon = sum.subarray(2 * GRID_SIZE + BINS, 3 * GRID_SIZE + BINS);
const sumLost = sum.subarray(3 * GRID_SIZE + BINS, 4 * GRID_SIZE + BINS);
const expected = new Float64Array(BINS);
const scratchLost = new Float64Array(GRID_SIZE);
const scratchWon = new Float64Array(GRID_SIZE);
const scratchQ = new Float64Array(BINS);
const scratchCdf = new Float64Array(GRID_SIZE);
const scratchAbove = new Float64Array(GRID_SIZE);

/**
 * One update of a segment: decay its counts for the time since the last update, then EM
 * iterations of the MAP estimate of q under `prior` (weight `s.priorWeight`).
 */
export function updateSegment(seg: Segment, prior: Float32Array, s: ShadingSettings, now: number, iterations = 2): void {
  if (Number.isNaN(seg.at)) seg.at = now;
  else if (now > seg.at) {
    const f = Math.pow(0.5, (now - seg.at) / s.halfLifeMs);
    seg.own.scale(f);
    seg.held?.scale(f);
    seg.at = now;
  }
  sum.fill(0);
  seg.own.addTo(sum);
  if (seg.others !== null) seg.others.addTo(sum);
  if (seg.held !== null && seg.heldEvents > 0) seg.held.takeFrom(sum);
  let weight = 0;
  for (let k = 0; k < BINS; k++) weight += sumExact[k];
  seg.exactWeight = weight;
  const lostAt = scratchLost;
  const wonAt = scratchWon;
  for (let j = 0; j < GRID_SIZE; j++) {
    const unanswered = s.unanswered && (seg.silent || seg.lateWins) ? Math.max(0, sumBids[j] - sumAnswered[j]) : 0;
    lostAt[j] = sumLost[j] + (seg.silent ? unanswered : 0);
    wonAt[j] = sumWon[j] + (seg.silent ? 0 : unanswered);
    weight += wonAt[j] + lostAt[j];
  }
  seg.weight = weight;
  // The iterations in double precision (q, its cumulative form and its upper tail, summed from the
  // top: 1 − Q from a sum of 32-bit values would lose a tail below 1e-7), stored in the segment after.
  const q = scratchQ;
  for (let k = 0; k < BINS; k++) q[k] = seg.q[k];
  const Q = scratchCdf;
  const above = scratchAbove;
  for (let it = 0; it < iterations; it++) {
    // c_k = exact_k + q_k Σ_{j ≥ k} won_j / Q_j + q_k Σ_{j < k} lost_j / (1 − Q_j) + prior weight × prior_k
    let cum = 0;
    for (let k = 0; k < GRID_SIZE; k++) {
      cum += q[k];
      Q[k] = cum;
    }
    let tail = q[GRID_SIZE];
    for (let k = GRID_SIZE - 1; k >= 0; k--) {
      above[k] = tail;
      tail += q[k];
    }
    let suffix = 0;
    for (let k = GRID_SIZE; k >= 0; k--) {
      if (k < GRID_SIZE && wonAt[k] > 0) suffix += wonAt[k] / Math.max(Q[k], 1e-12);
      expected[k] = suffix;
    }
    let prefix = 0;
    let total = 0;
    for (let k = 0; k < BINS; k++) {
      const e = sumExact[k] + q[k] * (expected[k] + prefix) + s.priorWeight * prior[k];
      expected[k] = e;
      total += e;
      if (k < GRID_SIZE && lostAt[k] > 0) prefix += lostAt[k] / Math.max(above[k], 1e-12);
    }
    for (let k = 0; k < BINS; k++) q[k] = expected[k] / total;
  }
  seg.q.set(q);
  seg.fillCdf();
}

/**
 * The price that maximises (value − b) × P(M ≤ b) over the grid prices in [floor, value], and the
 * floor itself (`pressure`: see pacer.ts); `draw` in [0, 1): a draw that, below `explore`, moves the bid up to
 * exploreSteps grid steps either way (within [floor, value]). Prices in USD CPM.
 *
 * Between grid points the best price is the vertex of a parabola. With `round` (and a draw below 1)
 * that price is bid as one of the two grid prices either side of it, the upper with the probability
 * of its distance from the lower (in log price; the rest of the draw above `explore` decides): the
 * estimate's counts are kept at grid prices, and a win or loss at a grid price says exactly where
 * the price to beat was, where one between two grid prices, counted at either, would bias the
 * estimate (by up to a grid step, 8 %) for a segment that learns from wins and losses alone. It
 * costs about 0.5 % of the surplus where the estimate is right.
 */
export function bestBid(cdf: Float32Array, value: number, floor: number, s: ShadingSettings, draw = 1, pressure = 0, explore = s.explore, round = false): number {
  const lo = floor > 0 ? floor : 0;
  if (value <= lo) return value;
  const jv = gridBelow(value);
  const jf = gridBelow(lo);
  // Under spend pressure p (pacer.ts), the objective is (value − (1 − p) b) × P(win | b); p = −λ < 0 when the budget binds.
  const keep = 1 - pressure;
  let best = lo;
  let bestJ = jf;
  let bestGain = jf >= 0 ? (value - keep * lo) * cdf[jf] : 0;
  for (let j = jf + 1; j <= jv; j++) {
    const gain = (value - keep * GRID[j]) * cdf[j];
    if (gain > bestGain) {
      bestGain = gain;
      best = GRID[j];
      bestJ = j;
    }
  }
  // Nothing the estimate says can win: bid the value, which at least teaches something.
  if (bestGain <= 0) return value;
  if (draw < explore && s.exploreSteps > 0) {
    const step = Math.round(((draw / explore) * 2 - 1) * s.exploreSteps);
    const j = bestJ + (step === 0 ? 1 : step);
    if (j > jf && j <= jv) return GRID[j];
    if (j <= jf) return lo;
    return value;
  }
  // Between grid points: the vertex of the parabola through the gains at the best point and its two
  // neighbours (in log price), when both are inside [floor, value]; the grid alone is 8 % coarse.
  if (bestJ > jf && bestJ < jv) {
    const g0 = (value - keep * GRID[bestJ - 1]) * cdf[bestJ - 1];
    const g2 = (value - keep * GRID[bestJ + 1]) * cdf[bestJ + 1];
    const curve = g0 - 2 * bestGain + g2;
    if (curve < 0) {
      const x = Math.max(-0.5, Math.min(0.5, (0.5 * (g0 - g2)) / curve));
      if (round && draw < 1) {
        // The grid price below the vertex (bestJ or the one before), or the one above it.
        const below = x < 0 ? bestJ - 1 : bestJ;
        const t = x < 0 ? 1 + x : x;
        const u = explore < 1 ? (draw - Math.max(0, explore)) / (1 - Math.max(0, explore)) : 0;
        const g = GRID[u < t ? below + 1 : below];
        return g < lo ? lo : g > value ? value : g;
      }
      const b = best * Math.exp(x * LOG_STEP);
      return b < lo ? lo : b > value ? value : b;
    }
  }
  return best;
}

/**
 * The exact optimum for a known market (the simulator's oracle, and the tests' reference):
 * maximises (value − (1 − pressure) b) × cdf(b) over b in [floor, value] by a fine scan then golden-section search
 * (`pressure` as bestBid's: the pacing controller's, which makes the oracle budget-aware).
 */
export function oracleBid(cdf: (b: number) => number, value: number, floor: number, pressure = 0): number {
  const lo = Math.max(0, floor);
  if (value <= lo) return value;
  const keep = 1 - pressure;
  const f = (b: number) => (value - keep * b) * cdf(b);
  const n = 2000;
  let bestI = 0;
  let bestV = -1;
  for (let i = 0; i <= n; i++) {
    const b = lo + ((value - lo) * i) / n;
    const v = f(b);
    if (v > bestV) {
      bestV = v;
      bestI = i;
    }
  }
  let a = lo + ((value - lo) * Math.max(0, bestI - 1)) / n;
  let b = lo + ((value - lo) * Math.min(n, bestI + 1)) / n;
  const r = (Math.sqrt(5) - 1) / 2;
  for (let it = 0; it < 80; it++) {
    const c = b - r * (b - a);
    const d = a + r * (b - a);
    if (f(c) >= f(d)) b = d;
    else a = c;
  }
  const mid = (a + b) / 2;
  return f(mid) >= f(lo) ? mid : lo;
}

/** The key under which a ContributionCap counts contributors beyond its `maxKeys`, together. */
const OVERFLOW = '\u0000overflow';

/**
 * Bounds any one contributor's share of a shared estimate (a publisher's or an exchange's share of
 * what every segment without data of its own bids from): a contribution is allowed while the
 * contributor's weight, this one included, is at most `share` of all the allowed contributions plus
 * `base` (the estimate's prior weight), all decaying with half-life `halfLifeMs`. A lone contributor
 * thus moves the estimate by at most share ÷ (1 − share) × base observations' worth. Contributors
 * beyond `maxKeys` are counted together as one. Values are kept in the units of time `epoch` (a
 * contribution at time t weighs 2^((t − epoch) / halfLife)), so nothing is decayed one by one.
 */
export class ContributionCap {
  private readonly weights = new Map<string, number>();
  private total = 0;
  private epoch = NaN;

  constructor(
    readonly share: number,
    readonly base: number,
    readonly halfLifeMs: number,
    readonly maxKeys = 10_000,
  ) {}

  /** The weight of a contribution at `now` in epoch units (rescales everything when it grows large). */
  private unit(now: number): number {
    if (Number.isNaN(this.epoch)) this.epoch = now;
    let g = Math.pow(2, (now - this.epoch) / this.halfLifeMs);
    if (g > 1e6 || g < 1e-6) {
      for (const [k, v] of this.weights) this.weights.set(k, v / g);
      this.total /= g;
      this.epoch = now;
      g = 1;
    }
    return g;
  }

  private keyOf(key: string): string {
    return this.weights.has(key) || this.weights.size < this.maxKeys ? key : OVERFLOW;
  }

  /** Whether one more contribution of `key` at `now` stays within the bound. */
  allows(key: string, now: number): boolean {
    const g = this.unit(now);
    const mine = (this.weights.get(this.keyOf(key)) ?? 0) + g;
    return mine <= this.share * (this.total + g + this.base * g);
  }

  add(key: string, now: number): void {
    const g = this.unit(now);
    const k = this.keyOf(key);
    this.weights.set(k, (this.weights.get(k) ?? 0) + g);
    this.total += g;
  }
}

/**
 * Notices learned from per source (exchange index 0-63) and second: a token bucket per source,
 * `perSecond` tokens a second, holding at most one second's worth.
 */
export class SourceLimiter {
  private readonly tokens = new Float64Array(64);
  private readonly at = new Float64Array(64).fill(NaN);

  constructor(readonly perSecond: number) {}

  take(source: number, now: number): boolean {
    const i = Number.isInteger(source) && source >= 0 && source < 64 ? source : 63;
    const last = this.at[i];
    this.tokens[i] = Number.isNaN(last) ? this.perSecond : Math.min(this.perSecond, this.tokens[i] + (Math.max(0, now - last) * this.perSecond) / 1000);
    this.at[i] = now;
    if (this.tokens[i] < 1) return false;
    this.tokens[i] -= 1;
    return true;
  }
}

/**
 * A notice that cannot be true: a loss whose price to win is below our bid (we would have won), or a
 * win whose price to win is above it (we could not have). A cent and 0.1 % of the bid are allowed
 * for the exchange's rounding and currency conversion. Prices in one currency.
 */
export function impossibleNotice(event: 'win' | 'bill' | 'loss', bid: number, minToWin: number): boolean {
  const tolerance = 0.01 + 0.001 * bid;
  return event === 'loss' ? minToWin < bid - tolerance : minToWin > bid + tolerance;
}
