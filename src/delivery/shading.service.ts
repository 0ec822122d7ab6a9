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
import { CampaignStore } from '../targeting/campaign-store';
import type { Candidate, Match } from '../targeting/types';
import type { NoticedBid } from './noticed-bid';
import { Random } from './random';
import { Clock } from './clock';
import { HELD_ANSWER, HELD_BID, HELD_EXACT, HELD_LOST, HELD_WON, HeldEvents } from './shading-held';
import { ShadingRepository } from './shading.repository';
import { bestBid, binOf, ContributionCap, Counts, DEFAULT_SHADING, gridBelow, gridOfBid, impossibleNotice, logNormalBins, MOVED_KEEP, Segment, SourceLimiter, updateSegment, type ShadingSettings } from './shading';

/** Most segments kept (every level); beyond, a bid or notice uses the finest level that exists. */
const MAX_SEGMENTS = 20_000;
/** Ad sizes given a small integer for the segment index. */
const MAX_SIZE_IDS = 40_000;
const POOL = '*';
/** OpenRTB loss reasons that say the price lost: 102 lost to a higher bid, 103 lost to a deal. */
const PRICE_LOSS = new Set([102, 103]);
/** Largest share of a shared level (what other publishers', or other exchanges', segments fall back to) one publisher, or one exchange, may hold. */
export const MAX_POOL_SHARE = 0.25;
/** A segment is bid from once its weight (decayed observations, its own and its prior's) reaches this; below, its parent is. */
export const MIN_WEIGHT = 20;
/** Most bytes of counts one worker shares per exchange; segments past it are not shared (`stats.unshared`). */
export const MAX_SHARED_BYTES = 1_000_000;
/** Fields read per HSCAN call; segments encoded per turn of the event loop (within TICK_BUDGET_MS); a full write every this many syncs. */
const SCAN_COUNT = 50;
const SLICE = 100;
const FULL_EVERY = 30;
/** Held events let go between two readings of the clock (about 0.1 ms of them). */
const RELEASE_SLICE = 512;
/** The field of a worker's shared state that says when it last wrote it (`<ms>:`, every sync): how recent its state is (shading-held.ts). */
const WRITTEN = '~written';

/** Whether a key has a known segment form (parentKey's: at least 2, 3, 4 or 6 parts for s, p, pf, f), without splitting it. */
function isSegmentKey(key: string): boolean {
  const bar = key.indexOf('|');
  const least = bar === 1 && key.charCodeAt(0) === 115 ? 2 : bar === 1 && key.charCodeAt(0) === 112 ? 3 : bar === 2 && key.startsWith('pf') ? 4 : bar === 1 && key.charCodeAt(0) === 102 ? 6 : 0;
  if (least === 0) return false;
  if (least === 2) return key.indexOf('|', bar + 1) < 0;
  let parts = 2;
  for (let i = key.indexOf('|', bar + 1); i >= 0 && parts < least; i = key.indexOf('|', i + 1)) parts++;
  return parts >= least;
}

/** The time of a shared value (`<ms>:<counts>`, the digits before its colon), NaN when it has none. */
function timeOf(text: string, colon: number): number {
  let at = 0;
  for (let i = 0; i < colon; i++) {
    const d = text.charCodeAt(i) - 48;
    // Not digits alone: as Number() reads it (no writer writes that).
    if (d < 0 || d > 9) return Number(text.slice(0, colon));
    at = at * 10 + d;
  }
  return at;
}

/**
 * What the other workers share of a segment not made here (yet): each one's value (`<ms>:<counts>`)
 * and decay factor, as read by the sync `mark` (`n` of them), and as read by the last complete sync
 * before it (`doneN`), which a segment made while a sync reads takes. Kept from sync to sync and
 * overwritten in place: a value the same as the last sync's keeps its old string, so a later sync
 * keeps (and promotes to the old generation) only what changed.
 */
class PendingShare {
  mark = 0;
  n = 0;
  texts: string[] = [];
  factors: number[] = [];
  doneN = 0;
  doneTexts: string[] = [];
  doneFactors: number[] = [];
}

/** The exchange of a segment key ('' for the pool). */
function sourceOfKey(key: string): string {
  const bar = key.indexOf('|');
  if (bar < 0) return '';
  const end = key.indexOf('|', bar + 1);
  return end < 0 ? key.slice(bar + 1) : key.slice(bar + 1, end);
}

/** The CPU time of this thread (the event loop's), ms: the process's would count the garbage collector's background threads too. */
function cpuNow(): number {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
}

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Smoothing of the notice delays; the least gap between wins' and losses' delays (ms) that makes a source's unanswered bids wins. */
const DELAY_ALPHA = 0.05;
const LATE_WIN_MS = 1_000;
/** unansweredOf: a bid no notice answered is a loss, or a win. */
const SILENT_LOSS = 1;
const LATE_WIN = 2;

