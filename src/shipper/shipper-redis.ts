import type { RedisTarget } from '../config/config';
import { createRedisClient, untilUsable, usable, type RedisClient } from '../redis/redis.options';
import { readBacklog, type Backlog } from './backlog';
import { heartbeatKey, procKey, shippersKey } from './keys';

/**
 * Every Redis command of the shipper, on one server or a Redis Cluster (src/redis/redis.options.ts
 * makes the client). Each Lua script takes the keys of one log list only, which share that list's
 * hash tag (see keys.ts), so each runs on the node that holds the list; nothing else spans keys.
 *
 * The protocol, per log list `L` and shipper `S` (docs/log-pipeline.md, "Claims"):
 * - `L:hb:S` holds S's instance token with a TTL (its lease); only the holder touches `L:proc:S`.
 * - claim: when `L:proc:S` is empty, move up to N frames (and B bytes) from the head of `L` to it.
 * - remove: after the batch is stored, delete `L:proc:S`.
 * - adopt: when `L:hb:X` has expired, rename `L:proc:X` to an empty `L:proc:S`, whole, so that the
 *   batch group (named after its frames) stays the same; one atomic script, so two adopters never
 *   both get it.
 * Scripts that change `L:proc:S` first check that `L:hb:S` still holds S's token (a second process
 * started with the same SHIP_ID by mistake waits instead of interfering).
 */
const HEARTBEAT = `
local v = redis.call('GET', KEYS[1])
if v == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if v then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 2
`;

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

// KEYS: list, proc, hb, shippers. ARGV: token, max frames, max bytes, shipper id.
const CLAIM = `
if redis.call('GET', KEYS[3]) ~= ARGV[1] then return redis.error_reply('LEASE lost') end
if redis.call('EXISTS', KEYS[2]) == 1 then return false end
local max = tonumber(ARGV[2])
local maxBytes = tonumber(ARGV[3])
local out = {}
local bytes = 0
while #out < max do
  local v = redis.call('LINDEX', KEYS[1], 0)
  if not v then break end
  if #out > 0 and bytes + #v > maxBytes then break end
  redis.call('LMOVE', KEYS[1], KEYS[2], 'LEFT', 'RIGHT')
  out[#out + 1] = v
  bytes = bytes + #v
end
if #out > 0 then redis.call('SADD', KEYS[4], ARGV[4]) end
return out
`;

// KEYS: orphan proc, orphan hb, my proc, my hb, shippers. ARGV: my token, orphan id, my id.
const ADOPT = `
if redis.call('GET', KEYS[4]) ~= ARGV[1] then return redis.error_reply('LEASE lost') end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[5], ARGV[2])
  return 0
end
if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
redis.call('RENAME', KEYS[1], KEYS[3])
redis.call('SREM', KEYS[5], ARGV[2])
redis.call('SADD', KEYS[5], ARGV[3])
return redis.call('LLEN', KEYS[3])
`;

// KEYS: proc, hb, shippers. ARGV: token, shipper id. Returns the frames removed.
const REMOVE = `
if redis.call('GET', KEYS[2]) ~= ARGV[1] then return redis.error_reply('LEASE lost') end
local n = redis.call('LLEN', KEYS[1])
redis.call('DEL', KEYS[1])
redis.call('SREM', KEYS[3], ARGV[2])
return n
`;

interface Scripts {
  shipHeartbeat(hb: string, token: string, ttlMs: number): Promise<number>;
  shipRelease(hb: string, token: string): Promise<number>;
  shipClaimBuffer(list: string, proc: string, hb: string, shippers: string, token: string, max: number, maxBytes: number, id: string): Promise<Buffer[] | null>;
  shipAdopt(orphanProc: string, orphanHb: string, proc: string, hb: string, shippers: string, token: string, orphanId: string, id: string): Promise<number>;
  shipRemove(proc: string, hb: string, shippers: string, token: string, id: string): Promise<number>;
}

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
  private readonly scripts: Scripts;

  constructor(
    target: RedisTarget,
    readonly shipperId: string,
    /** This process's token in the heartbeat keys (another process with the same SHIP_ID has another). */
    readonly token: string,
  ) {
    this.client = createRedisClient(target, `shipper:${shipperId}`);
    this.client.defineCommand('shipHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT });
    this.client.defineCommand('shipRelease', { numberOfKeys: 1, lua: RELEASE });
    this.client.defineCommand('shipClaim', { numberOfKeys: 4, lua: CLAIM });
    this.client.defineCommand('shipAdopt', { numberOfKeys: 5, lua: ADOPT });
    this.client.defineCommand('shipRemove', { numberOfKeys: 3, lua: REMOVE });
    this.scripts = this.client as unknown as Scripts;
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
  }
}

function leaseError(e: unknown, listKey: string): Error {
  if (e instanceof Error && e.message.includes('LEASE lost')) return new LeaseLostError(listKey);
  return e instanceof Error ? e : new Error(String(e));
}
