import type { RedisService } from '../redis/redis.service';
import { ackKey, listKeyFor } from './log-keys';

/** Where compressed batches go. */
export interface FrameSink {
  /** Whether a push can be tried now (connection up). */
  ready(): boolean;
  /**
   * Appends one frame to the log. Resolves true when appended, false when a frame with this id was
   * appended before (a retry after an ambiguous failure); rejects when Redis failed, or when the
   * frame is not yet held by as many replicas as asked (the caller keeps it and retries).
   */
  push(frameId: string, frame: Buffer): Promise<boolean>;
}

/** How long Redis remembers that a frame id was appended (the window in which a retry can repeat it). */
export const ACK_TTL_S = 24 * 3600;

/**
 * `RPUSH list frame`, at most once per frame id (src/redis/scripts.ts PUSH_ONCE), to the list the
 * frame id chooses (src/log/log-keys.ts): a push that timed out or whose connection broke may still
 * have run; the flusher then retries it (or spills it and a drain pushes it later), and the marker
 * `<list>:ack:<frame id>` makes that retry a no-op. With `waitReplicas` > 0 a push counts only once
 * that many replicas of the list's master hold it (WAIT): a master that dies after its reply cannot
 * take the frame with it, since the flusher forgets a frame only then.
 */
export class RedisFrameSink implements FrameSink {
  constructor(
    private readonly redis: RedisService,
    private readonly keys: readonly string[],
    private readonly waitReplicas: number,
    private readonly waitMs: number,
  ) {}

  ready(): boolean {
    return this.redis.isLogReady();
  }

  async push(frameId: string, frame: Buffer): Promise<boolean> {
    const list = listKeyFor(this.keys, frameId);
    const r = await this.redis.pushOnce(list, ackKey(list, frameId), frame, ACK_TTL_S);
    if (r.replicas !== null && r.replicas < this.waitReplicas) {
      throw new Error(
        `${list}: ${r.replicas} of ${this.waitReplicas} replicas (LOG_REDIS_WAIT_REPLICAS) confirmed the frame within ${this.waitMs} ms (LOG_REDIS_WAIT_MS); ` +
          'keeping it (set LOG_REDIS_WAIT_REPLICAS=0 for masters without replicas)',
      );
    }
    return r.pushed;
  }
}
