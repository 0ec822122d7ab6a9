import type Redis from 'ioredis';

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
 * `RPUSH key frame`, at most once per frame id. A push that timed out or whose connection broke
 * may still have been executed; the flusher then retries it (or spills it and a drain pushes it
 * later). The marker `<key>:ack:<frame id>` makes that retry a no-op, atomically with the RPUSH.
 */
const PUSH_ONCE = `
if redis.call('SET', KEYS[2], '1', 'NX', 'EX', ARGV[2]) then
  return redis.call('RPUSH', KEYS[1], ARGV[1])
end
return -1
`;

interface WithPushOnce {
  bidlogPushOnce(list: string, ack: string, frame: Buffer, ttl: number): Promise<number>;
}

export class RedisFrameSink implements FrameSink {
  constructor(
    private readonly client: Redis,
    private readonly key: string,
  ) {
    if (typeof (client as unknown as Partial<WithPushOnce>).bidlogPushOnce !== 'function') {
      client.defineCommand('bidlogPushOnce', { numberOfKeys: 2, lua: PUSH_ONCE });
    }
  }

  ready(): boolean {
    return this.client.status === 'ready';
  }

  async push(frameId: string, frame: Buffer): Promise<boolean> {
    const n = await (this.client as unknown as WithPushOnce).bidlogPushOnce(this.key, ackKey(this.key, frameId), frame, ACK_TTL_S);
    return n !== -1;
  }
}

export function ackKey(listKey: string, frameId: string): string {
  return `${listKey}:ack:${frameId}`;
}
