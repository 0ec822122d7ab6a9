/**
 * Delivery's Lua scripts: billing, a budget's tail, the workers' heartbeat, impressions for the
 * caps, and the spend refresh's read (DeliveryRedis, src/delivery/delivery-redis.ts, defines them on
 * the connection). Each script that writes touches keys of ONE hash tag only (`{…}` in the key
 * names), so that it runs on a Redis Cluster as on a single server; READ_MANY, which only reads, is
 * sent to each node with the keys that node serves.
 *
 * Redis does not roll a script back when a command in it fails half-way: a script that writes checks
 * first what could make a later write fail (a key of the wrong type, a value that is not a number),
 * and writes its idempotency marker last, so that a failure leaves nothing that would make a retry a
 * no-op.
 */

/**
 * Billing, once per bid: adds the cost to the campaign's total and daily spend, then sets the
 * bid's marker. KEYS: marker, total, daily (one campaign's tag). ARGV: micro-USD, marker TTL s,
 * daily TTL s. Returns 1 when counted, 0 when the marker says it was counted before.
 */
const BILL = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 2, 3 do
  local t = redis.call('TYPE', KEYS[i])['ok']
  if t ~= 'none' and (t ~= 'string' or tonumber(redis.call('GET', KEYS[i])) == nil) then
    return redis.error_reply('spend key ' .. KEYS[i] .. ' holds no number')
  end
end
redis.call('INCRBY', KEYS[2], ARGV[1])
redis.call('INCRBY', KEYS[3], ARGV[1])
redis.call('EXPIRE', KEYS[3], tonumber(ARGV[3]))
redis.call('SET', KEYS[1], '1', 'EX', tonumber(ARGV[2]))
return 1`;

/**
 * The tail of a budget shared by several workers (src/delivery/spend.service.ts): what is left is
 * less than one bid per worker, so it goes to one of them, the owner, which must know what every
 * other worker still holds in unbilled bids. Each worker publishes its window of unbilled bids
 * (micro-USD, may be negative: credits for bids of others it was told of) stamped with Redis's
 * clock; entries older than the window are dropped. Read in the same script as the spend, so the
 * two are one snapshot. KEYS: the campaign day's tail hash, total spend, daily spend (one campaign's
 * tag). ARGV: member, its window micro-USD, staleness ms, key TTL ms. Returns [total, daily (''
 * when unset), fresh entries, the others' windows summed, 1 when this member is the owner (the
 * smallest fresh member)].
 */
const TAIL = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. now)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
local all = redis.call('HGETALL', KEYS[1])
local fresh, others, owner = 0, 0, ARGV[1]
for i = 1, #all, 2 do
  local v = all[i + 1]
  local c = string.find(v, ':', 1, true)
  local ts = c and tonumber(string.sub(v, c + 1)) or 0
  if now - ts > tonumber(ARGV[3]) then
    redis.call('HDEL', KEYS[1], all[i])
  else
    fresh = fresh + 1
    if all[i] ~= ARGV[1] then others = others + (tonumber(string.sub(v, 1, c - 1)) or 0) end
    if all[i] < owner then owner = all[i] end
  end
end
return {redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or '', fresh, others, owner == ARGV[1] and 1 or 0}`;

/**
 * A worker's heartbeat, on Redis's clock (hosts' clocks disagree; a worker whose clock is behind
 * must still count): scores this member now, forgets members older than the window, returns how
 * many are left. KEYS: the workers' sorted set. ARGV: member, window ms, key TTL ms.
 */
const HEARTBEAT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return redis.call('ZCARD', KEYS[1])`;

/**
 * An impression, once per bid: counts it for the user's frequency cap unless this bid's impression
 * was counted before. KEYS: the bid's marker, the user's day counts (one user's tag). ARGV: campaign
 * id, marker TTL s, counts TTL s. Returns the campaign's count for the day, or -1 for a repeat.
 */
const IMPRESSION = `
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local t = redis.call('TYPE', KEYS[2])['ok']
if t ~= 'none' and t ~= 'hash' then return redis.error_reply('cap key ' .. KEYS[2] .. ' is not a hash') end
local n = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('EXPIRE', KEYS[2], tonumber(ARGV[3]))
redis.call('SET', KEYS[1], '1', 'EX', tonumber(ARGV[2]))
return n`;

/**
 * GET of many keys of different hash slots that one cluster node serves, in one round trip: what
 * MGET cannot do on a cluster (its keys must share a slot), so that the spend refresh costs one
 * command per master instead of one per campaign (bench/RESULTS-cluster.md). The keys come in ARGV,
 * undeclared: a cluster refuses declared keys of different slots (CROSSSLOT), while
 * `allow-cross-slot-keys` (Redis 7) lets a script read undeclared keys of any slot the node serves;
 * a key it does not serve (the slot moved) fails the script, and the caller reads that node's keys
 * by slot instead. ARGV: the keys. Returns their values (nil for none), in order.
 */
const READ_MANY = `#!lua flags=no-writes,allow-cross-slot-keys
local out = {}
for i, k in ipairs(ARGV) do out[i] = redis.call('GET', k) end
return out`;

export const DELIVERY_SCRIPTS = {
  bidderBill: { numberOfKeys: 3, lua: BILL },
  bidderHeartbeat: { numberOfKeys: 1, lua: HEARTBEAT },
  bidderTail: { numberOfKeys: 3, lua: TAIL },
  bidderImpression: { numberOfKeys: 2, lua: IMPRESSION },
  bidderReadMany: { numberOfKeys: 0, lua: READ_MANY },
} as const;

/** The scripts as commands of the client (EVALSHA; the script text is sent only when Redis lacks it). */
export interface DeliveryCommands {
  bidderBill(marker: string, total: string, daily: string, micros: string, markerTtlS: string, dailyTtlS: string): Promise<number>;
  bidderHeartbeat(key: string, member: string, windowMs: string, ttlMs: string): Promise<number>;
  bidderImpression(marker: string, counts: string, campaign: string, markerTtlS: string, countsTtlS: string): Promise<number>;
  bidderReadMany(...keys: string[]): Promise<Array<string | null>>;
  bidderTail(tail: string, total: string, daily: string, member: string, windowMicros: string, staleMs: string, ttlMs: string): Promise<[string, string, number, number, number]>;
}
