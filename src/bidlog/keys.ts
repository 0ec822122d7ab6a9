/**
 * Redis key names of the bid log, its one place: which lists the log is spread over (the
 * bidder pushes to them, the reader (`npm run logs`) and the shipper read every one of them), the
 * frames' ack markers and the shipper's processing lists, leases and registry.
 *
 * - One list on a single Redis (LOG_REDIS_SHARDS=1, the default there): `LOG_REDIS_KEY` itself.
 * - Otherwise (a Redis Cluster, or LOG_REDIS_SHARDS > 1): `LOG_REDIS_KEY:{0}` … `:{n-1}`. Each list's
 *   hash tag is its number, so each is in a slot of its own and every key that goes with it (the
 *   ack markers `<list>:ack:<frame id>`, the shipper's `<list>:proc:<id>` …) shares that slot: a
 *   script touching a list and its markers runs on one node. The slot of a key is its hash tag's
 *   CRC16 mod 16384, whatever the base name: `{0}` … `{15}` are slots 13907, 9842, 5649, 1584,
 *   14039, 9974, 5781, 1716, 14171, 10106, 247, 4310, 8373, 12436, 115, 4178, which the even split
 *   of a 3-master cluster (0-5460, 5461-10922, 10923-16383) spreads 6/6/4 (the first 8: 2/4/2).
 * - A frame goes to the list its id chooses (a hash of the id), never the worker's: a retried push
 *   and the drain of a spill file, whichever worker or host does it, reach the list that holds the
 *   frame's ack marker, so that they are a no-op when the frame is there already.
 */

export interface LogKeySettings {
  readonly logRedisKey: string;
  readonly logRedisShards: number;
  readonly redis: { readonly mode: 'single' | 'cluster' };
}

/** Every list of the bid log, in shard order. */
export function logListKeys(s: LogKeySettings): string[] {
  if (s.redis.mode === 'single' && s.logRedisShards === 1) return [s.logRedisKey];
  const keys: string[] = [];
  for (let i = 0; i < s.logRedisShards; i++) keys.push(`${s.logRedisKey}:{${i}}`);
  return keys;
}

/** The shard of a frame (0 … shards-1): FNV-1a of its id, so the same id always gives the same list. */
export function shardOf(frameId: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < frameId.length; i++) {
    h ^= frameId.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}

/** The list a frame goes to. */
export function listKeyFor(keys: readonly string[], frameId: string): string {
  return keys.length === 1 ? keys[0] : keys[shardOf(frameId, keys.length)];
}

/** The marker of a pushed frame; it starts with the list key, so it carries the list's hash tag and shares its slot. */
export function ackKey(listKey: string, frameId: string): string {
  return `${listKey}:ack:${frameId}`;
}

/** The frames a shipper has claimed from `listKey` and not yet removed (one batch group). */
export function procKey(listKey: string, shipperId: string): string {
  return `${listKey}:proc:${shipperId}`;
}

/** A shipper's heartbeat lease on `listKey`: its instance token, with a TTL. */
export function heartbeatKey(listKey: string, shipperId: string): string {
  return `${listKey}:hb:${shipperId}`;
}

/** The set of shipper ids that may hold a processing list of `listKey` (where adopters look). */
export function shippersKey(listKey: string): string {
  return `${listKey}:shippers`;
}
