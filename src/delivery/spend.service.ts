/**
 * Spend and pacing, shared by every worker and machine through Redis, never awaited on the bid path.
 *
 * Truth: billing notices. `bill()` records a bid id once (SET NX with a TTL, so a billing notice
 * fired twice, to any worker, counts once) and adds its cost to the campaign's total and daily spend
 * (integer micro-USD, one Lua script, atomic).
 *
 * Bid path: each worker holds a local lease per budgeted campaign. Every BUDGET_REFRESH_MS it reads
 * every campaign's spend, counts the live workers of every host (heartbeats in a sorted set, scored
 * on Redis's clock so that hosts whose clocks disagree all count; a member is `<HOST_ID>:<worker>:<pid>`,
 * so workers of different hosts never share one) and sets
 *   lease = remaining / workers − (its own bids of the last BUDGET_WINDOW_MS, at their bid price)
 * A bid is allowed only while the lease covers its cost, and its cost is taken from the lease at
 * once. So the bids of all workers that may still be billed never exceed what is left of the budget:
 * overspend needs a billing notice that arrives later than BUDGET_WINDOW_MS after its bid, or the
 * worker count to change within one refresh; it is measured in test/delivery/budget.spec.ts.
 * An exhausted campaign stops bidding on every worker within one refresh (default 250 ms).
 * A bid's cost leaves the window early when its loss notice (back to the lease at once) or its
 * bill (then counted in the spend) arrives, once per bid; a bid that hears nothing times out with
 * the window. When what is left is less than one bid per worker, it goes whole to one worker (the
 * tail: tailLease, TAIL in src/redis/scripts.ts) instead of being split into parts below one bid,
 * so an asap campaign spends its budget to the last bid. With several exchanges (EXCHANGES_FILE), the unbilled bids of one exchange may hold at
 * most BUDGET_SOURCE_PERCENT of remaining / workers, so that bids never billed from one exchange
 * (a flood) cannot take the budget from the others; test requests (`test` = 1) reserve nothing.
 * The daily budget is the campaign's day in its time zone (`timeZone`, UTC by default); an even
 * campaign also enters only a share of the requests it is eligible for, set at each refresh by its
 * pacing controller (pacer.ts, docs/bidding.md).
 * A worker (or a whole host) that dies stops counting once its last heartbeat is older than the
 * heartbeat window, max(3 × BUDGET_REFRESH_MS, 1 s), on Redis's clock: its share goes to the others
 * at their first refresh after that, so within the window plus one refresh (1.25 s by default); a
 * worker that stops gracefully leaves the set at once.
 * Until the first successful read, and while Redis is away, leases are not renewed: campaigns
 * stop once what they hold is used up (fail safe: budgets are money). On a Redis Cluster the
 * campaigns' keys live on different nodes: a campaign whose node is failing over keeps its lease
 * unrenewed (it bids on from it) while the others are renewed; the live count lives on one node,
 * and while it cannot be read no lease is renewed.
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { slotOf } from '../redis/redis.options';
import { CurrencyService } from '../currency/currency.service';
import { CampaignStore } from '../targeting/campaign-store';
import type { Candidate } from '../targeting/types';
import type { NoticedBid } from './noticed-bid';
import { Clock } from './clock';
import { spendKeys, trafficKey } from './keys';
import { LocalDays, localDay, type LocalDay } from './local-day';
import { DEFAULT_PACE, NO_PEERS, PaceController, type PaceSettings, type Peers } from './pacer';
import { curveFromHistory, HOUR_MS, hoursOf, MAX_HOURS, TRAFFIC_DAYS } from './traffic-curve';
import { Random } from './random';
import { MoneyKeysWatch, witnessKey } from './money-keys';
import { SpendRepository } from './spend.repository';

const MICRO = 1_000_000;
/** How long daily spend counters live after their last bill (they are read only on their day). */
const DAILY_TTL_S = 3 * 24 * 3600;

/**
 * What the budget checks of one auction (`SpendService.check`) and its bids change, held as a value
 * instead of applied: the campaigns whose check counted a request as eligible (their traffic
 * curve's `seen`), the checks held back by a lease or a source's share (`blocked`) and by the pacing
 * draw (`throttled`), and the bids' costs to take from the leases (`commits`). The bid path applies
 * it after its auction (`SpendService.apply`); `/debug/explain` and the warm-up drop it. One object
 * per auction, reset per request: no allocation per request (its lists keep their length).
 *
 * The commits of a request are pending until it is applied, so a check takes the pending commits of
 * the same campaign off its lease (in the order a commit applies them: the same verdicts, to the
 * last bit, as commits applied at once): a later imp of the request sees an earlier imp's bid. A
 * request's bids are a few at most, so the scan is a few comparisons (`npm run bench`).
 */
