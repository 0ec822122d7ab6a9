/**
 * Spend and pacing, shared by every worker and machine through Redis, never awaited on the bid path.
 *
 * Truth: billing notices. `bill()` records a bid id once (SET NX with a TTL, so a billing notice
 * fired twice, to any worker, counts once) and adds its cost to the campaign's total and daily spend
 * (integer micro-USD, one Lua script, atomic).
 *
 * Bid path: each worker holds a local lease per budgeted campaign. Every BUDGET_REFRESH_MS it reads
 * every campaign's spend, counts the live workers (heartbeats in a sorted set) and sets
 *   lease = remaining / workers − (its own bids of the last BUDGET_WINDOW_MS, at their bid price)
 * A bid is allowed only while the lease covers its cost, and its cost is taken from the lease at
 * once. So the bids of all workers that may still be billed never exceed what is left of the budget:
 * overspend needs a billing notice that arrives later than BUDGET_WINDOW_MS after its bid, or the
 * worker count to change within one refresh; it is measured in test/tracking/budget.spec.ts.
 * An exhausted campaign stops bidding on every worker within one refresh (default 250 ms).
 * Until the first successful read, and while Redis is away, leases are not renewed: campaigns
 * stop once what they hold is used up (fail safe: budgets are money).
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { RedisService } from '../redis/redis.service';
import { CampaignStore } from '../targeting/campaign-store';
import { convert } from '../targeting/currency';
import type { Candidate } from '../targeting/types';
import type { TrackingPayload } from './payload';

const MICRO = 1_000_000;

// KEYS: bill marker, total spend, daily spend. ARGV: cost in micro-USD, marker TTL s, daily TTL s.
const BILL_SCRIPT = `
if redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[2])) then
  redis.call('INCRBY', KEYS[2], ARGV[1])
  redis.call('INCRBY', KEYS[3], ARGV[1])
  redis.call('EXPIRE', KEYS[3], tonumber(ARGV[3]))
  return 1
end
return 0`;

/** The client with the billing script defined as a command (EVALSHA: the script is sent only when Redis lacks it). */
interface ScriptClient {
  bidderBill(numKeys: number, ...keysAndArgs: string[]): Promise<number>;
}

let dayCache = '';
let dayCacheFrom = 0;
let dayCacheUntil = -1;

/** UTC day as yyyymmdd, the unit of daily budgets and frequency caps. Cached: it is asked on the bid path. */
export function utcDay(ms: number): string {
  if (ms >= dayCacheFrom && ms < dayCacheUntil) return dayCache;
  const start = ms - (((ms % 86_400_000) + 86_400_000) % 86_400_000);
  dayCache = new Date(start).toISOString().slice(0, 10).replace(/-/g, '');
  dayCacheFrom = start;
  dayCacheUntil = start + 86_400_000;
  return dayCache;
}

class CampaignBudget {
  /** USD this worker may still commit to bids until the next refresh. */
  lease = 0;
  /** Bid cost committed per refresh tick: a ring of BUDGET_WINDOW_MS, `sum` its total. */
  readonly ticks: Float64Array;
  private head = 0;
  sum = 0;
  current = 0;
  constructor(
    readonly total: number,
    readonly daily: number,
    windowTicks: number,
  ) {
    this.ticks = new Float64Array(windowTicks);
  }

  /** Ends a tick: what was committed during it joins the window, the oldest tick leaves. */
  slide(): void {
    this.sum += this.current - this.ticks[this.head];
    this.ticks[this.head] = this.current;
    this.head = (this.head + 1) % this.ticks.length;
    this.current = 0;
    // Float drift of the running sum stays far below a micro-dollar, but never let it go negative.
    if (this.sum < 0) this.sum = 0;
  }

