/**
 * Bid shading on the worker (the estimator is shading.ts). Bid path: `price()` reads local state
 * only (a map lookup, a scan of the grid between floor and value, a counter). Notice path: `learn()`
 * records what a win, bill or loss notice says about a shaded bid at once; a 100 ms timer folds it
 * into the estimates; every SHADING_SYNC_S each worker publishes its counts to Redis and reads the
 * other live workers' (those of the budget heartbeat set), so hosts learn from each other's notices.
 *
 * A segment is publisher × ad size × device type × UTC hour of the bid. Requests carry no exchange
 * id, so one bidder endpoint is one market. The segment's device type travels in the notice URLs
 * (`sd=`, outside the signed payload: the exchange, which reports the prices anyway, is the only
 * one who could change it); a notice without it is about a bid that was not shaded and teaches nothing.
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import type { Rates } from '../currency/rates';
import type { BidRequest, Imp } from '../openrtb/types';
import { RedisService } from '../redis/redis.service';
import { DeliveryRedis } from './delivery-redis';
import { CampaignStore } from '../targeting/campaign-store';
import type { Candidate, Match } from '../targeting/types';
import type { NoticedBid } from './noticed-bid';
import { WORKERS_KEY } from './keys';
import { Random } from './random';
import { Clock } from './clock';
import { bestBid, binOf, ContributionCap, Counts, DEFAULT_SHADING, gridBelow, impossibleNotice, logNormalBins, Segment, SourceLimiter, updateSegment, type ShadingSettings } from './shading';

/** Most segments kept; beyond, new segments bid from the pooled estimate and are not learned apart. */
const MAX_SEGMENTS = 20_000;
/** Ad sizes given a small integer for the segment index ((size × 1024 + device type) × 24 + hour stays below 2^30). */
const MAX_SIZE_IDS = 40_000;
const POOL = '*';
const SHARE_KEY = (member: string): string => `bidder:shade:${member}`;
/** OpenRTB loss reasons that say the price lost: 102 lost to a higher bid, 103 lost to a deal. */
const PRICE_LOSS = new Set([102, 103]);
/** Largest share of the pooled estimate (what segments without data bid from) one publisher, or one exchange, may hold. */
export const MAX_POOL_SHARE = 0.25;

export function segmentKey(publisher: string, size: string, deviceType: number, hour: number): string {
  return `${publisher}|${size}|${deviceType}|${hour}`;
}

/** The ad size of a candidate's bid as segments name it. */
export function sizeOf(c: Candidate): string {
  if (c.banner !== null) return `${c.banner.w}x${c.banner.h}`;
  if (c.video !== null) return `v${c.video.w}x${c.video.h}`;
  return 'native';
}