export class SpendEffects {
  /** Whether checks take the pacing draw (the bid path) or judge an even campaign as entering the request (explain, the warm-up: no randomness spent). */
  draws = true;
  /** Budgets a check saw, one entry per check (`seenCount` of them are this request's). */
  readonly seen: Array<CampaignBudget | null> = [];
  seenCount = 0;
  blocked = 0;
  throttled = 0;
  /** Bids whose cost the leases lose, and their source (one per request). */
  readonly commits: Candidate[] = [];
  commitCount = 0;
  source = 0;

  /** Starts a request's effects: nothing seen, counted or committed. */
  reset(draws: boolean, source: number): void {
    for (let i = 0; i < this.seenCount; i++) this.seen[i] = null;
    this.draws = draws;
    this.seenCount = 0;
    this.blocked = 0;
    this.throttled = 0;
    this.commitCount = 0;
    this.source = source;
  }

  /** A bid of `c` made: its cost leaves the lease when applied (a campaign without a budget has none). */
  commit(c: Candidate): void {
    if (c.budget === undefined) return;
    this.commits[this.commitCount++] = c;
  }
}

/** One campaign's lease and window of unbilled bids in this worker (exported for its unit test). */
export class CampaignBudget {
  /** USD this worker may still commit to bids until the next refresh. */
  lease = 0;
  /** remaining / workers at the last refresh: what the per-source bound is a share of. */
  view = 0;
  /** Even pacing's controller (null for an asap campaign) and the share of eligible requests entered (1 for asap). */
  pacer: PaceController | null = null;
  share = 1;
  /** At the last refresh: the campaign's spend of its day (every worker) and what it may spend that day (the daily budget, or less of the total left), USD. */
  spentToday = 0;
  dayBudget = 0;
  /** Eligible requests the campaign's gate saw since the last refresh (the traffic curve's counts). */
  seen = 0;
  /** Traffic curve: counts per hour of `trafficDay` not yet added in Redis, and which hours were observed (bits). */
  readonly pending = new Float64Array(MAX_HOURS);
  observed = 0;
  trafficDay: LocalDay | null = null;
  /** When the curve of the pacer's day was last asked of Redis (ms; retried once a sync period). */
  curveAskedAt = -Infinity;
  /** Bid cost committed per refresh tick: a ring of BUDGET_WINDOW_MS, `sum` its total. */
  readonly ticks: Float64Array;
  /** When each tick of the ring began (this worker's clock, ms), for releases. */
  readonly starts: Float64Array;
  private head = 0;
  sum = 0;
  current = 0;
  currentStart = 0;
  /** The same per source (exchange): `bySource[tick * sources + s]`, its window total and current tick. */
  readonly bySource: Float64Array;
  readonly sourceSum: Float64Array;
  readonly sourceCurrent: Float64Array;
  constructor(
    readonly total: number,
    readonly daily: number,
    windowTicks: number,
    readonly sources: number,
    readonly timeZone = 'UTC',
    pacing: 'even' | 'asap' = 'asap',
    pace: PaceSettings = DEFAULT_PACE,
  ) {
    if (pacing === 'even') {
      this.pacer = new PaceController(pace);
      this.share = this.pacer.share;
    }
    this.ticks = new Float64Array(windowTicks);
    this.starts = new Float64Array(windowTicks);
    this.bySource = new Float64Array(windowTicks * sources);
    this.sourceSum = new Float64Array(sources);
    this.sourceCurrent = new Float64Array(sources);
  }

  /** Ends a tick: what was committed during it joins the window, the oldest tick leaves. */
  slide(now: number): void {
    const h = this.head;
    this.sum += this.current - this.ticks[h];
    this.ticks[h] = this.current;
    this.starts[h] = this.currentStart;
    for (let s = 0, at = h * this.sources; s < this.sources; s++, at++) {
      this.sourceSum[s] = Math.max(0, this.sourceSum[s] + this.sourceCurrent[s] - this.bySource[at]);
      this.bySource[at] = this.sourceCurrent[s];
      this.sourceCurrent[s] = 0;
    }
    this.head = (h + 1) % this.ticks.length;
    this.current = 0;
    this.currentStart = now;
  }

