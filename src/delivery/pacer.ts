/**
 * Even pacing of one campaign's daily budget on one worker: the share of eligible requests the
 * campaign enters (a random draw per request on the bid path, `share` in [minShare, 1]), set at
 * every budget refresh from what Redis says was spent (by every worker and host).
 *
 * Target: what is left of the day's budget spread uniformly over what is left of the day (its end
 * less `endMarginMs`, so that notices arriving late still land inside the day), or, with a traffic
 * curve (`curve`, traffic-curve.ts), in proportion to the share of the day's traffic still to come
 * (the uniform curve is the one whose traffic is the same every hour). Recomputed at every
 * refresh, this is memoryless: a worker restarted mid-day spreads what is left from its first second,
 * a deficit is spread over the rest of the day instead of caught up in a burst, and every worker,
 * reading the same spend, steers the same way without talking to the others. A campaign first seen
 * mid-day with nothing spent that day gets the share of its daily budget that the rest of the day
 * is on its curve (prorated). A new day starts without pressure, from the initial share.
 *
 * Controller: spend rate = Σ over the live workers of share × k, where k (USD per ms at share 1,
 * per worker) is the market's answer to the campaign's bids (traffic × win rate × price); k is
 * estimated as the ratio of two exponentially weighted sums over the last `windowMs`: spend
 * measured, and the sum of every worker's share × time (the others' as they shared them). Then share
 * = wanted rate / (k × workers): every worker, reading the same spend and the same shares, computes
 * the same share, so a restarted worker and the others meet within the ramp. The ratio of the two sums is unbiased from the first measurement (both start at zero),
 * and a change of share is matched by the same change of spend. Until the first spend is measured,
 * and whenever the estimate asks for more, the share at most doubles every `rampMs`: a campaign
 * starts at `initialShare` and never bursts while the estimate is young. The budget lease
 * (spend.service.ts) still bounds the total: pacing decides when to spend, never how much in all.
 */
import type { LocalDay } from './local-day';
import { curveAt, curveDensity } from './traffic-curve';

export interface PaceSettings {
  /** Time constant of the spend rate estimate, ms. */
  readonly windowMs: number;
  /** The share at most doubles every rampMs. */
  readonly rampMs: number;
  /** Aim to have spent the day's budget this long before the day ends, ms. */
  readonly endMarginMs: number;
  /** Share of a campaign seen for the first time. */
  readonly initialShare: number;
  /** Lowest share (a campaign still enters a few requests, so its market keeps being measured). */
  readonly minShare: number;
}

/** Highest spend pressure: shading still keeps a fifth of its weight on surplus. */
export const MAX_PRESSURE = 0.8;
/**
 * Lowest pressure, −λ: when the budget binds, shading maximises (value − (1 + λ) × price) × P(win | price)
 * (the budget's shadow price λ, up to MAX_LAMBDA) before pacing throttles for good.
 */
export const MAX_LAMBDA = 1;

/**
 * The other live workers' shares of a campaign (their sum) and how many they are; and the prorated
 * share of the day one of them knows (`prorate` of the day that began at `prorateDay`; NaN: none).
 */
export interface Peers {
  readonly shares: number;
  readonly count: number;
  readonly prorate: number;
  readonly prorateDay: number;
}
export const NO_PEERS: Peers = { shares: 0, count: 0, prorate: NaN, prorateDay: NaN };

export const DEFAULT_PACE: PaceSettings = { windowMs: 120_000, rampMs: 5_000, endMarginMs: 300_000, initialShare: 0.001, minShare: 1e-6 };

export class PaceController {
  /** Share of eligible requests entered, read on the bid path. */
  share: number;
  /** What the curve says should have been spent today by the last update, USD (the metric). */
  target = 0;
  /** What Redis said was spent today at the last update, USD. */
  spent = 0;
  /**
   * In [−MAX_LAMBDA, MAX_PRESSURE]. Above 0, spend pressure: grows while the campaign enters every
   * request it may and still spends below the wanted rate (the market is too small at its shaded
   * prices); shading then weighs spend as well as surplus and bids closer to the value. Below 0, the
   * budget binds: −pressure is λ, the budget's shadow price, growing while pacing throttles (the
   * share is below 0.9 of what the market could take); shading maximises (value − (1 + λ) × price) ×
   * P(win | price), i.e. bids lower, so that fewer, cheaper wins spend the budget and the share rises
   * back towards 1 (shading.ts). Throttling is what is left once λ reaches MAX_LAMBDA.
   */
  pressure = 0;
  private dayStart = NaN;
  private lastT = 0;
  private lastSpent = 0;
  /** Exponentially weighted spend (USD) and share × time (ms). */
  private wSpend = 0;
  private wShareMs = 0;
  /** The curve of the day: from (t0, spent0) to (the aimed end, the budget). */
  private t0 = 0;
  private spent0 = 0;
  /** Share of the day's budget this day may spend: what was left of the day when the campaign was first seen with nothing spent, else 1. */
  prorate = 1;
  /**
   * Whether `prorate` is known: this worker saw the day's first spend (first seen with nothing spent,
   * or a whole day), or a peer that did told it. A worker (re)started after the campaign spent does
   * not know it: it takes the peers' (`Peers.prorate`) as soon as they share it, so that every worker
   * spreads the same budget.
   */
  prorateKnown = false;
  /** The traffic curve of the day that began at `curveDay` (cumulative shares per hour), null: uniform. */
  curve: Float64Array | null = null;
  curveDay = NaN;

