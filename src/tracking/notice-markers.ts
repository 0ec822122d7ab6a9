import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { RedisBatch } from '../redis/batch';
import { RedisService } from '../redis/redis.service';

/** Marks the first win, loss or click notice of a bid (bill and imp have their own markers). */
export const noticeMarker = (event: string, bidId: string): string => `bidder:notice:{${bidId}}:${event}`;

/**
 * The store of first-notice markers: one per bid and notice type (win, loss, click), shared by every
 * worker, living BILL_DEDUPE_TTL_SECONDS (older notices are refused anyway). NoticeRoute's only I/O
 * besides spend and caps; its unit tests give it an in-memory one (test/support/fake-stores.ts).
 */
export abstract class NoticeMarkers {
  /** Sets the marker of this bid's `event`: resolves true the first time, false for a repeat; rejects when the store failed. */
  abstract first(event: string, bidId: string): Promise<boolean>;
}

/**
 * The markers on the worker's Redis (SET NX with a time to live), sent with the next batch of
 * commands (src/redis/batch.ts: within REDIS_BATCH_MS, one write to Redis for all of them).
 */
@Injectable()
export class RedisNoticeMarkers extends NoticeMarkers {
  private readonly ttlSeconds: number;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly redis: RedisService,
    private readonly batch: RedisBatch,
  ) {
    super();
    // A marker outlives every notice of its bid: older ones are refused (410) anyway.
    this.ttlSeconds = config.billDedupeTtlSeconds;
  }

  first(event: string, bidId: string): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.batch.later(() =>
        this.redis
          .connection()
          .set(noticeMarker(event, bidId), '1', 'EX', this.ttlSeconds, 'NX')
          .then((ok) => resolve(ok !== null), reject),
      );
    });
  }
}