  /** Carries the window over to a campaign whose budget changed (a reload). */
  copyWindow(from: CampaignBudget): void {
    for (let i = 0; i < this.ticks.length && i < from.ticks.length; i++) this.ticks[i] = from.ticks[(from.head + i) % from.ticks.length];
    this.head = Math.min(from.ticks.length, this.ticks.length) % this.ticks.length;
    this.sum = 0;
    for (let i = 0; i < this.ticks.length; i++) this.sum += this.ticks[i];
    this.current = from.current;
  }
}

/** The budgeted campaigns of one candidate index and their Redis keys, built once per index (and day). */
interface RefreshPlan {
  readonly index: object;
  readonly ids: string[];
  readonly budgets: Array<{ total: number; daily: number }>;
  readonly totalKeys: string[];
  day: string;
  dailyKeys: string[];
}

@Injectable()
export class SpendService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Spend');
  private readonly budgets = new Map<string, CampaignBudget>();
  private readonly windowTicks: number;
  private timer: NodeJS.Timeout | null = null;
  private refreshing: Promise<void> | null = null;
  private lastRefreshOk = 0;
  private plan: RefreshPlan | null = null;
  readonly stats = { refreshes: 0, refreshErrors: 0, billsCounted: 0, billsDuplicate: 0, blockedBids: 0 };

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly store: CampaignStore,
  ) {
    this.windowTicks = Math.max(1, Math.ceil(config.budgetWindowMs / config.budgetRefreshMs));
    if (!('bidderBill' in redis.client)) redis.client.defineCommand('bidderBill', { lua: BILL_SCRIPT });
  }

  /** Starts the refresh loop; start-up waits (at most 2 s) for the first budget view, so a new worker bids at once. */
  async onApplicationBootstrap(): Promise<void> {
    this.timer = setInterval(() => void this.refresh(), this.config.budgetRefreshMs);
    this.timer.unref();
    this.redis.onReady(() => void this.refresh());
    if (!this.redis.isReady()) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, 2_000);
        this.redis.onReady(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    await this.refresh();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private key(kind: string, ...parts: string[]): string {
    return `bidder:${kind}:${parts.join(':')}`;
  }

  /** Bid path: does the campaign's lease still cover one more bid of this candidate? O(1), no side effect. */
  allows(c: Candidate): boolean {
    if (c.budget === undefined) return true;
    const b = this.budgets.get(c.campaignId);
    // Budgeted but not read yet (first refresh pending, or Redis away since start): wait.
    if (b === undefined || b.lease < c.price / 1000) {
      this.stats.blockedBids++;
      return false;
    }
    return true;
  }

  /** Bid path: takes the cost of a bid just made (at its maximum, the bid price in USD) from the lease. */
  commit(c: Candidate): void {
    const b = this.budgets.get(c.campaignId);
    if (b === undefined) return;
    const cost = c.price / 1000;
    b.lease -= cost;
    b.current += cost;
  }

  /** Reads spend for every budgeted campaign and renews the leases; one at a time (a caller during one gets that one). Never throws. */
  refresh(now = Date.now()): Promise<void> {
    this.refreshing ??= this.doRefresh(now).finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** Campaign ids and keys for the current index and day; rebuilt only when either changes (4 refreshes/s are cheap). */
  private refreshPlan(day: string): RefreshPlan {
    const index = this.store.current();
    let plan = this.plan;
    if (plan === null || plan.index !== index) {
      const campaigns = new Map<string, { total: number; daily: number }>();
      for (const c of index.candidates) if (c.budget) campaigns.set(c.campaignId, c.budget);
      const ids = [...campaigns.keys()];
      plan = {
        index,
        ids,
        budgets: ids.map((id) => campaigns.get(id)!),
        totalKeys: ids.map((id) => this.key('spend', id, 'total')),
        day: '',
        dailyKeys: [],
      };
      this.plan = plan;
    }
    if (plan.day !== day) {
      plan.day = day;
      plan.dailyKeys = plan.ids.map((id) => this.key('spend', id, day));
    }
    return plan;
  }

  private async doRefresh(now: number): Promise<void> {
    try {
      const plan = this.refreshPlan(utcDay(now));
      const ids = plan.ids;
      const r = this.redis.client;
      const workersKey = this.key('workers');
      const pipe = r.pipeline();
      pipe.zadd(workersKey, now, this.config.workerId + ':' + process.pid);
      pipe.zremrangebyscore(workersKey, 0, now - Math.max(3 * this.config.budgetRefreshMs, 2_000));
      pipe.zcard(workersKey);
      pipe.pexpire(workersKey, 60_000);
      if (ids.length > 0) {
        pipe.mget(plan.totalKeys);
        pipe.mget(plan.dailyKeys);
      }
      const res = await pipe.exec();
      if (res === null) throw new Error('pipeline aborted');
      for (const [err] of res) if (err) throw err;
      const workers = Math.max(1, Number(res[2][1]));
      const totals = ids.length > 0 ? (res[4][1] as Array<string | null>) : [];
      const dailies = ids.length > 0 ? (res[5][1] as Array<string | null>) : [];
      for (let i = 0; i < ids.length; i++) {
        const id = ids[i];
        const cfg = plan.budgets[i];
        let b = this.budgets.get(id);
        if (b === undefined || b.total !== cfg.total || b.daily !== cfg.daily) {
          const fresh = new CampaignBudget(cfg.total, cfg.daily, this.windowTicks);
          if (b !== undefined) fresh.copyWindow(b);
          b = fresh;
          this.budgets.set(id, b);
        }
        const spentTotal = Number(totals[i] ?? 0) / MICRO;
        const spentToday = Number(dailies[i] ?? 0) / MICRO;
        const remaining = Math.max(0, Math.min(b.total - spentTotal, b.daily - spentToday));
        b.slide();
        b.lease = Math.max(0, remaining / workers - b.sum);
      }
      if (this.budgets.size > ids.length) {
        const live = new Set(ids);
        for (const id of [...this.budgets.keys()]) if (!live.has(id)) this.budgets.delete(id);
      }
      this.stats.refreshes++;
      this.lastRefreshOk = now;
    } catch (e) {
      this.stats.refreshErrors++;
      if (this.stats.refreshErrors % 100 === 1) this.logger.warn(`budget refresh failed: ${(e as Error).message}`);
    }
  }

  /** Age of the budget view in ms (Infinity before the first successful refresh). */
  staleness(now = Date.now()): number {
    return this.lastRefreshOk === 0 ? Infinity : now - this.lastRefreshOk;
  }

  /**
   * Counts one billing notice: once per bid id across all workers. `priceCpm` is the clearing price
   * in the payload's currency (null when the exchange did not substitute it: we then count our bid
   * price, the most it can cost). Throws when Redis cannot be reached (the caller answers 503 so
   * the exchange retries; the retry is safe because billing is idempotent).
   */
  async bill(p: TrackingPayload, priceCpm: number | null, now = Date.now()): Promise<'counted' | 'duplicate'> {
    const cpm = priceCpm ?? p.price;
    const usd = convert(cpm, p.cur, 'USD') ?? cpm;
    const micros = Math.round((usd / 1000) * MICRO);
    const day = utcDay(now);
    const counted = await (this.redis.client as unknown as ScriptClient).bidderBill(
      3,
      this.key('bill', p.bidId),
      this.key('spend', p.cid, 'total'),
      this.key('spend', p.cid, day),
      String(micros),
      String(this.config.billDedupeTtlSeconds),
      String(3 * 24 * 3600),
    );
    if (counted === 1) this.stats.billsCounted++;
    else this.stats.billsDuplicate++;
    return counted === 1 ? 'counted' : 'duplicate';
  }

  /** Total spend of a campaign in USD (for tests and operators). */
  async spent(campaignId: string): Promise<number> {
    return Number((await this.redis.client.get(this.key('spend', campaignId, 'total'))) ?? 0) / MICRO;
  }
}
