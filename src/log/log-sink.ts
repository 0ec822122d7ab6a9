import { Cluster } from 'ioredis';
import { ackKey, listKeyFor } from '../bidlog/keys';
import { ACK_TTL_S, WRITER_SCRIPTS, type WriterCommands } from '../bidlog/scripts';
import { masterFor, type RedisClient } from '../redis/redis.options';
import type { RedisService } from '../redis/redis.service';
import { defineScripts } from '../redis/scripts';

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

/** A pushed frame: whether it was new (not pushed before under its id), and how many replicas hold it (null: not asked). */
export interface PushResult {
  readonly pushed: boolean;
  readonly replicas: number | null;
}

/**
 * `RPUSH list frame`, at most once per frame id (src/bidlog/scripts.ts PUSH_ONCE), to the list the
 * frame id chooses (src/bidlog/keys.ts): a push that timed out or whose connection broke may still
 * have run; the flusher then retries it (or spills it and a drain pushes it later), and the marker
 * `<list>:ack:<frame id>` makes that retry a no-op. With `waitReplicas` > 0 a push counts only once
 * that many replicas of the list's master hold it (WAIT): a master that dies after its reply cannot
 * take the frame with it, since the flusher forgets a frame only then.
 */
export class RedisFrameSink implements FrameSink {
  private readonly client: RedisClient;

  constructor(
    private readonly redis: RedisService,
    private readonly keys: readonly string[],
    private readonly waitReplicas: number,
    private readonly waitMs: number,
  ) {
    this.client = redis.logConnection(WRITER_SCRIPTS);
  }

  ready(): boolean {
    return this.redis.isLogReady();
  }

  async push(frameId: string, frame: Buffer): Promise<boolean> {
    const list = listKeyFor(this.keys, frameId);
    const r = await this.pushOnce(list, ackKey(list, frameId), frame, ACK_TTL_S);
    if (r.replicas !== null && r.replicas < this.waitReplicas) {
      throw new Error(
        `${list}: ${r.replicas} of ${this.waitReplicas} replicas (LOG_REDIS_WAIT_REPLICAS) confirmed the frame within ${this.waitMs} ms (LOG_REDIS_WAIT_MS); ` +
          'keeping it (set LOG_REDIS_WAIT_REPLICAS=0 for masters without replicas)',
      );
    }
    return r.pushed;
  }

  /**
   * RPUSH once per frame id (PUSH_ONCE), then, when LOG_REDIS_WAIT_REPLICAS > 0, `WAIT` on the same
   * connection until that many replicas hold it (at most LOG_REDIS_WAIT_MS). On a cluster both go to
   * the master of the list's slot itself (WAIT counts the writes of the connection it runs on): a
   * MOVED reply (the slot moved, e.g. a failover) is then a failure, and the slot map is refreshed for
   * the retry. Rejects when Redis failed; resolves `replicas` < LOG_REDIS_WAIT_REPLICAS when they did
   * not answer in time (the caller keeps the frame and retries: the retry is a no-op push that
   * rewrites the marker's TTL, a write the next WAIT then covers).
   */
  async pushOnce(list: string, marker: string, frame: Buffer, ttlS: number): Promise<PushResult> {
    const want = this.waitReplicas;
    const c = this.client;
    if (want === 0) {
      return { pushed: (await (c as unknown as WriterCommands).bidlogPushOnce(list, marker, frame, String(ttlS))) !== -1, replicas: null };
    }
    if (c instanceof Cluster) {
      const node = masterFor(c, list);
      if (node === null) {
        c.refreshSlotsCache();
        throw new Error(`no master known for the slot of ${list} yet`);
      }
      defineScripts(node, WRITER_SCRIPTS);
      try {
        const n = await (node as unknown as WriterCommands).bidlogPushOnce(list, marker, frame, String(ttlS));
        const replicas = await node.wait(want, this.waitMs);
        return { pushed: n !== -1, replicas };
      } catch (e) {
        c.refreshSlotsCache();
        throw e;
      }
    }
    const n = await (c as unknown as WriterCommands).bidlogPushOnce(list, marker, frame, String(ttlS));
    return { pushed: n !== -1, replicas: await c.wait(want, this.waitMs) };
  }
}
