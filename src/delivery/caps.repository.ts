import { Injectable } from '@nestjs/common';
import { RedisService } from '../redis/redis.service';
import type { SubscriberHandlers } from '../redis/subscriber';
import { DeliveryRedis } from './delivery-redis';
import { capKeys } from './keys';

/** The channel of cap news: `<day>|<campaign>\u0000<user key>` for each pair that reached its cap. */
const CHANNEL = 'bidder:fcap:capped';
/** How long a day's counts, markers and capped set live. */
export const CAP_DAY_TTL_SECONDS = 2 * 24 * 3600;

/** A subscription to cap news: resolves `firstSubscription` once in place; `stop` ends it. */
export interface CapNews {
  readonly firstSubscription: Promise<void>;
  stop(): void;
}

/** A capped pair of a day: `pair` is `<campaign>\u0000<user key>`. */
export interface CappedPair {
  day: string;
  pair: string;
}

/**
 * The store of frequency caps (src/delivery/keys.ts names its keys): impressions counted per user,
 * campaign and day once per bid, the day's set of capped pairs, and the news of a pair that reached
 * its cap. CapsService is its only user and does no I/O besides; its unit tests give it an
 * in-memory one (test/support/fake-stores.ts), the others run on Redis (RedisCapsRepository).
 */
export abstract class CapsRepository {
  /** Whether the store answers now. */
  abstract isReady(): boolean;
  /** Calls `listener` each time the store becomes ready (again). */
  abstract onReady(listener: () => void): void;
  /** Subscribes to cap news (`message` gets each one's text, `subscribed` says each time the subscription is in place again). */
  abstract subscribe(handlers: SubscriberHandlers): CapNews;
  /** The day's capped pairs, in batches (`each` is called per batch); rejects when a batch could not be read. */
  abstract scanCapped(day: string, each: (pairs: string[]) => void): Promise<void>;
  /**
   * Counts the impression of bid `bidId` once: the user's count for the campaign on `day` after it
   * (0 without a user: nothing to count), or -1 when this bid's impression was counted before.
   */
  abstract countImpression(day: string, bidId: string, userKey: string, campaignId: string): Promise<number>;
  /** Adds pairs to their day's capped set, then publishes them to every worker. */
  abstract publishCapped(news: readonly CappedPair[]): Promise<void>;
}

/** The caps store on the worker's Redis (IMPRESSION in src/delivery/scripts.ts, a set per day, pub/sub). */
@Injectable()
export class RedisCapsRepository extends CapsRepository {
  constructor(
    private readonly redis: RedisService,
    private readonly db: DeliveryRedis,
  ) {
    super();
  }

  isReady(): boolean {
    return this.redis.isReady();
  }

  onReady(listener: () => void): void {
    this.redis.onReady(listener);
  }

  subscribe(handlers: SubscriberHandlers): CapNews {
    return this.redis.subscribe(CHANNEL, 'fcap', handlers);
  }

  async scanCapped(day: string, each: (pairs: string[]) => void): Promise<void> {
    let cursor = '0';
    do {
      const [next, members] = await this.db.client.sscan(capKeys.capped(day), cursor, 'COUNT', 1000);
      each(members);
      cursor = next;
    } while (cursor !== '0');
  }

  countImpression(day: string, bidId: string, userKey: string, campaignId: string): Promise<number> {
    if (userKey === '') return this.db.client.set(capKeys.anonImpMarker(bidId), '1', 'EX', CAP_DAY_TTL_SECONDS, 'NX').then((ok) => (ok === null ? -1 : 0));
    return this.db.impression(capKeys.impMarker(userKey, bidId), capKeys.counts(userKey, day), campaignId, CAP_DAY_TTL_SECONDS, CAP_DAY_TTL_SECONDS);
  }

  async publishCapped(news: readonly CappedPair[]): Promise<void> {
    // The set first, then the news: a worker that (re)subscribes and reloads the set meanwhile
    // misses neither. Separate commands, not a pipeline: on a cluster the set and the node a
    // PUBLISH goes to differ (the client sends them back to back all the same).
    const c = this.db.client;
    await Promise.all(news.map((n) => c.sadd(capKeys.capped(n.day), n.pair)));
    await Promise.all([
      ...[...new Set(news.map((n) => n.day))].map((day) => c.expire(capKeys.capped(day), CAP_DAY_TTL_SECONDS)),
      ...news.map((n) => c.publish(CHANNEL, `${n.day}|${n.pair}`)),
    ]);
  }
}
