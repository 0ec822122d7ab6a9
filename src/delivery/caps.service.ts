/**
 * Frequency caps: impressions per user per campaign per UTC day, counted in Redis from impression
 * trackers (once per bid: a replayed impression URL counts nothing), enforced on the bid path from a
 * local set of (campaign, user) pairs that reached their cap. Users are known by their user key (a
 * keyed hash of their id, see src/privacy), never by a raw id.
 *
 * The bid path never touches Redis, and most users never cost a Redis read at all: a worker learns
 * only of the pairs that are capped. The worker that records the impression which reaches a cap adds
 * the pair to a per-day Redis set and PUBLISHes it; every worker adds published pairs to its local
 * set, and loads the whole day's set when it starts and whenever its subscription is made again (a
 * reconnection, or on a Redis Cluster another node after its node failed: src/redis/subscriber.ts).
 * So a cap can be exceeded only by impressions of bids made before the news arrived (impressions
 * are counted in 50 ms batches, then pub/sub latency: milliseconds) or while a worker's subscriber
 * was away (until it reconnects and reloads). On a cluster every key here is one key per command
 * (a user's counts and markers share the user's hash tag), and PUBLISH reaches every node.
 */
import { type BeforeApplicationShutdown, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { RedisBatch } from '../redis/batch';
import { CampaignStore } from '../targeting/campaign-store';
import type { Candidate } from '../targeting/types';
import { CapsRepository, type CapNews, type CappedPair } from './caps.repository';
import { Clock } from './clock';
import { utcDay } from './utc-day';

/** Capped pairs held locally; past this the oldest are forgotten (they may then bid once more). */
const MAX_CAPPED = 1_000_000;

@Injectable()
export class CapsService implements OnApplicationBootstrap, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('FreqCaps');
  /** `${campaignId}\u0000${userId}` of today's capped pairs. */
  private capped = new Set<string>();
  private day = '';
  private sub: CapNews | null = null;
  private retry: NodeJS.Timeout | null = null;
  private reloadPending = false;
  private pending: Array<{ day: string; bidId: string; userKey: string; campaignId: string; crid: string; resolve: (counted: boolean) => void; reject: (e: unknown) => void }> =
    [];
  /** Whether a flush of `pending` is queued on the batch. */
  private flushQueued = false;
  /** `impressions`: counted; `repeated`: seen before for the same bid (not counted again). */
  readonly stats = { impressions: 0, repeated: 0, cappedPairs: 0, reloads: 0, errors: 0, blockedBids: 0 };

  constructor(
    private readonly db: CapsRepository,
    private readonly store: CampaignStore,
    private readonly clock: Clock,
    private readonly batch: RedisBatch,
  ) {}

  /** Subscribes to cap news and loads today's capped pairs (start-up waits at most 2 s for it). */
  async onApplicationBootstrap(): Promise<void> {
    // Every subscription (the first, and each one after a lost connection) reloads the day's set
    // once Redis has confirmed it: news published while this worker was away is in the set.
    const sub = this.db.subscribe({
      message: (text) => this.onNews(text),
      subscribed: () => this.reloadWhenReady(),
      error: () => {
        this.stats.errors++;
      },
    });
    this.sub = sub;
    this.db.onReady(() => {
      if (!this.reloadPending) return;
      this.reloadPending = false;
      void this.reload();
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([sub.firstSubscription, new Promise((resolve) => (timer = setTimeout(resolve, 2_000)))]);
    clearTimeout(timer);
  }

  /** Reloads now, or once the client is up (the subscription may come first, e.g. at start-up). */
  private reloadWhenReady(): void {
    if (this.db.isReady()) {
      void this.reload();
      return;
    }
    this.reloadPending = true;
  }

  /** Impressions still gathering are counted while Redis is still there (every onApplicationShutdown runs after this). */
  async beforeApplicationShutdown(): Promise<void> {
    await this.batch.drain();
  }

  onApplicationShutdown(): void {
    if (this.retry !== null) clearTimeout(this.retry);
    this.sub?.stop();
    this.sub = null;
  }

  private rollDay(day: string): void {
    if (day !== this.day) {
      this.day = day;
      this.capped = new Set();
    }
  }

  private remember(day: string, pair: string): void {
    this.rollDay(day);
    if (this.capped.size >= MAX_CAPPED) {
      const oldest = this.capped.values().next();
      if (!oldest.done) this.capped.delete(oldest.value);
    }
    this.capped.add(pair);
    this.stats.cappedPairs = this.capped.size;
  }

  private onNews(message: string): void {
    const bar = message.indexOf('|');
    if (bar > 0) this.remember(message.slice(0, bar), message.slice(bar + 1));
  }

  /** Loads today's capped pairs from Redis (SSCAN, in batches). */
  async reload(now = this.clock.now()): Promise<void> {
    const day = utcDay(now);
    try {
      await this.db.scanCapped(day, (pairs) => {
        for (const m of pairs) this.remember(day, m);
      });
      this.stats.reloads++;
    } catch (e) {
      this.stats.errors++;
      if (this.stats.errors % 100 === 1) this.logger.warn(`could not load today's capped users, retrying: ${(e as Error).message}`);
      if (this.sub !== null && this.retry === null) {
        this.retry = setTimeout(() => {
          this.retry = null;
          void this.reload();
        }, 1_000);
        this.retry.unref();
      }
    }
  }

  /**
   * Bid path: may this user see one more impression of this candidate's campaign today? O(1), local.
   * Counts nothing (the pacing gate counts a refusal in the auction's effects); only the day turns.
   */
  check(userKey: string, c: Candidate): boolean {
    const cap = c.frequencyCap;
    if (cap === undefined || cap === null || userKey === '') return true;
    this.rollDay(this.clock.today());
    return this.capped.size === 0 || !this.capped.has(`${c.campaignId}\u0000${userKey}`);
  }

  /** Outside an auction (tools, tests): `check`, a refusal counted at once. */
  allows(userKey: string, c: Candidate): boolean {
    if (this.check(userKey, c)) return true;
    this.stats.blockedBids++;
    return false;
  }

  /**
   * Counts the impression of a bid (from the impression tracker), once per bid: resolves true when it
   * was counted, false when this bid's impression was seen before. With a user, it counts toward the
   * user's caps, and when it reaches the campaign's cap every worker is told. Impressions are counted
   * in batches (src/redis/batch.ts): everything recorded within REDIS_BATCH_MS goes to Redis in one
   * write with the other batched commands (the cap news leaves that much later). Rejects when Redis
   * cannot be reached.
   */
  recordImpression(bidId: string, userKey: string, campaignId: string, crid: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.pending.push({ day: this.clock.today(), bidId, userKey, campaignId, crid, resolve, reject });
      if (this.flushQueued) return;
      this.flushQueued = true;
      this.batch.later(() => this.flushImpressions());
    });
  }

  private async flushImpressions(): Promise<void> {
    this.flushQueued = false;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    let counts: number[];
    try {
      // One command per impression, issued in the batch's turn: one write for all of them.
      counts = await Promise.all(batch.map((i) => this.db.countImpression(i.day, i.bidId, i.userKey, i.campaignId)));
    } catch (e) {
      this.stats.errors++;
      for (const i of batch) i.reject(e);
      return;
    }
    const index = this.store.current();
    const news: CappedPair[] = [];
    for (let j = 0; j < batch.length; j++) {
      const i = batch[j];
      if (counts[j] < 0) {
        this.stats.repeated++;
        continue;
      }
      this.stats.impressions++;
      const cap = index.get(i.crid)?.frequencyCap;
      if (i.userKey === '' || cap === undefined || cap === null || counts[j] < cap.perDay) continue;
      const pair = `${i.campaignId}\u0000${i.userKey}`;
      this.remember(i.day, pair);
      news.push({ day: i.day, pair });
    }
    try {
      await this.db.publishCapped(news);
    } catch (e) {
      this.stats.errors++;
      // Counted already: the news reaches the others when their subscription next reloads the day's set.
      this.logger.warn(`could not publish ${news.length} capped users: ${(e as Error).message}`);
    }
    for (let j = 0; j < batch.length; j++) batch[j].resolve(counts[j] >= 0);
  }
}