@Injectable()
export class ShadingService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Shading');
  readonly settings: ShadingSettings;
  private readonly segments = new Map<string, Segment>();
  /**
   * The same segments found without a key string: by publisher, then by `segmentCode` (ad size, device
   * type and hour in one small integer). Filled from `segments` on a miss, so a segment made by the
   * sync (by its key) is found here too. Building and hashing the key text took about a third of a
   * shaded price (bench/RESULTS-bid.md).
   */
  private readonly byPublisher = new Map<string, Map<number, Segment>>();
  /** Small integers naming the ad sizes seen (`sizeOf`), and each candidate's, made once per candidate. */
  private readonly sizeIds = new Map<string, number>();
  private readonly candidateSizes = new WeakMap<Candidate, number>();
  private readonly pool: Segment;
  private readonly basePrior: Float64Array;
  private readonly dirty = new Set<Segment>();
  /** Bids already learned from (a win and its bill are one observation). */
  private learned = new Set<string>();
  private timers: NodeJS.Timeout[] = [];
  private readonly member: string;
  private syncing = false;
  readonly enabled: boolean;
  /** One publisher's and one exchange's share of the pool, bounded (MAX_POOL_SHARE). */
  private readonly publisherCap: ContributionCap;
  private readonly sourceCap: ContributionCap;
  private readonly limiter: SourceLimiter;
  /**
   * Notices: learned from; impossible (a price to win on the wrong side of our bid); limited (past
   * the source's SHADING_LEARN_PER_S); capped (learned by their segment but not by the pool: their
   * publisher or exchange holds its bound of it).
   */
  readonly stats = { shaded: 0, explored: 0, learned: 0, impossible: 0, limited: 0, capped: 0, syncs: 0, syncErrors: 0 };

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly db: DeliveryRedis,
    private readonly store: CampaignStore,
    private readonly random: Random,
    private readonly clock: Clock,
  ) {
    this.enabled = config.shading;
    this.settings = { ...DEFAULT_SHADING, explore: config.shadingExplore };
    this.basePrior = logNormalBins(1, 1.5);
    this.pool = new Segment(this.basePrior);
    this.publisherCap = new ContributionCap(MAX_POOL_SHARE, this.settings.priorWeight, config.shadingHalfLifeMs);
    this.sourceCap = new ContributionCap(MAX_POOL_SHARE, this.settings.priorWeight, config.shadingHalfLifeMs, 64);
    this.limiter = new SourceLimiter(config.shadingLearnPerS);
    this.member = `${config.hostId}:${config.workerId}:${process.pid}`;
  }

  onApplicationBootstrap(): void {
    const tick = setInterval(() => this.tick(), 100);
    const sync = setInterval(() => void this.sync(), this.config.shadingSyncMs);
    tick.unref();
    sync.unref();
    this.timers = [tick, sync];
  }

  /** Stops the timers (the simulator calls tick() and sync() on its own clock). */
  stopTimers(): void {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
  }

  onApplicationShutdown(): void {
    this.stopTimers();
  }

  /**
   * Bid path: the price to bid (in the bid's currency), the match's price unless this is an open
   * first-price auction. Never below the imp's floor, never above the value. No I/O.
   */
  price(req: BidRequest, imp: Imp, m: Match, cur: string, rates: Rates, now: number, pressure = 0): number {
    if (!this.enabled || req.at !== 1 || m.dealId !== null) return m.price;
    const c = m.candidate;
    const perUsd = m.price / c.price;
    let floorCur = 0;
    if (imp.bidfloor > 0) floorCur = rates.convert(imp.bidfloor, imp.bidfloorcur, cur) ?? 0;
    const seg = this.segmentOf(req.publisher, c, req.deviceType, hourOf(now));
    const draw = this.random.next();
    const usd = bestBid(seg !== null && seg.weight > 0 ? seg.cdf : this.pool.cdf, c.price, floorCur / perUsd, this.settings, draw, pressure);
    const j = gridBelow(usd);
    if (j >= 0) {
      if (seg !== null) seg.own.bids[j]++;
      this.pool.own.bids[j]++;
    }
    this.stats.shaded++;
    if (draw < this.settings.explore) this.stats.explored++;
    const price = usd * perUsd;
    return price < floorCur ? floorCur : price > m.price ? m.price : price;
  }

  /** The notice query parameter a shaded bid carries (its segment's device type), '' for others. */
  noticeParam(req: BidRequest, m: Match): string {
    return this.enabled && req.at === 1 && m.dealId === null ? `&sd=${req.deviceType}` : '';
  }

  /** The segment of a bid of candidate `c` (null when MAX_SEGMENTS are kept and this is not one of them). */
  private segmentOf(publisher: string, c: Candidate, deviceType: number, hour: number): Segment | null {
    const code = this.segmentCode(c, deviceType, hour);
    let inner = this.byPublisher.get(publisher);
    const found = code < 0 ? undefined : inner?.get(code);
    if (found !== undefined) return found;
    const s = this.segment(segmentKey(publisher, sizeOf(c), deviceType, hour));
    if (s !== null && code >= 0) {
      if (inner === undefined) this.byPublisher.set(publisher, (inner = new Map()));
      inner.set(code, s);
    }
    return s;
  }

  /** Ad size, device type and hour as one small integer; -1 (no code: the key string is used) for a device type outside 0-1023 or a size past MAX_SIZE_IDS. */
  private segmentCode(c: Candidate, deviceType: number, hour: number): number {
    if (!Number.isInteger(deviceType) || deviceType < 0 || deviceType > 1023) return -1;
    let size = this.candidateSizes.get(c);
    if (size === undefined) {
      const name = sizeOf(c);
      size = this.sizeIds.get(name);
      if (size === undefined) {
        // Sizes come from the campaigns; past MAX_SIZE_IDS of them (never, in practice) the rest go by key.
        size = this.sizeIds.size < MAX_SIZE_IDS ? this.sizeIds.size : -1;
        if (size >= 0) this.sizeIds.set(name, size);
      }
      this.candidateSizes.set(c, size);
    }
    // 24 hours × 1024 device types per size: a small integer below 2^30.
    return size < 0 ? -1 : (size * 1024 + deviceType) * 24 + hour;
  }

  private segment(key: string): Segment | null {
    let s = this.segments.get(key);
    if (s === undefined) {
      if (this.segments.size >= MAX_SEGMENTS) return null;
      s = new Segment(this.pool.q);
      this.segments.set(key, s);
    }
    return s;
  }

  /**
   * Notice path: what a win, bill or loss notice of a shaded bid says (the learning API, called by
   * the notice route). `event`: the notice; `p`: the bid as its signed payload names it (bid id,
   * creative, publisher, time, source); `bidUsd`: our bid (USD CPM); `minToWinUsd`: the exact price
   * that had to be beaten, when the exchange told it: `${AUCTION_MIN_TO_WIN}` on any notice, or a
   * loss's clearing price (`${AUCTION_PRICE}` of a loss notice, the winner's price), USD CPM, null
   * when unknown; `deviceType`: the `sd` parameter (null: not a shaded bid, nothing learned);
   * `loss`: the loss reason (null: none given).
   *
   * Refused, and counted in `stats`: a price to win on the wrong side of our bid (impossible), past
   * the source's SHADING_LEARN_PER_S a second (limited). A publisher or exchange past its bound of
   * the pool (MAX_POOL_SHARE) teaches its own segment only (capped). A bid teaches once.
   */
  learn(event: 'win' | 'bill' | 'loss', p: NoticedBid, bidUsd: number, minToWinUsd: number | null, deviceType: number | null, loss: number | null): void {
    if (deviceType === null || !this.enabled) return;
    if (event === 'loss' && loss !== null && !PRICE_LOSS.has(loss)) return;
    if (this.learned.has(p.bidId)) return;
    if (minToWinUsd !== null && impossibleNotice(event, bidUsd, minToWinUsd)) {
      this.stats.impossible++;
      return;
    }
    const c = this.store.current().get(p.crid);
    if (c === undefined) return;
    const j = gridBelow(bidUsd);
    if (j < 0) return;
    const now = this.clock.now();
    const source = p.source ?? 0;
    if (!this.limiter.take(source, now)) {
      this.stats.limited++;
      return;
    }
    if (this.learned.size >= 100_000) this.learned = new Set();
    this.learned.add(p.bidId);
    const seg = this.segmentOf(p.publisher, c, deviceType, hourOf(p.ts));
    const sourceKey = String(source);
    const pooled = this.publisherCap.allows(p.publisher, now) && this.sourceCap.allows(sourceKey, now);
    if (pooled) {
      this.publisherCap.add(p.publisher, now);
      this.sourceCap.add(sourceKey, now);
    } else this.stats.capped++;
    const into: Segment[] = [];
    if (seg !== null) into.push(seg);
    if (pooled) into.push(this.pool);
    for (const s of into) {
      const o = s.own;
      o.answered[j]++;
      if (minToWinUsd !== null) o.exact[binOf(minToWinUsd)]++;
      else if (event === 'loss') o.lost[j]++;
      else o.won[j]++;
      s.pending++;
      this.dirty.add(s);
    }
    this.stats.learned++;
  }

  /** Folds what was learned into the estimates: the pool first (it is every segment's prior). */
  tick(): void {
    if (this.dirty.size === 0) return;
    if (this.dirty.has(this.pool)) updateSegment(this.pool, this.basePrior, this.settings);
    for (const s of this.dirty) if (s !== this.pool) updateSegment(s, this.pool.q, this.settings);
    this.dirty.clear();
  }

  /** Publishes this worker's counts and reads the other live workers' (a few round trips, off the bid path). */
  async sync(): Promise<void> {
    if (!this.enabled || this.syncing || !this.redis.isReady()) return;
    this.syncing = true;
    try {
      const mine: Record<string, number[]> = { [POOL]: this.pool.own.toSparse() };
      for (const [k, s] of this.segments) if (s.weight > 0 || s.pending > 0) mine[k] = s.own.toSparse();
      const c = this.db.client;
      await c.set(SHARE_KEY(this.member), JSON.stringify(mine), 'PX', 3 * this.config.shadingSyncMs + 60_000);
      const members = (await c.zrange(WORKERS_KEY, 0, -1)).filter((m) => m !== this.member);
      const others = new Map<string, Counts>();
      for (const m of members) {
        const text = await c.get(SHARE_KEY(m));
        if (text === null) continue;
        const theirs = JSON.parse(text) as Record<string, number[]>;
        for (const [k, sparse] of Object.entries(theirs)) {
          const got = others.get(k);
          const cs = Counts.fromSparse(sparse);
          if (got === undefined) others.set(k, cs);
          else got.add(cs);
        }
      }
      for (const [k, cs] of others) {
        const s = k === POOL ? this.pool : this.segment(k);
        if (s === null) continue;
        s.others = cs;
        this.dirty.add(s);
      }
      this.stats.syncs++;
    } catch (e) {
      this.stats.syncErrors++;
      if (this.stats.syncErrors % 100 === 1) this.logger.warn(`shading sync failed: ${(e as Error).message}`);
    } finally {
      this.syncing = false;
    }
  }

  /** The estimate a segment bids from (tests, the simulator's report). */
  cdfOf(key: string): Float64Array {
    const s = this.segments.get(key);
    return s !== undefined && s.weight > 0 ? s.cdf : this.pool.cdf;
  }
}

function hourOf(ms: number): number {
  return Math.floor(ms / 3_600_000) % 24;
}