  /**
   * Takes up to `cost` of a bid made at `ts` out of the window: from the tick the bid fell in (the
   * newest that began at or before it), then from older ones, never from a younger one (it would
   * leave the window after the bid's own, and the cost be counted nowhere meanwhile; an older one
   * leaves earlier, so the cost is counted a little longer, which is safe). Nothing once the bid has
   * left the window. Returns what was taken.
   *
   * What could not be taken is a bid of another worker, still in that worker's window: it stays
   * here as a credit (a negative cost) in a tick at least two older than the bid's, so that the sum
   * of every worker's window is the bids not yet answered, not more (what the tail of a budget is
   * shared by, TAIL in src/delivery/scripts.ts), and the credit leaves the window at least one refresh
   * before the bid's cost leaves the other worker's (a credit outliving its bid would under-count).
   */
  release(cost: number, ts: number, source: number): number {
    const n = this.ticks.length;
    let taken = 0;
    let sourceTaken = 0;
    const fromSource = source < this.sources;
    if (this.currentStart <= ts) {
      taken = Math.min(cost, Math.max(0, this.current));
      this.current -= taken;
      if (fromSource) {
        sourceTaken = Math.min(taken, this.sourceCurrent[source]);
        this.sourceCurrent[source] -= sourceTaken;
      }
    }
    let bidAge = this.currentStart <= ts ? 0 : -1;
    for (let age = 1; age <= n && taken < cost; age++) {
      const slot = (this.head - age + n) % n;
      if (this.starts[slot] > ts) continue;
      if (bidAge < 0) bidAge = age;
      const t = Math.min(cost - taken, Math.max(0, this.ticks[slot]));
      this.ticks[slot] -= t;
      this.sum -= t;
      taken += t;
      if (fromSource) {
        const at = slot * this.sources + source;
        const st = Math.min(taken - sourceTaken, this.bySource[at]);
        this.bySource[at] -= st;
        this.sourceSum[source] = Math.max(0, this.sourceSum[source] - st);
        sourceTaken += st;
      }
    }
    if (taken < cost) {
      // (The loop above went through every tick: bidAge < 0 means the bid is older than all of them.)
      const creditAge = bidAge + 2;
      if (bidAge >= 0 && creditAge <= n && this.starts[(this.head - creditAge + n) % n] > 0) {
        this.ticks[(this.head - creditAge + n) % n] -= cost - taken;
        this.sum -= cost - taken;
      }
    }
    return taken;
  }

  /** Cost of the unbilled bids in the window (credits included), this tick's commitments too. */
  held(): number {
    return this.sum + this.current;
  }

  /** Carries the window over to a campaign whose budget changed (a reload). */
  copyWindow(from: CampaignBudget): void {
    const n = Math.min(this.ticks.length, from.ticks.length);
    for (let i = 0; i < n; i++) {
      const f = (from.head + i) % from.ticks.length;
      this.ticks[i] = from.ticks[f];
      this.starts[i] = from.starts[f];
      this.bySource.set(from.bySource.subarray(f * from.sources, (f + 1) * from.sources), i * this.sources);
    }
    this.head = n % this.ticks.length;
    this.sum = 0;
    for (let i = 0; i < this.ticks.length; i++) this.sum += this.ticks[i];
    this.sourceSum.set(from.sourceSum);
    this.sourceCurrent.set(from.sourceCurrent);
    this.current = from.current;
    this.currentStart = from.currentStart;
    // The controller's view of the market still holds (its target follows the new budget at once).
    if (this.pacer !== null && from.pacer !== null && this.timeZone === from.timeZone) {
      this.pacer = from.pacer;
      this.share = from.share;
      this.curveAskedAt = from.curveAskedAt;
    }
    if (this.timeZone === from.timeZone) {
      this.seen = from.seen;
      this.pending.set(from.pending);
      this.observed = from.observed;
      this.trafficDay = from.trafficDay;
    }
  }
}

/** The budgeted campaigns of one candidate index and their Redis keys, built once per index (and day). */
interface RefreshPlan {
  readonly index: object;
  readonly ids: string[];
  readonly budgets: Array<{ total: number; daily: number; timeZone: string; pacing: 'even' | 'asap'; curve: 'uniform' | 'traffic' }>;
  readonly totalKeys: string[];
  /** Each campaign's witness of its billing markers (money-keys.ts). */
  readonly witnessKeys: string[];
  /** The cost of each campaign's cheapest and dearest bid (USD): the tail is what fits one, not one per worker. */
  readonly minCost: number[];
  readonly maxCost: number[];
  /** Each campaign's day (in its zone) at the last refresh. */
  days: LocalDay[];
  dailyKeys: string[];
  /** Every total key, then every daily key, then every witness key: what a refresh reads. */
  keys: string[];
  /** Each key's hash slot (a campaign's two keys share its slot), for the cluster's reads. */
  slots: number[];
}

/** How often each worker shares its pacing shares and reads the others' (ms), their time to live, and when a view is too old to use. */
const PACE_SYNC_MS = 1_000;
const PACE_TTL_MS = 5_000;
const PACE_STALE_MS = 10_000;
/** The field, after a campaign's id, of its prorated day in a worker's pacing shares (`<day start>:<prorate>`; a reader that knows it not skips the value, no number). */
const PRORATE_FIELD = '\u0000prorate';

