import type { RedisTarget } from '../config/config';
import { createRedisClient, stopSlotsRefresh, untilUsable, usable, type RedisClient } from '../redis/redis.options';
import { defineScripts } from '../redis/scripts';
import { heartbeatKey, procKey, shippersKey } from '../bidlog/keys';
import { readBacklog, type Backlog } from '../bidlog/reader';
import { SHIPPER_SCRIPTS, type ShipperCommands } from '../bidlog/scripts';

/**
 * Every Redis command of the shipper, on one server or a Redis Cluster (src/redis/redis.options.ts
 * makes the client). The scripts and the keys are the bid log's (src/bidlog/scripts.ts has the
 * protocol: lease, claim, adopt, remove); each takes the keys of one log list only, which share that
 * list's hash tag, so each runs on the node that holds the list; nothing else spans keys.
 */
/** The lease's state after a heartbeat: still ours, taken afresh (it had expired), or held by another process with our id. */
export type Lease = 'held' | 'acquired' | 'taken';

export class LeaseLostError extends Error {
  constructor(listKey: string) {
    super(`the heartbeat lease on ${listKey} is not held by this process`);
    this.name = 'LeaseLostError';
  }
}

export class ShipperRedis {
  readonly client: RedisClient;
  private readonly scripts: ShipperCommands;

  constructor(
    target: RedisTarget,
    readonly shipperId: string,
    /** This process's token in the heartbeat keys (another process with the same SHIP_ID has another). */
    readonly token: string,
  ) {
    this.client = createRedisClient(target, `shipper:${shipperId}`);
    defineScripts(this.client, SHIPPER_SCRIPTS);
    this.scripts = this.client as unknown as ShipperCommands;
  }

  async connect(): Promise<void> {
    await this.client.connect();
    await untilUsable(this.client);
  }

  ready(): boolean {
    return usable(this.client);
  }

  async heartbeat(listKey: string, ttlMs: number): Promise<Lease> {
    const r = await this.scripts.shipHeartbeat(heartbeatKey(listKey, this.shipperId), this.token, ttlMs);
    return r === 1 ? 'held' : r === 2 ? 'acquired' : 'taken';
  }

  /** Gives the lease up (graceful stop), so that whatever is left can be adopted at once. */
  async release(listKey: string): Promise<void> {
    await this.scripts.shipRelease(heartbeatKey(listKey, this.shipperId), this.token);
  }

  /** The frames of this shipper's processing list (a batch claimed or adopted earlier), oldest first. */
  processing(listKey: string): Promise<Buffer[]> {
    return this.client.lrangeBuffer(procKey(listKey, this.shipperId), 0, -1);
  }

  /**
   * Moves up to `maxFrames` frames (and `maxBytes` compressed bytes, at least one frame) from the
   * head of the list into this shipper's processing list, atomically; returns them. null when the
   * processing list still holds a batch (which must be finished first).
   */
  async claim(listKey: string, maxFrames: number, maxBytes: number): Promise<Buffer[] | null> {
    try {
      return await this.scripts.shipClaimBuffer(
        listKey,
        procKey(listKey, this.shipperId),
        heartbeatKey(listKey, this.shipperId),
        shippersKey(listKey),
        this.token,
        maxFrames,
        maxBytes,
        this.shipperId,
      );
    } catch (e) {
      throw leaseError(e, listKey);
    }
  }

  /**
   * Takes over the processing list of one shipper whose lease has expired, if there is one;
   * returns its id and the number of frames, or null. Only when this shipper's own list is empty.
   */
  async adopt(listKey: string): Promise<{ from: string; frames: number } | null> {
    const ids = await this.client.smembers(shippersKey(listKey));
    for (const other of ids.sort()) {
      if (other === this.shipperId) continue;
      let n: number;
      try {
        n = await this.scripts.shipAdopt(
          procKey(listKey, other),
          heartbeatKey(listKey, other),
          procKey(listKey, this.shipperId),
          heartbeatKey(listKey, this.shipperId),
          shippersKey(listKey),
          this.token,
          other,
          this.shipperId,
        );
      } catch (e) {
        throw leaseError(e, listKey);
      }
      if (n > 0) return { from: other, frames: n };
      if (n < 0) return null;
    }
    return null;
  }

  /** Frames waiting in the list (not claimed). */
  waiting(listKey: string): Promise<number> {
    return this.client.llen(listKey);
  }

  /** Deletes this shipper's processing list once its batch is stored; returns how many frames it held. */
  async remove(listKey: string): Promise<number> {
    try {
      return await this.scripts.shipRemove(procKey(listKey, this.shipperId), heartbeatKey(listKey, this.shipperId), shippersKey(listKey), this.token, this.shipperId);
    } catch (e) {
      throw leaseError(e, listKey);
    }
  }

  backlog(keys: readonly string[]): Promise<Backlog> {
    return readBacklog(this.client, keys);
  }

  async close(): Promise<void> {
    if (this.client.status === 'ready') {
      await this.client.quit().catch(() => undefined);
    }
    this.client.disconnect();
    stopSlotsRefresh(this.client);
  }
}

function leaseError(e: unknown, listKey: string): Error {
  if (e instanceof Error && e.message.includes('LEASE lost')) return new LeaseLostError(listKey);
  return e instanceof Error ? e : new Error(String(e));
}
