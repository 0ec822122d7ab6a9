import type { RedisService } from '../redis/redis.service';

/** Where compressed batches go. */
export interface FrameSink {
  /** Whether a push can be tried now (connection up). */
  ready(): boolean;
  /**
   * Appends one frame to the log list. Resolves true when appended, false when a frame with this
   * id was appended before (a retry after an ambiguous failure); rejects when Redis failed.
   */
  push(frameId: string, frame: Buffer): Promise<boolean>;
}

/** How long Redis remembers that a frame id was appended (the window in which a retry can repeat it). */
export const ACK_TTL_S = 24 * 3600;

/**
 * `RPUSH key frame`, at most once per frame id (src/redis/scripts.ts PUSH_ONCE): a push that timed
 * out or whose connection broke may still have run; the flusher then retries it (or spills it and a
 * drain pushes it later), and the marker `<key>:ack:<frame id>` makes that retry a no-op.
 */
export class RedisFrameSink implements FrameSink {
  constructor(
    private readonly redis: RedisService,
    private readonly key: string,
  ) {}

  ready(): boolean {
    return this.redis.isReady();
  }

  async push(frameId: string, frame: Buffer): Promise<boolean> {
    return (await this.redis.pushOnce(this.key, ackKey(this.key, frameId), frame, ACK_TTL_S)) !== -1;
  }
}

/** The marker of a pushed frame; it carries the list key's hash tag, if any, so both share a slot. */
export function ackKey(listKey: string, frameId: string): string {
  return `${listKey}:ack:${frameId}`;
}