  constructor(private readonly s: PaceSettings = DEFAULT_PACE) {
    this.share = s.initialShare;
  }

  /**
   * One refresh. `spentToday`: the campaign's spend of its day (every worker); `budget`: what it may
   * spend today in all (its daily budget, less when its total budget has less left); `peers`: the
   * other live workers' shares of the campaign, as last shared. Returns the share.
   */
  /** The day this controller paces (its start, epoch ms; NaN before the first update). */
  get day(): number {
    return this.dayStart;
  }

  update(now: number, day: LocalDay, spentToday: number, budget: number, peers: Peers = NO_PEERS): number {
    const aimEnd = Math.max(day.start + 1, day.end - this.s.endMarginMs);
    if (day.start !== this.dayStart) {
      const first = Number.isNaN(this.dayStart);
      // A new day, or the campaign first seen: the curve starts here, the rate estimate carries over.
      this.dayStart = day.start;
      this.t0 = now;
      this.spent0 = spentToday;
      this.lastT = now;
      this.lastSpent = spentToday;
      this.spent = spentToday;
      this.target = spentToday;
      // First seen with nothing spent that day: its day is what is left of it (prorated); a worker
      // restarted after the campaign spent spreads what is left, as every other worker does.
      this.prorate = first && spentToday <= 0 ? Math.max(0, Math.min(1, (aimEnd - now) / (aimEnd - day.start))) : 1;
      this.prorateKnown = !first || spentToday <= 0;
      // Yesterday's pressure and share were about yesterday's market: the day starts without
      // pressure, from the initial share, ramping up as a new campaign does.
      this.pressure = 0;
      this.share = this.s.initialShare;
      // The market of the new day may not be yesterday's: its first measurements outweigh the old estimate at once.
      this.wSpend *= 0.01;
      this.wShareMs *= 0.01;
      return this.share;
    }
    if (!this.prorateKnown && peers.prorateDay === this.dayStart && peers.prorate >= 0 && peers.prorate <= 1) {
      this.prorate = peers.prorate;
      this.prorateKnown = true;
    }
    budget *= this.prorate;
    const dt = now - this.lastT;
    if (dt <= 0) return this.share;
    const spentNow = Math.max(spentToday, this.lastSpent);
    const decay = Math.exp(-dt / this.s.windowMs);
    this.wSpend = this.wSpend * decay + (spentNow - this.lastSpent);
    // Every worker's share: the market answers the sum (each worker sees its part of the traffic).
    this.wShareMs = this.wShareMs * decay + (this.share + peers.shares) * dt;
    this.lastT = now;
    this.lastSpent = spentNow;
    this.spent = spentNow;
    const cum = this.curveDay === day.start ? this.curve : null;
    // Where the day stands on its curve: time, or the share of its traffic gone by.
    const at = (t: number): number => (cum === null ? t : curveAt(cum, day.start, t));
    const span = at(aimEnd) - at(this.t0);
    this.target = now >= aimEnd || span <= 0 ? budget : this.spent0 + ((Math.max(budget, this.spent0) - this.spent0) * (at(now) - at(this.t0))) / span;
    const left = budget - spentNow;
    let want: number;
    if (left <= 0) want = 0;
    else {
      const density = cum === null ? 1 : curveDensity(cum, day.start, now);
      const wantedRate = (left * density) / Math.max(at(aimEnd) - at(now), density * dt);
      // k per worker at share 1; every worker computes the same share from the same spend and sum.
      want = this.wSpend > 0 && this.wShareMs > 0 ? wantedRate / ((this.wSpend / this.wShareMs) * (1 + peers.count)) : Infinity;
    }
    const ceiling = Math.min(1, this.share * Math.pow(2, dt / this.s.rampMs));
    if (want > 1 && this.share >= 1) this.pressure = Math.min(MAX_PRESSURE, this.pressure + dt / this.s.windowMs);
    else if (want < 0.9) this.pressure = Math.max(-MAX_LAMBDA, this.pressure - dt / this.s.windowMs);
    this.share = Math.max(this.s.minShare, Math.min(ceiling, want));
    return this.share;
  }
}
