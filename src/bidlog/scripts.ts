/**
 * The bid log's Lua scripts: the bidder's idempotent push, and the shipper's lease, claim, adoption
 * and removal of batches (docs/log-pipeline.md, "No duplicates" and "Claims"). Each touches the keys
 * of ONE log list only (src/bidlog/keys.ts: they all start with the list's key and share its hash
 * tag), so that it runs on a Redis Cluster as on a single server. The writers define them on their
 * connection (src/redis/scripts.ts `defineScripts`).
 */

/** How long Redis remembers that a frame id was appended (the window in which a retry can repeat it). */
export const ACK_TTL_S = 24 * 3600;

/**
 * `RPUSH list frame`, at most once per frame id: a push that timed out or whose connection broke may
 * still have run; the retry (or the drain of its spill file) is then a no-op, except that it sets the
 * marker's TTL again: a write, so that a WAIT after the retry covers the frame too (WAIT counts
 * the writes of its connection, and a replica that has this write has everything before it).
 * KEYS: the list, the frame's marker (the list's tag). ARGV: frame, marker TTL s. Returns the
 * list's length, or -1.
 */
const PUSH_ONCE = `
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('EXPIRE', KEYS[2], tonumber(ARGV[2]))
  return -1
end
local n = redis.call('RPUSH', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], '1', 'EX', tonumber(ARGV[2]))
return n`;

/** The bidder's scripts, as commands of its log connection. */
export const WRITER_SCRIPTS = {
  bidlogPushOnce: { numberOfKeys: 2, lua: PUSH_ONCE },
} as const;

export interface WriterCommands {
  bidlogPushOnce(list: string, marker: string, frame: Buffer, ttlS: string): Promise<number>;
}

/*
 * The shipper's protocol, per log list `L` and shipper `S`:
 * - `L:hb:S` holds S's instance token with a TTL (its lease); only the holder touches `L:proc:S`.
 * - claim: when `L:proc:S` is empty, move up to N frames (and B bytes) from the head of `L` to it.
 * - remove: after the batch is stored, delete `L:proc:S`.
 * - adopt: when `L:hb:X` has expired, rename `L:proc:X` to an empty `L:proc:S`, whole, so that the
 *   batch group (named after its frames) stays the same; one atomic script, so two adopters never
 *   both get it.
 * Scripts that change `L:proc:S` first check that `L:hb:S` still holds S's token (a second process
 * started with the same SHIP_ID by mistake waits instead of interfering).
 */

// KEYS: hb. ARGV: token, TTL ms. 1: renewed, 2: taken afresh, 0: held by another token.
const LEASE = `
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

/** The shipper's scripts, as commands of its connection. */
export const SHIPPER_SCRIPTS = {
  shipHeartbeat: { numberOfKeys: 1, lua: LEASE },
  shipRelease: { numberOfKeys: 1, lua: RELEASE },
  shipClaim: { numberOfKeys: 4, lua: CLAIM },
  shipAdopt: { numberOfKeys: 5, lua: ADOPT },
  shipRemove: { numberOfKeys: 3, lua: REMOVE },
} as const;

export interface ShipperCommands {
  shipHeartbeat(hb: string, token: string, ttlMs: number): Promise<number>;
  shipRelease(hb: string, token: string): Promise<number>;
  /** `shipClaim` with Buffer replies (ioredis adds the `…Buffer` variant of every defined command). */
  shipClaimBuffer(list: string, proc: string, hb: string, shippers: string, token: string, max: number, maxBytes: number, id: string): Promise<Buffer[] | null>;
  shipAdopt(orphanProc: string, orphanHb: string, proc: string, hb: string, shippers: string, token: string, orphanId: string, id: string): Promise<number>;
  shipRemove(proc: string, hb: string, shippers: string, token: string, id: string): Promise<number>;
}