@Injectable()
export class SpendService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Spend');
  private readonly budgets = new Map<string, CampaignBudget>();
  private readonly windowTicks: number;
  private readonly pace: PaceSettings;
  private readonly days = new LocalDays();
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private lastRefreshOk = 0;
  private lastTrafficSync = -Infinity;
  /** The other live workers' pacing shares per campaign (pacer.ts), as last read, and when (ms). */
  private peers = new Map<string, Peers>();
  private peersAt = -Infinity;
  private lastPaceSync = -Infinity;
  private plan: RefreshPlan | null = null;
  /** `liveWorkers`: workers of every host counted at the last refresh; `throttled`: eligible requests an even campaign sat out. */
  readonly stats = { refreshes: 0, refreshErrors: 0, billsCounted: 0, billsDuplicate: 0, blockedBids: 0, liveWorkers: 0, released: 0, throttled: 0, tails: 0 };
  /** Spend totals that go backwards and billing markers that vanish (money-keys.ts). */
  readonly moneyKeys = new MoneyKeysWatch((text) => this.logger.error(text));
  /** This worker in the live set: host, worker id and pid. */
  private readonly member: string;
  /** A heartbeat older than this (on Redis's clock) is a worker that is gone. */
  private readonly heartbeatWindowMs: number;
  /** Sources of bids (src/exchanges/exchanges.ts: `open` and each exchange). */
  private readonly sources: number;
  /** The share of a campaign's view one source's unbilled bids may hold (1: no bound, with a single source). */
  private readonly sourceShare: number;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly db: SpendRepository,
    private readonly store: CampaignStore,
    private readonly clock: Clock,
    private readonly currency: CurrencyService,
    private readonly random: Random,
  ) {
    this.pace = { ...DEFAULT_PACE, windowMs: config.pacingWindowMs, rampMs: config.pacingRampMs, endMarginMs: config.pacingEndMarginMs };
    this.windowTicks = Math.max(1, Math.ceil(config.budgetWindowMs / config.budgetRefreshMs));
    this.member = `${config.hostId}:${config.workerId}:${process.pid}`;
    this.heartbeatWindowMs = Math.max(3 * config.budgetRefreshMs, 1_000);
    this.sources = 1 + (config.exchanges?.length ?? 0);
    this.sourceShare = this.sources > 2 ? config.budgetSourcePercent / 100 : 1;
  }

  /** Starts the refresh loop; start-up waits (at most 2 s) for the first budget view, so a new worker bids at once. */
  async onApplicationBootstrap(): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), this.config.budgetRefreshMs);
    this.timer.unref();
    this.db.onReady(() => void this.refresh());
    if (!this.db.isReady()) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 2_000);
        this.db.onReady(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    await this.refresh();
  }

  /** Stops the refresh loop and leaves the live set at once, so the others' leases grow at their next refresh. */
  /** Stops the refresh loop (the simulator drives refreshes on its own clock). */
  stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.db.isReady()) await this.db.leave(this.member).catch(() => undefined);
  }

  /**
   * Bid path: does the campaign's lease, less the request's pending commits, still cover one more
   * bid of this candidate, (with several exchanges) do the unbilled bids of this source stay within
   * their share, and does an even campaign enter this request (a draw at its pacing share, when `fx`
   * draws)? O(1) but for the request's own bids, no I/O; changes nothing here: what the check
   * counts goes into `fx`.
   */
  check(c: Candidate, source: number, fx: SpendEffects): boolean {
    if (c.budget === undefined) return true;
    const b = this.budgets.get(c.campaignId);
    const cost = c.price / 1000;
    // Budgeted but not read yet (first refresh pending, or Redis away since start): wait.
    if (b === undefined) {
      fx.blocked++;
      return false;
    }
    fx.seen[fx.seenCount++] = b;
    let lease = b.lease;
    let fromSource = source < b.sources ? b.sourceCurrent[source] : 0;
    for (let i = 0; i < fx.commitCount; i++) {
      const p = fx.commits[i];
      if (p.campaignId !== c.campaignId) continue;
      const k = p.price / 1000;
      lease -= k;
      fromSource += k;
    }
    if (lease < cost || (this.sourceShare < 1 && b.sourceSum[source] + fromSource + cost > this.sourceShare * b.view)) {
      fx.blocked++;
      return false;
    }
    if (b.share < 1 && (fx.draws ? this.random.next() : 0) >= b.share) {
      fx.throttled++;
      return false;
    }
    return true;
  }

  /** Applies what checks and bids of one request changed (the bid path, after its auction): counts, traffic curves, commits. */
  apply(fx: SpendEffects): void {
    for (let i = 0; i < fx.seenCount; i++) {
      fx.seen[i]!.seen++;
      fx.seen[i] = null;
    }
    fx.seenCount = 0;
    this.stats.blockedBids += fx.blocked;
    this.stats.throttled += fx.throttled;
    for (let i = 0; i < fx.commitCount; i++) this.commit(fx.commits[i], fx.source);
    // Applied once: this part is emptied (the rest of a larger effects object is its owner's).
    fx.blocked = 0;
    fx.throttled = 0;
    fx.commitCount = 0;
  }

  /** Outside an auction (tools, tests): `check` with its effects applied at once. */
  allows(c: Candidate, source = 0): boolean {
    const fx = this.direct;
    fx.reset(true, source);
    const ok = this.check(c, source, fx);
    this.apply(fx);
    return ok;
  }

  private readonly direct = new SpendEffects();

  /** Bid path: the campaign's spend pressure (pacer.ts), 0 for asap and unbudgeted campaigns. */
  pressure(c: Candidate): number {
    const b = c.budget === undefined ? undefined : this.budgets.get(c.campaignId);
    return b === undefined || b.pacer === null ? 0 : b.pacer.pressure;
  }

  /**
   * Pacing of every budgeted campaign of the campaign file as this worker sees it (a campaign gone
   * from the file leaves at the next refresh, so labels stay bounded by the file): share entered,
   * spend target (even only), spend of its day and the day's budget (USD).
   */
  pacing(): Array<{ campaign: string; share: number; target: number; spent: number; budget: number; even: boolean }> {
    const out = [];
    for (const [campaign, b] of this.budgets) {
      out.push({ campaign, share: b.share, target: b.pacer?.target ?? 0, spent: b.pacer?.spent ?? b.spentToday, budget: b.dayBudget, even: b.pacer !== null });
    }
    return out;
  }

  /** Bid path: takes the cost of a bid just made (at its maximum, the bid price in USD) from the lease. */
  commit(c: Candidate, source = 0): void {
    const b = this.budgets.get(c.campaignId);
    if (b === undefined) return;
    const cost = c.price / 1000;
    b.lease -= cost;
    b.current += cost;
    if (source < b.sources) b.sourceCurrent[source] += cost;
  }

  /**
   * Notice path: a bid that lost (`billed` false) or was billed (true) no longer waits in the window
   * of unbilled bids. A lost bid's cost goes back to the lease at once; a billed one's comes back
   * through the spend at the next refresh. Once per bid (the caller's marker). The bid may have been
   * made by another worker: its cost then leaves this worker's window, and the other worker's
   * window keeps it until it times out: over all workers the bids that may still be billed are
   * counted as before, or more.
   */
  release(p: NoticedBid, billed: boolean, now = this.clock.now()): void {
    const b = this.budgets.get(p.cid);
    if (b === undefined || p.test === true) return;
    // What the bid took from a lease: its candidate's USD price, else the bid price converted.
    const c = this.store.current().get(p.crid);
    const usd = c !== undefined && c.campaignId === p.cid ? c.price : (this.currency.current().convert(p.price, p.cur, 'USD') ?? p.price);
    if (now - p.ts >= this.config.budgetWindowMs) return;
    const taken = b.release(usd / 1000, p.ts, p.source ?? 0);
    if (!billed) b.lease += taken;
    this.stats.released += taken;
  }

  /** Reads spend for every budgeted campaign and renews the leases; one at a time (a caller during one gets that one). Never throws. */
  refresh(now = this.clock.now()): Promise<void> {
    this.refreshing ??= this.doRefresh(now).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Campaign ids and keys for the current index and the campaigns' days; rebuilt only when one changes. */
  private refreshPlan(now: number): RefreshPlan {
    const index = this.store.current();
    let plan = this.plan;
    let rebuild = false;
    if (plan === null || plan.index !== index) {
      const campaigns = new Map<string, RefreshPlan['budgets'][number]>();
      const costs = new Map<string, { min: number; max: number }>();
      for (const c of index.candidates) {
        if (!c.budget) continue;
        campaigns.set(c.campaignId, { ...c.budget, timeZone: c.timeZone ?? 'UTC', pacing: c.pacing ?? 'asap', curve: c.pacingCurve ?? 'uniform' });
        const k = costs.get(c.campaignId);
        if (k === undefined) costs.set(c.campaignId, { min: c.price / 1000, max: c.price / 1000 });
        else {
          k.min = Math.min(k.min, c.price / 1000);
          k.max = Math.max(k.max, c.price / 1000);
        }
      }
      const ids = [...campaigns.keys()];
      plan = {
        index,
        ids,
        budgets: ids.map((id) => campaigns.get(id)!),
        totalKeys: ids.map((id) => spendKeys.total(id)),
        witnessKeys: ids.map((id) => witnessKey(id)),
        minCost: ids.map((id) => costs.get(id)!.min),
        maxCost: ids.map((id) => costs.get(id)!.max),
        days: [],
        dailyKeys: [],
        keys: [],
        slots: [],
      };
      this.plan = plan;
      rebuild = true;
    }
    for (let i = 0; i < plan.ids.length; i++) {
      const d = this.days.of(now, plan.budgets[i].timeZone);
      if (plan.days[i] !== d) {
        plan.days[i] = d;
        plan.dailyKeys[i] = spendKeys.daily(plan.ids[i], d.day);
        rebuild = true;
      }
    }
    if (rebuild) {
      plan.keys = [...plan.totalKeys, ...plan.dailyKeys, ...plan.witnessKeys];
      if (this.config.redis.mode === 'cluster') plan.slots = plan.keys.map(slotOf);
    }
    return plan;
  }

  /** The other workers' shares of an even campaign; none once they are PACE_STALE_MS old (Redis away: each worker paces alone). */
  private peersOf(id: string, now: number): Peers {
    return now - this.peersAt > PACE_STALE_MS ? NO_PEERS : (this.peers.get(id) ?? NO_PEERS);
  }

  /**
   * Pacing shares, shared: writes this worker's share of each even campaign (`bidder:pace:<worker>`,
   * a hash expiring after PACE_TTL_MS) and reads every other worker's of the live set, so that every
   * worker's controller knows the sum of the shares the spend answers (pacer.ts); and the campaign's
   * prorated day when this worker knows it, which a worker (re)started after the day's first spend takes. A few small
   * commands a second, off the bid path; a failure leaves the last view, which goes stale.
   */
  private async syncPace(now: number): Promise<void> {
    try {
      const mine: Record<string, string> = {};
      for (const [id, b] of this.budgets) {
        if (b.pacer === null) continue;
        mine[id] = b.share.toPrecision(6);
        // The prorated share of the day, when this worker knows it (pacer.ts): a worker started later takes it.
        if (b.pacer.prorateKnown && Number.isFinite(b.pacer.day)) mine[id + PRORATE_FIELD] = `${b.pacer.day}:${b.pacer.prorate.toPrecision(9)}`;
      }
      const theirs = await this.db.sharePaces(this.member, mine, PACE_TTL_MS);
      const peers = new Map<string, { shares: number; count: number; prorate: number; prorateDay: number }>();
      const of = (id: string) => {
        let p = peers.get(id);
        if (p === undefined) peers.set(id, (p = { shares: 0, count: 0, prorate: NaN, prorateDay: NaN }));
        return p;
      };
      for (const h of theirs) {
        for (const [field, v] of Object.entries(h)) {
          if (field.endsWith(PRORATE_FIELD)) {
            const colon = v.indexOf(':');
            const day = Number(v.slice(0, colon));
            const prorate = Number(v.slice(colon + 1));
            if (colon > 0 && Number.isFinite(day) && prorate >= 0 && prorate <= 1) {
              const p = of(field.slice(0, -PRORATE_FIELD.length));
              p.prorate = prorate;
              p.prorateDay = day;
            }
            continue;
          }
          const share = Number(v);
          if (!(share >= 0 && share <= 1)) continue;
          const p = of(field);
          p.shares += share;
          p.count++;
        }
      }
      this.peers = peers;
      this.peersAt = now;
    } catch (e) {
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`pacing shares could not be shared: ${(e as Error).message}`);
    }
  }

  /**
   * Every campaign's total and daily spend (micro-USD text, null when unset), or undefined for a
   * campaign whose read failed. Rejects only when nothing could be read.
   */
  private async readSpend(plan: RefreshPlan): Promise<{ totals: Array<string | null | undefined>; dailies: Array<string | null | undefined>; witnesses: Array<string | null | undefined> }> {
    const n = plan.ids.length;
    if (n === 0) return { totals: [], dailies: [], witnesses: [] };
    const values = await this.db.readMany(plan.keys, plan.slots);
    const totals = values.slice(0, n);
    const dailies = values.slice(n, 2 * n);
    const witnesses = values.slice(2 * n);
    let unread = 0;
    for (let i = 0; i < n; i++) if (totals[i] === undefined || dailies[i] === undefined) unread++;
    if (unread > 0) {
      this.stats.refreshErrors++;
      if (unread === n) throw new Error('no campaign\'s spend could be read');
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`budget refresh: ${unread} of ${n} campaigns' spend could not be read (their leases wait)`);
    }
    return { totals, dailies, witnesses };
  }

  private async doRefresh(now: number): Promise<void> {
    try {
      const plan = this.refreshPlan(now);
      const ids = plan.ids;
      const [live, { totals, dailies, witnesses }] = await Promise.all([this.db.heartbeat(this.member, this.heartbeatWindowMs, 60_000), this.readSpend(plan)]);
      this.stats.liveWorkers = live;
      const workers = Math.max(1, live);
      const tails: number[] = [];
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i];
        const cfg = plan.budgets[i];
        let b = this.budgets.get(id);
        if (b === undefined || b.total !== cfg.total || b.daily !== cfg.daily || b.timeZone !== cfg.timeZone || (b.pacer === null) !== (cfg.pacing === 'asap')) {
          const fresh = new CampaignBudget(cfg.total, cfg.daily, this.windowTicks, this.sources, cfg.timeZone, cfg.pacing, this.pace);
          if (b !== undefined) fresh.copyWindow(b);
          b = fresh;
          this.budgets.set(id, b);
        }
        // Its node did not answer: the lease waits (no slide either: its window only grows, which is safe).
        if (totals[i] === undefined || dailies[i] === undefined) continue;
        this.watchMoneyKeys(id, totals[i] ?? null, witnesses[i]);
        const spentTotal = Number(totals[i] ?? 0) / MICRO;
        const spentToday = Number(dailies[i] ?? 0) / MICRO;
        const remaining = Math.max(0, Math.min(b.total - spentTotal, b.daily - spentToday));
        b.slide(now);
        b.spentToday = spentToday;
        b.dayBudget = Math.min(b.daily, spentToday + Math.max(0, b.total - spentTotal));
        b.view = remaining / workers;
        // The tail: a bid still fits what is left, but not what is left / workers. It goes to one worker (tailLease).
        const tail = workers > 1 && remaining >= plan.minCost[i] && remaining < workers * plan.maxCost[i];
        if (tail) tails.push(i);
        b.lease = tail ? 0 : Math.max(0, b.view - Math.max(0, b.sum));
        if (b.pacer !== null) b.share = b.pacer.update(now, plan.days[i], spentToday, Math.min(b.daily, spentToday + Math.max(0, b.total - spentTotal)), this.peersOf(id, now));
      }
      if (now - this.lastPaceSync >= PACE_SYNC_MS) {
        this.lastPaceSync = now;
        await this.syncPace(now);
      }
      this.moneyKeys.endRefresh(now);
      if (tails.length > 0) await Promise.all(tails.map((i) => this.tailLease(plan, i, workers)));
      await this.traffic(plan, now);
      if (this.budgets.size > ids.length) {
        const live = new Set(ids);
        for (const id of [...this.budgets.keys()]) if (!live.has(id)) this.budgets.delete(id);
        this.moneyKeys.retain(live);
      }
      this.stats.refreshes++;
      this.lastRefreshOk = now;
    } catch (e) {
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`budget refresh failed: ${(e as Error).message}`);
    }
  }

  /**
   * A campaign at its tail: less is left than one bid per worker, so splitting it evenly would leave
   * it unspent (each worker's part below one bid). It goes whole to one worker, the smallest live
   * member that published its window (TAIL), less every worker's unbilled bids: each worker publishes
   * what it holds, and only once every live worker has published (none of the others bids on it any
   * more: their lease is 0) does the owner get its lease. Never throws (the lease stays 0).
   */
  private async tailLease(plan: RefreshPlan, i: number, workers: number): Promise<void> {
    const id = plan.ids[i];
    const b = this.budgets.get(id);
    if (b === undefined) return;
    try {
      const keys = { tail: spendKeys.tail(id, plan.days[i].day), total: plan.totalKeys[i], daily: plan.dailyKeys[i] };
      const r = await this.db.tail(keys, this.member, b.held() * MICRO, this.heartbeatWindowMs, Math.max(60_000, 2 * this.config.budgetWindowMs));
      this.stats.tails++;
      if (!r.owner || r.fresh < workers || this.budgets.get(id) !== b) return;
      const remaining = Math.max(0, Math.min(b.total - r.total / MICRO, b.daily - r.daily / MICRO));
      b.view = remaining;
      b.lease = Math.max(0, remaining - r.others / MICRO - b.held());
    } catch (e) {
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`budget tail of ${id}: ${(e as Error).message}`);
    }
  }

  /**
   * Traffic-shaped curves (traffic-curve.ts), for even campaigns with `pacingCurve: "traffic"`: the
   * requests counted since the last refresh join the current hour of the campaign's day; every
   * PACING_TRAFFIC_SYNC_S (and when the day turns) the hours are added into Redis; at a new day the
   * curve is read from the previous days. Never throws; a failed write keeps the counts for the next.
   */
  private async traffic(plan: RefreshPlan, now: number): Promise<void> {
    // (A clock that went back, e.g. the simulator's virtual one after start-up, is due at once.)
    const due = (last: number): boolean => now - last >= this.config.pacingTrafficSyncMs || now < last;
    const flush = due(this.lastTrafficSync);
    if (flush) this.lastTrafficSync = now;
    const work: Array<Promise<void>> = [];
    for (let i = 0; i < plan.ids.length; i++) {
      const b = this.budgets.get(plan.ids[i]);
      if (b === undefined || b.pacer === null || plan.budgets[i].curve !== 'traffic') continue;
      const day = plan.days[i];
      if (b.trafficDay !== null && b.trafficDay.start !== day.start) {
        work.push(this.addTraffic(plan.ids[i], b, b.trafficDay));
        b.trafficDay = day;
      }
      b.trafficDay ??= day;
      const h = Math.min(hoursOf(day) - 1, Math.floor((now - day.start) / HOUR_MS));
      b.pending[h] += b.seen;
      b.observed |= 1 << h;
      b.seen = 0;
      if (flush && b.trafficDay === day) work.push(this.addTraffic(plan.ids[i], b, day));
      if (b.pacer.curveDay !== day.start && due(b.curveAskedAt)) {
        b.curveAskedAt = now;
        work.push(this.loadCurve(plan.ids[i], b, b.pacer, day));
      }
    }
    await Promise.all(work);
  }

  /** Adds a campaign's counted hours of `day` into Redis (HINCRBY, 0 too: an hour observed is a field). */
  private async addTraffic(id: string, b: CampaignBudget, day: LocalDay): Promise<void> {
    if (b.observed === 0) return;
    const counts = b.pending.slice();
    const observed = b.observed;
    b.pending.fill(0);
    b.observed = 0;
    const key = trafficKey(id, day.day);
    const hours: Array<[number, number]> = [];
    for (let h = 0; h < MAX_HOURS; h++) if (observed & (1 << h)) hours.push([h, counts[h]]);
    try {
      await this.db.addTraffic(key, hours, (TRAFFIC_DAYS + 2) * 24 * 3600);
    } catch (e) {
      // Put them back for the next sync (a write that did run would be counted twice: rare, and only shapes a curve).
      if (b.trafficDay === null || b.trafficDay.start === day.start) {
        for (let h = 0; h < MAX_HOURS; h++) b.pending[h] += counts[h];
        b.observed |= observed;
      }
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`traffic counts of ${id}: ${(e as Error).message}`);
    }
  }

  /** Reads the previous days' hourly counts of a campaign and sets its pacer's curve for `day` (uniform without history). */
  private async loadCurve(id: string, b: CampaignBudget, pacer: PaceController, day: LocalDay): Promise<void> {
    const keys: string[] = [];
    for (let d = localDay(day.start - 1, b.timeZone), n = 0; n < TRAFFIC_DAYS; d = localDay(d.start - 1, b.timeZone), n++) {
      if (hoursOf(d) === hoursOf(day)) keys.push(trafficKey(id, d.day));
    }
    try {
      const history = await this.db.readTraffic(keys);
      pacer.curve = curveFromHistory(history, hoursOf(day));
      pacer.curveDay = day.start;
    } catch (e) {
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`traffic curve of ${id}: ${(e as Error).message}`);
    }
  }

  /**
   * Money keys that vanish (money-keys.ts): the campaign's total compared with the last one read,
   * its witness with the last one seen; a missing witness is set (SET NX, not awaited: a failed
   * write is tried again at the next refresh).
   */
  private watchMoneyKeys(id: string, total: string | null, witness: string | null | undefined): void {
    this.moneyKeys.total(id, Number(total ?? 0));
    if (witness === undefined || !this.moneyKeys.witness(id, witness)) return;
    this.db.setIfAbsent(witnessKey(id), this.moneyKeys.token).catch(() => undefined);
  }

  /** Age of the budget view in ms (Infinity before the first successful refresh). */
  staleness(now = this.clock.now()): number {
    return this.lastRefreshOk === 0 ? Infinity : now - this.lastRefreshOk;
  }

  /**
   * Counts one billing notice: once per bid id across all workers. `priceCpm` is the clearing price
   * in the payload's currency (null when the exchange did not substitute it: we then count our bid
   * price, the most it can cost). The cost counts toward the daily spend of the day of the bid, in
   * the campaign's time zone.
   * Throws when Redis cannot be reached or refuses (the caller answers 503 so the exchange retries;
   * the retry is safe because billing is idempotent, and the marker is set only once the spend is in).
   */
  async bill(p: NoticedBid, priceCpm: number | null): Promise<'counted' | 'duplicate'> {
    const cpm = priceCpm ?? p.price;
    const usd = this.currency.current().convert(cpm, p.cur, 'USD') ?? cpm;
    const micros = Math.round((usd / 1000) * MICRO);
    const counted = await this.db.bill(
      {
        marker: spendKeys.billMarker(p.cid, p.bidId),
        total: spendKeys.total(p.cid),
        daily: spendKeys.daily(p.cid, this.days.of(p.ts, this.store.current().get(p.crid)?.timeZone ?? 'UTC').day),
      },
      micros,
      this.config.billDedupeTtlSeconds,
      DAILY_TTL_S,
    );
    if (counted === 1) this.stats.billsCounted++;
    else this.stats.billsDuplicate++;
    return counted === 1 ? 'counted' : 'duplicate';
  }

  /** Total spend of a campaign in USD (for tests and operators). */
  async spent(campaignId: string): Promise<number> {
    return Number((await this.db.get(spendKeys.total(campaignId))) ?? 0) / MICRO;
  }
}
