/**
 * Redis key names of the shipper. Every key it uses for a log list starts with that list's key, so
 * in Redis Cluster, where a list key carries a hash tag (`bidlog:{3}`), they all share its slot and
 * each Lua script touches the keys of one hash tag only.
 */

/** The log lists the shipper drains: every list of the bid log (one function for the bidder, the reader and the shipper). */
export { logListKeys } from '../log/log-keys';

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
