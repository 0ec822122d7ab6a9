/**
 * Frequency caps: impressions per user per campaign per UTC day, counted in Redis from impression
 * trackers (a hash per user and day, field = campaign id), read on the bid path from a local cache.
 *
 * The bid path never waits: `allows()` answers from the cache; a user not in the cache (or whose
 * entry is older than FREQ_CAP_CACHE_MS) is fetched in the background and, until it arrives, treated
 * as seen by this worker alone. So a cap can be exceeded only by impressions of bids made before the
 * worker's cache caught up (one cache period, plus one fetch round-trip for a new user).
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { RedisService } from '../redis/redis.service';
import type { Candidate } from '../targeting/types';
import { utcDay } from './spend.service';

/** Users held in the local cache; the oldest are evicted past this (Map keeps insertion order). */
const MAX_USERS = 200_000;
const DAY_TTL_SECONDS = 2 * 24 * 3600;

class UserCounts {
  constructor(
    readonly day: string,
    readonly counts: Map<string, number>,
    readonly fetchedAt: number,
  ) {}
}

@Injectable()
export class CapsService {
  private readonly logger = new Logger('FreqCaps');
  private readonly cache = new Map<string, UserCounts>();
  private readonly inflight = new Set<string>();
  readonly stats = { fetches: 0, fetchErrors: 0, blockedBids: 0, impressions: 0 };

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
  ) {}

  private key(day: string, userId: string): string {
    return `bidder:fcap:${day}:${userId}`;
  }

  /** Bid path: may this user see one more impression of this candidate's campaign today? */
  allows(userId: string, c: Candidate, now = Date.now()): boolean {
    const cap = c.frequencyCap;
    if (cap === undefined || cap === null || userId === '') return true;
    const day = utcDay(now);
    const entry = this.cache.get(userId);
    if (entry === undefined || entry.day !== day || now - entry.fetchedAt > this.config.capCacheMs) this.fetch(userId, day);
    if (entry === undefined || entry.day !== day) return true;
    if ((entry.counts.get(c.campaignId) ?? 0) >= cap.perDay) {
      this.stats.blockedBids++;
      return false;
    }
    return true;
  }

  private fetch(userId: string, day: string): void {
    if (this.inflight.has(userId) || !this.redis.isReady()) return;
    this.inflight.add(userId);
    this.stats.fetches++;
    this.redis.client.hgetall(this.key(day, userId)).then(
      (h) => {
        this.inflight.delete(userId);
        const counts = new Map<string, number>();
        for (const k in h) counts.set(k, Number(h[k]));
        this.put(userId, new UserCounts(day, counts, Date.now()));
      },
      (e: Error) => {
        this.inflight.delete(userId);
        this.stats.fetchErrors++;
        if (this.stats.fetchErrors % 1000 === 1) this.logger.warn(`frequency cap read failed: ${e.message}`);
      },
    );
  }

  private put(userId: string, v: UserCounts): void {
    this.cache.delete(userId);
    this.cache.set(userId, v);
    if (this.cache.size > MAX_USERS) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
  }

  /** Counts an impression (from the impression tracker). Throws when Redis cannot be reached. */
  async recordImpression(userId: string, campaignId: string, now = Date.now()): Promise<void> {
    if (userId === '') return;
    const day = utcDay(now);
    const key = this.key(day, userId);
    const res = await this.redis.client.multi().hincrby(key, campaignId, 1).expire(key, DAY_TTL_SECONDS).exec();
    if (res === null) throw new Error('frequency cap update aborted');
    this.stats.impressions++;
    const n = Number(res[0][1]);
    // This worker knows at once; the others within one cache period.
    const entry = this.cache.get(userId);
    if (entry !== undefined && entry.day === day) entry.counts.set(campaignId, n);
  }
}
