import { Injectable, Logger, type BeforeApplicationShutdown } from '@nestjs/common';
import { Cluster } from 'ioredis';
import type { RedisClient } from './redis.options';
import { RedisService } from './redis.service';

/** How long commands that may wait gather before they leave together. */
export const REDIS_BATCH_MS = 50;
/**
 * The most commands a batch gathers: a flood of notices (a signed URL replayed, say) leaves in
 * batches of this many at once instead of queueing without bound for REDIS_BATCH_MS.
 */
export const REDIS_BATCH_MAX = 1024;

/**
 * Runs `fn`, which issues commands on `client`, with the client's connections corked: the commands
 * leave in one write per connection (one per node on a cluster) instead of one each, and Redis reads
 * them, and its replies arrive, together. ioredis writes a command to its socket at once when the
 * connection is ready; a connection that is not (no socket yet, or one being replaced) is left alone
 * and its commands fail or wait as they would anyway.
 */
export function corked(client: RedisClient, fn: () => void): void {
  const streams = [];
  for (const c of client instanceof Cluster ? client.nodes('all') : [client]) {
    const s = c.status === 'ready' ? c.stream : undefined;
    if (s !== undefined && s !== null && s.writable) {
      s.cork();
      streams.push(s);
    }
  }
  try {
    fn();
  } finally {
    for (const s of streams) s.uncork();
  }
}

/**
 * Redis commands whose result may come a little later (the first-notice markers, the impressions'
 * counts: off the bid path, answered to the exchange already), gathered for up to REDIS_BATCH_MS and
 * issued together in one turn on the worker's connection, corked: one write to Redis for all of
 * them instead of one per command. At 65 win notices and 65 impressions a second per worker that is
 * ~20 writes a second instead of ~130, and as many fewer reads of replies, on both sides.
 *
 * From shutdown on (every beforeApplicationShutdown runs before the connection closes) nothing
 * waits: what is queued leaves at once, and later commands are issued as they come.
 *
 * Why not ioredis's `enableAutoPipelining`: it joins only the commands issued in one turn of the
 * event loop, and notices arrive one per request. `node tools/bench/redis-batch.js` (130 SET NX a
 * second, two runs on the 2-core test VM beside other work, load average 5-7): one by one, 275-278
 * µs of client CPU and 58-77 µs of Redis's per command; with autopipelining the same (269-295, 77);
 * batched here 111-116 and 19-38. At ~0.2 such commands per bid request (notices for 10 % of bids)
 * that is ~30 µs per bid request on a worker that is otherwise idle (a request costs ~200 µs); on
 * a busy worker, whose loop is awake anyway, the saving per command is smaller (not measured).
 */
@Injectable()
export class RedisBatch implements BeforeApplicationShutdown {
  private readonly logger = new Logger('RedisBatch');
  private queue: Array<() => Promise<unknown>> = [];
  private timer: NodeJS.Timeout | null = null;
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopping = false;

  constructor(private readonly redis: RedisService) {}

  /**
   * Calls `send` (which issues its commands synchronously, and whose promise settles when their
   * replies are handled) with the other commands of the next batch, within REDIS_BATCH_MS, or at
   * once when it is the batch's REDIS_BATCH_MAX-th.
   */
  later(send: () => Promise<unknown>): void {
    if (this.stopping) {
      this.track(send);
      return;
    }
    this.queue.push(send);
    if (this.queue.length >= REDIS_BATCH_MAX) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), REDIS_BATCH_MS);
  }

  /** Issues everything queued now, in one corked turn. */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const q = this.queue;
    if (q.length === 0) return;
    this.queue = [];
    corked(this.redis.connection(), () => {
      for (let i = 0; i < q.length; i++) this.track(q[i]);
    });
  }

  /** Issues what is queued and waits until every batched command's reply has been handled. */
  async drain(): Promise<void> {
    this.flush();
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.drain();
  }

  private track(send: () => Promise<unknown>): void {
    let p: Promise<unknown>;
    try {
      p = send();
    } catch (e) {
      // A sender handles its commands' failures itself: a throw here is a bug, kept from the batch's others.
      this.logger.error({ msg: 'batched Redis command could not be issued', err: e });
      return;
    }
    const settled: Promise<unknown> = p.then(
      (): void => void this.inFlight.delete(settled),
      (): void => void this.inFlight.delete(settled),
    );
    this.inFlight.add(settled);
  }
}