/** Segments updated per tick without a notice of their own (7-35 µs each), within TICK_BUDGET_MS. */
const MAX_BID_UPDATES = 300;
/**
 * Wall time a tick may spend re-estimating segments (ms), read after each one: what is left stays
 * dirty, or queued, for the next tick, 100 ms later. A tick after a sync, updating 300 queued segments,
 * took up to 21.5 ms of wall time (6.6 ms of its thread's CPU: the core was shared) in a worker at
 * 1300/s, 9-12 ms in others (code not yet optimised), 1.5-4.5 ms later on. At 7 µs a segment 2 ms is
 * about 285 segments a tick, 2,850 a second: a sync's changes at MAX_SHARED_BYTES (about 12,000
 * segments every SHADING_SYNC_S) are folded in within its period.
 */
export const TICK_BUDGET_MS = 2;
/** Segments a tick updates whatever the time (progress on a core shared with others; at most about 0.6 ms). */
const TICK_MIN_UPDATES = 16;
/**
 * Least time between two updates of a publisher's segment (its level and its floors' level: each is
 * touched by the bids and notices of all its finer segments), unless it is new or a notice told it an
 * exact price to win (the service's clock, ms): one touched more often stays dirty, or queued, and is
 * updated at a later tick with everything it learned meanwhile. The finest segments, which most bids
 * are priced from, are updated at every tick they learned something (each update is also an EM step:
 * fewer would slow how fast their estimates converge); so are the exchange's and the pool's, two
 * segments whose change detection reads their estimate, and those of an exchange whose wins come late
 * (bills only, counted as wins until they come): held, either lost 1-3 points of surplus in the
 * simulator's late-bills market.
 */
export const MIN_UPDATE_MS = 1_000;
const HELD_LEVELS_FROM = 2;
const HELD_LEVELS_TO = 3;
/** A segment whose prices to win are less than this share of its observations bids grid prices (bestBid's `round`). */
const ROUND_EXACT_SHARE = 0.25;
/** An exchange that sent no loss notice for this long is taken to send none, unless EXCHANGES_FILE says (`lossNotices`): its silent bids are losses (learning only). */
const LOSS_SILENCE_MS = 600_000;

/**
 * Levels of the model, finest last: a bid is priced from the finest segment with enough weight, and
 * each segment's prior is its parent's estimate (hierarchical shrinkage).
 *   pool  '*'                                        every notice (each publisher and exchange bounded)
 *   s|<source>                                        an exchange (each publisher bounded)
 *   p|<source>|<publisher>                            a publisher of an exchange
 *   pf|<source>|<publisher>|<floor bucket>            … at a floor
 *   f|<source>|<publisher>|<size>|<device>|<floor bucket>   … an ad size and device type at a floor
 */
export function segmentKey(source: number, publisher: string, size: string, deviceType: number, floorBucket: number): string {
  return `f|${source}|${publisher}|${size}|${deviceType}|${floorBucket}`;
}

/** The key of a segment's parent (null: the pool, or a key of no known form). */
export function parentKey(key: string): string | null {
  const parts = key.split('|');
  switch (parts[0]) {
    case 's':
      return parts.length === 2 ? POOL : null;
    case 'p':
      return parts.length >= 3 ? `s|${parts[1]}` : null;
    case 'pf':
      return parts.length >= 4 ? `p|${parts[1]}|${parts.slice(2, -1).join('|')}` : null;
    case 'f':
      return parts.length >= 6 ? `pf|${parts[1]}|${parts.slice(2, -3).join('|')}|${parts[parts.length - 1]}` : null;
    default:
      return null;
  }
}

/** The floor as a feature: buckets about 25 % wide (three grid steps), 0 without a floor. */
export function floorBucket(floorUsd: number): number {
  return floorUsd > 0 ? 1 + Math.floor((gridBelow(floorUsd) + 1) / 3) : 0;
}

/** Device types in segments: 0-14 as they are, anything else 15. */
const deviceOf = (d: number): number => (Number.isInteger(d) && d >= 0 && d < 15 ? d : 15);

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
   * The finest segments found without a key string: by publisher, then by a number made of ad size,
   * device type, source and floor bucket (`segmentCode`). Filled from `segments` on a miss, so a
   * segment made by the sync (by its key) is found here too. Building and hashing a key text per bid
   * took about a third of a shaded price (bench/RESULTS-bid.md).
   */
  private readonly byPublisher = new Map<string, Map<number, Segment>>();
  /** Small integers naming the ad sizes seen (`sizeOf`), and each candidate's, made once per candidate. */
  private readonly sizeIds = new Map<string, number>();
  private readonly candidateSizes = new WeakMap<Candidate, number>();
  private readonly pool: Segment;
  private readonly basePrior: Float32Array;
  /** Segments to update at the next tick, by level (coarse first: each is its children's prior). */
  private readonly dirty: Array<Set<Segment>> = [new Set(), new Set(), new Set(), new Set(), new Set()];
  /** Segments to update without a notice of their own (their bids teach, or the other workers' counts changed), at most MAX_BID_UPDATES a tick. */
  private bidQueue: Segment[] = [];
  /** Segments a notice told an exact price to win since the last tick: updated at the next one, whenever they last were. */
  private readonly exactDirty = new Set<Segment>();
  /** Bids already learned from (a win and its bill are one observation). */
  private learned = new Set<string>();
  private timers: NodeJS.Timeout[] = [];
  private readonly member: string;
  private syncing = false;
  readonly enabled: boolean;
  /** One publisher's share of its exchange's level and of the pool, and one exchange's of the pool, bounded (MAX_POOL_SHARE). */
  private readonly publisherCap: ContributionCap;
  private readonly sourcePublisherCaps = new Map<number, ContributionCap>();
  private readonly sourceCap: ContributionCap;
  private readonly limiter: SourceLimiter;
  /** When each source (exchange index) first and last sent a loss notice (ms). */
  private readonly firstLoss = new Float64Array(64).fill(Infinity);
  private readonly lastLoss = new Float64Array(64).fill(-Infinity);
  /** When each source last sent this worker a win notice (ms): a source that sends them teaches a win by its win notice, never by its bill. */
  private readonly lastWin = new Float64Array(64).fill(-Infinity);
  /** Per source, whether it sends loss notices as EXCHANGES_FILE says (`lossNotices`): 1 it does, 0 it sends none, -1 learned (LOSS_SILENCE_MS). */
  private readonly sendsLosses = new Int8Array(64).fill(-1);
  /** The `sd` parameter of the last shaded price (its segment's device type and floor bucket), for noticeParam. */
  private sd = 0;
  /**
   * Notices: learned from; impossible (a price to win on the wrong side of our bid); limited (past
   * the source's SHADING_LEARN_PER_S); capped (learned by their publisher's segments but not by the
   * shared levels: their publisher or exchange holds its bound of them). Moves: a segment's market
   * moved (change detection) and it forgot most of what it knew. Ticks cut: ticks that reached
   * TICK_BUDGET_MS with segments left to update.
   */
  readonly stats = { shaded: 0, explored: 0, learned: 0, impossible: 0, limited: 0, capped: 0, moves: 0, syncs: 0, syncErrors: 0, unshared: 0, syncSliceMaxMs: 0, ticksCut: 0 };
  private syncMark = 0;
  /**
   * TICK_BUDGET_MS; the simulator sets Infinity: it models the market, not a worker's CPU, so a seed
   * gives the same run on any machine (MAX_BID_UPDATES still bounds its ticks).
   */
  tickBudgetMs = TICK_BUDGET_MS;
  /** Per source: the smoothed delay of its win (or bill) notices and of its loss notices after the bid (ms; NaN: none yet). */
  private readonly winDelay = new Float64Array(64).fill(NaN);
  private readonly lossDelay = new Float64Array(64).fill(NaN);
  /**
   * What the other workers share of segments not made here yet (key → each worker's value and its
   * decay factor, PendingShare): a segment is made when a bid or notice first needs it, taking its
   * shared counts from here, so a sync allocates no segment (thousands made at once by a worker's
   * first sync were tens of ms of garbage collection on its event loop).
   */
  private readonly sharedPending = new Map<string, PendingShare>();
  /** The mark of the last sync that read every other worker's state (syncMark is the one reading, or the last). */
  private sharedMark = 0;
  /** The segments made, in order, and their keys (the sync walks them by index across turns). */
  private readonly made: Segment[] = [];
  private readonly madeKeys: string[] = [];
  /**
   * With other workers: the bids and notices of exchanges whose wins come late, held out of this
   * worker's estimates until the others' shared state is as recent (shading-held.ts); null alone.
   */
  private held: HeldEvents | null = null;
  /** Bytes of this worker's shared state per exchange (MAX_SHARED_BYTES). */
  private readonly sharedBytes = new Map<string, number>();

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly repo: ShadingRepository,
    private readonly store: CampaignStore,
    private readonly random: Random,
    private readonly clock: Clock,
  ) {
    this.enabled = config.shading;
    this.settings = { ...DEFAULT_SHADING, explore: config.shadingExplore, halfLifeMs: config.shadingHalfLifeMs };
    this.basePrior = logNormalBins(1, 1.5);
    this.pool = new Segment(this.basePrior);
    this.publisherCap = new ContributionCap(MAX_POOL_SHARE, this.settings.priorWeight, config.shadingHalfLifeMs);
    this.sourceCap = new ContributionCap(MAX_POOL_SHARE, this.settings.priorWeight, config.shadingHalfLifeMs, 64);
    this.limiter = new SourceLimiter(config.shadingLearnPerS);
    this.member = `${config.hostId}:${config.workerId}:${process.pid}`;
    (config.exchanges ?? []).forEach((e, i) => {
      if (i + 1 < 64 && e.lossNotices !== 'learned') this.sendsLosses[i + 1] = e.lossNotices ? 1 : 0;
    });
  }

  /** Whether a source (exchange index) sends no loss notices: as EXCHANGES_FILE says, else after LOSS_SILENCE_MS without one (from start, until its first). */
  private silentSource(source: number, now: number): boolean {
    const i = source >= 0 && source < 64 ? source : 63;
    const said = this.sendsLosses[i];
    return said < 0 ? now - this.lastLoss[i] >= LOSS_SILENCE_MS : said === 0;
  }

  /**
   * What a bid of `source` that no notice answered (yet) says: SILENT_LOSS for a source that sends no
   * loss notices; LATE_WIN for one that sends them and whose wins come later than its losses by more
   * than LATE_WIN_MS (bills only, late), or none yet: a bid its loss notice did not answer is a win
   * whose bill is on its way; nothing for the others.
   */
  private unansweredOf(source: number, now: number): number {
    if (this.silentSource(source, now)) return SILENT_LOSS;
    const i = source >= 0 && source < 64 ? source : 63;
    const loss = this.lossDelay[i];
    if (Number.isNaN(loss)) return 0;
    const win = this.winDelay[i];
    return Number.isNaN(win) || win > loss + LATE_WIN_MS ? LATE_WIN : 0;
  }

  /**
   * Whether this worker holds a bid of `source`, and the notices about it (shading-held.ts): with other
   * workers, for a source whose wins come late, once its losses have come without a win for longer
   * than LATE_WIN_MS (a source that sends win notices is not taken for one in the moment between its
   * first loss notice and its first win notice).
   */
  private holds(source: number, unanswered: number, now: number): boolean {
    return this.held !== null && unanswered === LATE_WIN && now - this.firstLoss[source >= 0 && source < 64 ? source : 63] >= LATE_WIN_MS;
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
    const floorUsd = floorCur / perUsd;
    const fb = floorBucket(floorUsd);
    const device = deviceOf(req.deviceType);
    this.sd = device + 16 * fb;
    const seg = this.segmentOf(req.source, req.publisher, c, device, fb);
    // The finest level with enough weight.
    let from: Segment = seg ?? this.pool;
    while (from.weight < MIN_WEIGHT && from.parent !== null) from = from.parent;
    const draw = this.random.next();
    const s = this.settings;
    const explore = (s.explore * s.exploreWeight) / (s.exploreWeight + from.exactWeight);
    // A segment that learns mostly from wins and losses (few prices to win) bids grid prices (bestBid's `round`).
    const usd = bestBid(from.cdf, c.price, floorUsd, s, draw, pressure, explore, from.exactWeight < ROUND_EXACT_SHARE * from.weight);
    const j = gridBelow(usd);
    if (j >= 0) {
      // A source without loss notices, or with late wins: the bids themselves teach (unanswered, they are losses, or wins), so their segments are updated (a flag and, once per tick, a push).
      const unanswered = this.unansweredOf(req.source, now);
      for (let t: Segment | null = seg ?? this.pool; t !== null; t = t.parent) {
        t.own.bids[j]++;
        if (unanswered !== 0 && t.level >= 2) {
          t.silent = unanswered === SILENT_LOSS;
          t.lateWins = unanswered === LATE_WIN;
          t.changed = true;
          if (!t.queued) this.queueUpdate(t);
        }
      }
      if (seg !== null && this.holds(req.source, unanswered, now)) this.held!.hold(seg, HELD_BID, j, 0, now, s.halfLifeMs);
    }
    this.stats.shaded++;
    if (draw < explore) this.stats.explored++;
    const price = usd * perUsd;
    return price < floorCur ? floorCur : price > m.price ? m.price : price;
  }

  /** The notice query parameter a shaded bid carries (its segment's device type and floor bucket, of the price just made), '' for others. */
  noticeParam(req: BidRequest, m: Match): string {
    return this.enabled && req.at === 1 && m.dealId === null ? `&sd=${this.sd}` : '';
  }

  /** The finest segment of a bid of candidate `c` (null when MAX_SEGMENTS are kept and it is not one of them). */
  private segmentOf(source: number, publisher: string, c: Candidate, device: number, fb: number): Segment | null {
    const code = this.segmentCode(c, device, source, fb);
    let inner = this.byPublisher.get(publisher);
    const found = code < 0 ? undefined : inner?.get(code);
    if (found !== undefined) return found;
    const s = this.segment(segmentKey(source, publisher, sizeOf(c), device, fb));
    if (s !== null && code >= 0 && s.level === 4) {
      if (inner === undefined) this.byPublisher.set(publisher, (inner = new Map()));
      inner.set(code, s);
    }
    return s;
  }

  /** Ad size, device type (0-15), source (0-63) and floor bucket (0-63) as one integer; -1 (the key string is used) for a size past MAX_SIZE_IDS. */
  private segmentCode(c: Candidate, device: number, source: number, fb: number): number {
    let size = this.candidateSizes.get(c);
    if (size === undefined) {
      const name = sizeOf(c);
      size = this.sizeIds.get(name);
      if (size === undefined) {
        size = this.sizeIds.size < MAX_SIZE_IDS ? this.sizeIds.size : -1;
        if (size >= 0) this.sizeIds.set(name, size);
      }
      this.candidateSizes.set(c, size);
    }
    if (size < 0 || !(source >= 0 && source < 64) || fb > 63) return -1;
    // Below 40 000 × 16 × 64 × 64 < 2^32.
    return ((size * 16 + device) * 64 + source) * 64 + fb;
  }

  /** The segment of `key`, made (with its parents) when missing; when MAX_SEGMENTS are kept, the finest of its parents that exists. */
  private segment(key: string): Segment | null {
    if (key === POOL) return this.pool;
    const s = this.segments.get(key);
    if (s !== undefined) return s;
    const up = parentKey(key);
    if (up === null) return null;
    const parent = this.segment(up) ?? this.pool;
    if (this.segments.size >= MAX_SEGMENTS) return parent;
    const made = new Segment(parent.q, parent, parent.level + 1);
    this.segments.set(key, made);
    this.made.push(made);
    this.madeKeys.push(key);
    const shared = this.sharedPending.get(key);
    if (shared !== undefined) {
      // The other workers' counts of the last complete sync; estimated at the next tick (until then its parent prices its bids).
      const done = shared.mark === this.sharedMark;
      const n = done ? shared.n : shared.doneN;
      if (n > 0) {
        const texts = done ? shared.texts : shared.doneTexts;
        const factors = done ? shared.factors : shared.doneFactors;
        const others = new Counts();
        for (let i = 0; i < n; i++) others.addCompact(texts[i], factors[i], texts[i].indexOf(':') + 1);
        made.others = others;
        this.queueUpdate(made);
      }
    }
    return made;
  }

  /**
   * Notice path: what a win, bill or loss notice of a shaded bid says (the learning API, called by
   * the notice route). `event`: the notice; `p`: the bid as its signed payload names it (bid id,
   * creative, publisher, time, source); `bidUsd`: our bid (USD CPM); `minToWinUsd`: the exact price
   * that had to be beaten, when the exchange told it: `${AUCTION_MIN_TO_WIN}` on any notice, or a
   * loss's clearing price (`${AUCTION_PRICE}` of a loss notice, the winner's price), USD CPM, null
   * when unknown; `sd`: the notice's `sd` parameter (the bid's segment: device type + 16 × floor
   * bucket; null: not a shaded bid, nothing learned); `loss`: the loss reason (null: none given).
   *
   * Refused, and counted in `stats`: a price to win on the wrong side of our bid (impossible), past
   * the source's SHADING_LEARN_PER_S a second (limited). A publisher or exchange past its bound of
   * a shared level (MAX_POOL_SHARE) teaches its publisher's segments only (capped). A bid teaches once.
   */
  learn(event: 'win' | 'bill' | 'loss', p: NoticedBid, bidUsd: number, minToWinUsd: number | null, sd: number | null, loss: number | null): void {
    if (sd === null || !this.enabled) return;
    const now = this.clock.now();
    const source = p.source ?? 0;
    const si = source >= 0 && source < 64 ? source : 63;
    if (event === 'loss') {
      this.lastLoss[si] = now;
      if (now < this.firstLoss[si]) this.firstLoss[si] = now;
    }
    else if (event === 'win') this.lastWin[si] = now;
    // A bill from a source that sends win notices: its win notice teaches the win, wherever it
    // arrived (with several workers, the win notice and the bill of one bid often reach different
    // ones, and `learned` is this worker's: the win would be taught twice, and the bill's delay read
    // as a late win). A bill after its win here: nothing new either.
    if ((event === 'bill' && now - this.lastWin[si] < LOSS_SILENCE_MS) || this.learned.has(p.bidId)) return;
    // How late each kind of notice comes from this exchange (wins late and losses at once: its unanswered bids are wins, `late-bills`).
    const delays = event === 'loss' ? this.lossDelay : this.winDelay;
    const delay = Math.min(600_000, Math.max(0, now - p.ts));
    delays[si] = Number.isNaN(delays[si]) ? delay : delays[si] + DELAY_ALPHA * (delay - delays[si]);
    if (minToWinUsd !== null && impossibleNotice(event, bidUsd, minToWinUsd)) {
      this.stats.impossible++;
      return;
    }
    const c = this.store.current().get(p.crid);
    if (c === undefined) return;
    const j = gridOfBid(bidUsd);
    if (j < 0) return;
    if (this.learned.size >= 100_000) this.learned = new Set();
    this.learned.add(p.bidId);
    const fine = this.segmentOf(source, p.publisher, c, sd % 16, Math.floor(sd / 16)) ?? this.pool;
    const limited = !this.limiter.take(source, now);
    // Not a price loss, or past the source's rate: the bid was answered (it is no silent loss), nothing more.
    const teaches = !limited && !(event === 'loss' && loss !== null && !PRICE_LOSS.has(loss));
    if (limited) this.stats.limited++;
    const exact = teaches && minToWinUsd !== null ? binOf(minToWinUsd) : -1;
    const won = event !== 'loss';
    const unanswered = this.unansweredOf(source, now);
    // Without loss notices from this source, wins alone would read as a market that moved down; with late wins, losses first as one that moved up.
    const detect = exact >= 0 || unanswered === 0;
    let shared = true;
    for (let s: Segment | null = fine; s !== null; s = s.parent) {
      if (teaches && s.level <= 1 && shared) {
        // A shared level: within the publisher's (and, for the pool, the exchange's) bound.
        shared = s.level === 1 ? this.withinBound(this.publisherCapOf(source), p.publisher, now) : this.withinBound(this.publisherCap, p.publisher, now) && this.withinBound(this.sourceCap, String(source), now);
        if (!shared) this.stats.capped++;
      }
      const o = s.own;
      o.answered[j]++;
      // Bids never answered are losses where the source sends no loss notices, in its publishers' segments only (bids alone must not teach the shared levels).
      s.silent = s.level >= 2 && unanswered === SILENT_LOSS;
      s.lateWins = s.level >= 2 && unanswered === LATE_WIN;
      if (!teaches || !shared) continue;
      if (detect && s.observe(exact, j, won)) {
        this.stats.moves++;
        s.movedAt = now;
      }
      if (exact >= 0) o.exact[exact]++;
      else if (won) o.won[j]++;
      else o.lost[j]++;
      s.changed = true;
      this.dirty[s.level].add(s);
      if (exact >= 0) this.exactDirty.add(s);
    }
    if (this.holds(source, unanswered, now)) {
      const taught = !teaches ? 0 : exact >= 0 ? HELD_EXACT : won ? HELD_WON : HELD_LOST;
      this.held!.hold(fine, HELD_ANSWER | taught, j, exact, now, this.settings.halfLifeMs);
    }
    if (teaches) this.stats.learned++;
  }

  private publisherCapOf(source: number): ContributionCap {
    let cap = this.sourcePublisherCaps.get(source);
    if (cap === undefined) this.sourcePublisherCaps.set(source, (cap = new ContributionCap(MAX_POOL_SHARE, this.settings.priorWeight, this.settings.halfLifeMs)));
    return cap;
  }

  private withinBound(cap: ContributionCap, key: string, now: number): boolean {
    if (!cap.allows(key, now)) return false;
    cap.add(key, now);
    return true;
  }

  /**
   * Folds what was learned into the estimates, coarse levels first (each is its children's prior): a
   * publisher's segment at most once per MIN_UPDATE_MS, unless new or told an exact price (`due`); the
   * others stay dirty, or queued, for a later tick.
   */
  tick(): void {
    const now = this.clock.now();
    const until = performance.now() + this.tickBudgetMs;
    let n = 0;
    for (const level of this.dirty) {
      for (const s of level) {
        if (!this.due(s, now)) continue;
        updateSegment(s, s.parent === null ? this.basePrior : s.parent.q, this.settings, now);
        s.queued = false;
        level.delete(s);
        this.exactDirty.delete(s);
        if (++n >= TICK_MIN_UPDATES && performance.now() >= until) {
          // The rest at the next tick, coarse levels first again; those told an exact price still due then.
          if (this.backlog() > 0) this.stats.ticksCut++;
          return;
        }
      }
    }
    this.exactDirty.clear();
    if (this.bidQueue.length === 0) return;
    const queue = this.bidQueue;
    // Those not due keep their place, before the ones not reached.
    const later: Segment[] = [];
    let updated = 0;
    let i = 0;
    while (i < queue.length && updated < MAX_BID_UPDATES) {
      const s = queue[i++];
      if (!s.queued) continue;
      if (!this.due(s, now)) {
        later.push(s);
        continue;
      }
      updateSegment(s, s.parent === null ? this.basePrior : s.parent.q, this.settings, now);
      s.queued = false;
      updated++;
      if (++n >= TICK_MIN_UPDATES && performance.now() >= until) {
        if (i < queue.length) this.stats.ticksCut++;
        break;
      }
    }
    this.bidQueue = i === queue.length ? later : later.length === 0 ? queue.slice(i) : later.concat(queue.slice(i));
  }

  /** Segments waiting for a tick to re-estimate them (dirty or queued; a segment both counts twice). */
  backlog(): number {
    let n = this.bidQueue.length;
    for (const level of this.dirty) n += level.size;
    return n;
  }

  /** Whether a segment is updated at this tick: not a publisher's (MIN_UPDATE_MS), of an exchange whose wins come late, new (never estimated), told an exact price, or last updated MIN_UPDATE_MS ago or more (or in what is now the future: the clock went back). */
  private due(s: Segment, now: number): boolean {
    if (s.level < HELD_LEVELS_FROM || s.level > HELD_LEVELS_TO || s.lateWins) return true;
    const since = now - s.at;
    return Number.isNaN(since) || since >= MIN_UPDATE_MS || since < 0 || this.exactDirty.has(s);
  }

  /**
   * Sharing, off the bid path, through the ShadingRepository. Writes: the segments that learned
   * something since the last sync (a delta: those fields only) into this worker's shared state
   * (field: the segment's key; value: the time and the compact counts), at most MAX_SHARED_BYTES per
   * exchange (segments past it are not shared, counted), everything again every FULL_EVERY syncs (a
   * state lost with Redis comes back). Reads: the other live workers' states in pages of about
   * SCAN_COUNT fields, decoding each batch in its own turn of the event loop (`stats.syncSliceMaxMs`: the
   * longest), decayed from their time to now.
   */
  async sync(): Promise<void> {
    if (!this.enabled || this.syncing || !this.repo.isReady()) return;
    this.syncing = true;
    try {
      const now = this.clock.now();
      const full = this.stats.syncs % FULL_EVERY === 0;
      const changed: Record<string, string> = {};
      // The pool, then the segments made (by index: those made meanwhile are walked too).
      for (let i = -1; i < this.made.length; ) {
        const t0 = cpuNow();
        const until = performance.now() + TICK_BUDGET_MS;
        for (const end = Math.min(this.made.length, i + SLICE); i < end && performance.now() < until; i++) {
          const seg = i < 0 ? this.pool : this.made[i];
          // Nothing learned is not shared; what is held out of this worker's estimate (weight 0 here) is.
          if (!(seg.changed || (full && seg.sharedBytes > 0)) || (seg.weight <= 0 && seg.heldEvents === 0)) continue;
          seg.changed = false;
          const k = i < 0 ? POOL : this.madeKeys[i];
          const text = `${Math.round(now)}:${seg.own.toCompact()}`;
          const bytes = k.length + text.length;
          const source = sourceOfKey(k);
          const used = this.sharedBytes.get(source) ?? 0;
          if (seg.sharedBytes === 0 && used + bytes > MAX_SHARED_BYTES) {
            this.stats.unshared++;
            continue;
          }
          this.sharedBytes.set(source, used - seg.sharedBytes + bytes);
          seg.sharedBytes = bytes;
          changed[k] = text;
        }
        this.slice(t0);
        await yieldTurn();
      }
      changed[WRITTEN] = `${Math.round(now)}:`;
      await this.repo.publish(this.member, changed, this.sharedTtlMs());
      const members = await this.repo.others(this.member);
      // Each segment's other workers' counts are summed in place, into a second buffer kept from sync
      // to sync; those of segments not made here go to their PendingShare, also kept: a later sync
      // allocates little besides the replies (whose strings die young unless their value changed).
      const mark = ++this.syncMark;
      // The oldest of the other workers' latest writes: what this worker held since can be let go.
      let written = Infinity;
      for (const m of members) {
        let latest = -Infinity;
        let cursor = '0';
        do {
          const [next, flat] = await this.repo.scan(m, cursor, SCAN_COUNT);
          cursor = next;
          const t0 = cpuNow();
          for (let i = 0; i + 1 < flat.length; i += 2) {
            const key = flat[i];
            const text = flat[i + 1];
            const colon = text.indexOf(':');
            const at = colon < 0 ? NaN : timeOf(text, colon);
            if (!Number.isFinite(at)) continue;
            if (at > latest) latest = at;
            if (key === WRITTEN) continue;
            const f = Math.pow(0.5, Math.max(0, now - at) / this.settings.halfLifeMs);
            const seg = key === POOL ? this.pool : this.segments.get(key);
            // Counts another worker wrote before this segment saw its market move are as old as what it forgot then.
            if (seg !== undefined) this.addShared(seg, text, colon + 1, at < seg.movedAt ? f * MOVED_KEEP : f, mark);
            else this.addPending(key, text, f, mark);
          }
          this.slice(t0);
          await yieldTurn();
        } while (cursor !== '0');
        // A live worker that has written nothing yet is not waited for: holding everything until its
        // first write cost more than it mended (late-bills, seeds 1-10: 94.8 % of the oracle's surplus
        // against 95.4 %), as a worker holding nothing of its first moments learns sooner.
        if (latest > -Infinity && latest < written) written = latest;
      }
      // Segments made while this sync read (a bid or notice needed them) take this sync's counts;
      // what no other worker shares any more is dropped.
      const t0 = cpuNow();
      this.sharedPending.forEach((p, key) => {
        if (p.mark === mark) {
          const seg = this.segments.get(key);
          if (seg === undefined) {
            // Fewer workers share it than before: the strings of those gone are let go.
            if (p.texts.length > p.n) p.texts.length = p.factors.length = p.n;
            return;
          }
          for (let i = 0; i < p.n; i++) this.addShared(seg, p.texts[i], p.texts[i].indexOf(':') + 1, p.factors[i], mark);
        }
        this.sharedPending.delete(key);
      });
      this.sharedMark = mark;
      // The segments this sync read take its sums; those no other worker shares any more (it stopped,
      // or forgot them) drop what they had. Both are updated at the next ticks, at most
      // MAX_BID_UPDATES a tick (thousands at once would stall one), queued in the order the segments
      // were made: the order of the pages is the store's (Redis hashes with a seed each process
      // draws at start), and with it a seed of the simulator gave different runs.
      for (let i = -1; i < this.made.length; i++) {
        const seg = i < 0 ? this.pool : this.made[i];
        if (seg.syncMark === mark) {
          const previous = seg.others;
          seg.others = seg.othersNext;
          seg.othersNext = previous;
          this.queueUpdate(seg);
        } else if (seg.others !== null) {
          seg.othersNext = seg.others;
          seg.others = null;
          this.queueUpdate(seg);
        }
      }
      this.slice(t0);
      // Held events the others' state now covers count from now on, and those older than a shared
      // state lives (a worker that stopped writing); alone, nothing is held. In turns of at most
      // TICK_BUDGET_MS.
      const held = this.held;
      if (held !== null) {
        const cutoff = Math.max(written, now - this.sharedTtlMs());
        const touched = (seg: Segment): void => this.queueUpdate(seg);
        for (let more = true; more; ) {
          const t1 = cpuNow();
          const until = performance.now() + TICK_BUDGET_MS;
          do more = held.release(cutoff, this.settings.halfLifeMs, touched, RELEASE_SLICE);
          while (more && performance.now() < until);
          this.slice(t1);
          if (more) await yieldTurn();
        }
      }
      if (written === Infinity) this.held = null;
      else this.held ??= new HeldEvents();
      this.stats.syncs++;
    } catch (e) {
      this.stats.syncErrors++;
      if (this.stats.syncErrors % 100 === 1) this.logger.warn(`shading sync failed: ${(e as Error).message}`);
    } finally {
      this.syncing = false;
    }
  }

  /** Adds a worker's shared value (its counts from `from`, decay `f`) to a segment's sum of the sync `mark` (its othersNext, cleared first). */
  private addShared(seg: Segment, text: string, from: number, f: number, mark: number): void {
    if (seg.syncMark !== mark) {
      seg.syncMark = mark;
      if (seg.othersNext === null) seg.othersNext = new Counts();
      else seg.othersNext.scale(0);
    }
    seg.othersNext!.addCompact(text, f, from);
  }

  /** Keeps a worker's shared value of a segment not made here, as the sync `mark` read it (PendingShare). */
  private addPending(key: string, text: string, f: number, mark: number): void {
    let p = this.sharedPending.get(key);
    if (p === undefined) {
      if (this.sharedPending.size >= MAX_SEGMENTS || !isSegmentKey(key)) return;
      this.sharedPending.set(key, (p = new PendingShare()));
    }
    if (p.mark !== mark) {
      // This sync's first value of the segment: what the last complete sync read becomes `done`
      // (a PendingShare last read by a sync that failed keeps the `done` it had).
      if (p.mark === this.sharedMark) {
        const texts = p.doneTexts;
        const factors = p.doneFactors;
        p.doneTexts = p.texts;
        p.doneFactors = p.factors;
        p.doneN = p.n;
        p.texts = texts;
        p.factors = factors;
      }
      p.mark = mark;
      p.n = 0;
    }
    const i = p.n++;
    // The same value as the last sync's (the worker's order is the same while no worker comes or goes): its old string.
    p.texts[i] = i < p.doneN && p.doneTexts[i] === text ? p.doneTexts[i] : text;
    p.factors[i] = f;
  }

  /** How long a worker's shared state lives after its last write (ms). */
  private sharedTtlMs(): number {
    return 3 * this.config.shadingSyncMs + 60_000;
  }

  /** Queues a segment for an update at the next ticks (bounded per tick). */
  private queueUpdate(seg: Segment): void {
    if (seg.queued) return;
    seg.queued = true;
    this.bidQueue.push(seg);
  }

  /**
   * The longest turn of the event loop the sync took, in CPU time (the event loop thread's, from
   * `t0`, a `cpuNow()`): what it stalls a worker that has its core to itself; wall time on a shared machine
   * also counts the time the system gave to others.
   */
  private slice(t0: number): void {
    const ms = cpuNow() - t0;
    if (ms > this.stats.syncSliceMaxMs) this.stats.syncSliceMaxMs = ms;
  }

  /** The estimate a segment bids from (tests, the simulator's report). */
  cdfOf(key: string): Float32Array {
    const s = this.segments.get(key) ?? (parentKey(key) !== null ? this.segment(key) : null);
    if (s === null) return this.pool.cdf;
    // Made now, or waiting for a tick: estimated at once, coarse levels first.
    const chain: Segment[] = [];
    for (let t: Segment | null = s; t !== null; t = t.parent) if (t.queued || this.dirty[t.level].has(t)) chain.push(t);
    for (let i = chain.length - 1; i >= 0; i--) {
      const t = chain[i];
      updateSegment(t, t.parent === null ? this.basePrior : t.parent.q, this.settings, this.clock.now());
      t.queued = false;
      this.dirty[t.level].delete(t);
    }
    return s.weight > 0 ? s.cdf : this.pool.cdf;
  }
}
