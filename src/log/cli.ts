// `npm run logs -- <command>`: reads the bid log back, from Redis and from the spill directory.
// See docs/log-pipeline.md. Runs on the project's Node 24 (zstd in node:zlib).
import { once } from 'node:events';
import { promises as fsp, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { readArgs, UsageError } from '../cli-args';
import { ConfigError, loadConfig, MAX_LOG_SHARDS, type RedisTarget } from '../config/config';
import { assertNodeVersion } from '../node-version';
import { connectUsable, createRedisClient, describeTarget, redactUrl, type RedisClient } from '../redis/redis.options';
import { ackKey, listKeyFor, logListKeys } from '../bidlog/keys';
import { decompressFrame, listFrames, splitLines } from '../bidlog/reader';
import { parseSpillName } from './spill';

const USAGE = `Reads the bid log: zstd batches in its Redis lists (LOG_REDIS_KEY, or LOG_REDIS_KEY:{0} …
:{n-1} when sharded or on a Redis Cluster, see docs/log-pipeline.md), and batches waiting in LOG_SPILL_DIR.

usage: npm run logs -- <command> [options]

commands:
  list     one line per batch: where it is, compressed and raw bytes, records, first and last ts
  cat      the records as NDJSON, oldest batch first (filter with --type / --id)
  count    number of batches and records, in total and by type (JSON); badFrames: batches skipped
  check    every request record has exactly one response record and no record is repeated;
           prints a JSON summary, exits 1 when something is off
  help     this text

options:
  --type T[,T…]     only records of these types (request, response, win, bill, loss, imp, click)
  --id ID           only records of this bid request id
  --source S        redis, spill or all (default all)
  --start N         first index to read in each list (default 0; negative counts from the end)
  --end N           last index to read in each list (default -1, the last)
  --json            list: one JSON object per batch
  --redis URL       default $REDIS_URL, else the private Redis \`npm start\` runs (its URL and password
                    in $BIDDER_RUN_DIR/state.json, default ./.run), else redis://127.0.0.1:6379 (on a
                    cluster: its credentials, and the seed node when REDIS_CLUSTER_NODES is unset)
  --key K           default $LOG_REDIS_KEY, else bidlog
  --shards N        default $LOG_REDIS_SHARDS (1 on one Redis, 16 on a cluster)
Redis Cluster: REDIS_MODE=cluster and REDIS_CLUSTER_NODES=host:port,… as for the bidder.
  --spill-dir DIR   default $LOG_SPILL_DIR, else $BIDDER_RUN_DIR/spill, else ./.run/spill

examples:
  npm run logs -- count
  npm run logs -- cat --type response --id 8f1c… | head
  npm run logs -- list --start -10
`;

interface Options {
  command: string;
  types: Set<string> | null;
  id: string | null;
  source: 'redis' | 'spill' | 'all';
  start: number;
  end: number;
  json: boolean;
  redis: RedisTarget;
  key: string;
  shards: number;
  spillDir: string;
}

/** One batch as read back: where it came from and its decompressed lines. */
interface ReadBatch {
  where: string;
  compressedBytes: number;
  rawBytes: number;
  lines: string[];
}

const ARGS = {
  type: { type: 'string' },
  id: { type: 'string' },
  source: { type: 'string' },
  start: { type: 'string' },
  end: { type: 'string' },
  json: { type: 'boolean' },
  redis: { type: 'string' },
  key: { type: 'string' },
  shards: { type: 'string' },
  'spill-dir': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function parseArgs(argv: string[]): Options {
  let cfg;
  try {
    cfg = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
  const o: Options = {
    command: 'help',
    types: null,
    id: null,
    source: 'all',
    start: 0,
    end: -1,
    json: false,
    redis: cfg.redis.mode === 'single' ? { ...cfg.redis, url: startedRedisUrl(process.env) ?? cfg.redis.url } : cfg.redis,
    key: cfg.logRedisKey,
    shards: cfg.logRedisShards,
    spillDir: process.env.LOG_SPILL_DIR?.trim() || !process.env.BIDDER_RUN_DIR?.trim() ? cfg.logSpillDir : path.resolve(process.env.BIDDER_RUN_DIR.trim(), 'spill'),
  };
  const int = (flag: string, v: string): number => {
    if (!/^-?\d+$/.test(v)) throw new UsageError(`${flag} ${v}: expected a whole number`);
    return Number(v);
  };
  const { options, positionals } = readArgs(argv, ARGS);
  let command: string | null = null;
  for (const { name, value: v } of options) {
    switch (name) {
      case 'type':
        o.types = new Set(v.split(',').filter(Boolean));
        break;
      case 'id':
        o.id = v;
        break;
      case 'source':
        if (v !== 'redis' && v !== 'spill' && v !== 'all') throw new UsageError(`--source ${v}: expected redis, spill or all`);
        o.source = v;
        break;
      case 'start':
        o.start = int('--start', v);
        break;
      case 'end':
        o.end = int('--end', v);
        break;
      case 'json':
        o.json = true;
        break;
      case 'redis':
        if (!/^rediss?:\/\//.test(v)) throw new UsageError(`--redis ${v.includes('@') ? redactUrl(v) : v}: expected a redis:// or rediss:// URL`);
        o.redis = { ...o.redis, url: v };
        break;
      case 'key':
        o.key = v;
        break;
      case 'shards': {
        const n = int('--shards', v);
        if (n < 1 || n > MAX_LOG_SHARDS) throw new UsageError(`--shards ${n}: expected 1 to ${MAX_LOG_SHARDS}`);
        o.shards = n;
        break;
      }
      case 'spill-dir':
        o.spillDir = path.resolve(v);
        break;
      case 'help':
        command = 'help';
        break;
    }
  }
  if (positionals.length > 1) throw new UsageError(`unexpected argument ${positionals[1]}`);
  if (command === null && positionals.length === 1) command = positionals[0];
  o.command = command ?? 'help';
  return o;
}

/**
 * The URL of the private Redis `npm start` runs (scripts/start.js records it, password included, in
 * the owner-only BIDDER_RUN_DIR/state.json), when REDIS_URL is unset or names that server without
 * its password: what `npm run logs` reads after a plain `npm start`. Null otherwise.
 */
function startedRedisUrl(env: NodeJS.ProcessEnv): string | null {
  let url: unknown;
  try {
    const state = JSON.parse(readFileSync(path.resolve(env.BIDDER_RUN_DIR?.trim() || '.run', 'state.json'), 'utf8')) as { redis?: { url?: unknown; started?: unknown } };
    url = state.redis?.started === true ? state.redis.url : null;
  } catch {
    return null; // not started by npm start from here
  }
  if (typeof url !== 'string') return null;
  const given = env.REDIS_URL?.trim();
  if (!given) return url;
  try {
    const a = new URL(given);
    const b = new URL(url);
    return a.password === '' && a.hostname === b.hostname && (a.port || '6379') === (b.port || '6379') ? url : null;
  } catch {
    return null;
  }
}

/** Batches that could not be read (not a whole zstd frame, checksum mismatch): skipped with a note on stderr. */
const bad = { frames: 0 };

/** The lists to read. */
function keysOf(o: Options): string[] {
  return logListKeys({ logRedisKey: o.key, logRedisShards: o.shards, redis: o.redis });
}

/**
 * Batches from Redis (LRANGE in pages, list by list), then from the spill directory, oldest first. A spill file
 * whose frame id Redis already acknowledges (pushed, then spilled by a final flush that ran out of
 * time) is skipped: its drain will be a no-op. A batch that does not decompress is skipped and
 * counted (`bad.frames`), so one corrupt element never hides the rest of the log.
 */
async function* batches(o: Options): AsyncGenerator<ReadBatch> {
  const client = createRedisClient(o.redis, 'bidlog-reader', { reconnect: false });
  client.on('error', () => undefined);
  client.on('node error', () => undefined);
  let connected = true;
  try {
    try {
      // On a cluster, connected is not yet usable (every master's connection must be up).
      await connectUsable(client);
    } catch (e) {
      connected = false;
      const msg = `cannot reach ${describeTarget(o.redis)}: ${e instanceof Error ? e.message : String(e)}`;
      if (o.source !== 'spill') {
        if (o.source === 'redis') throw new Error(msg);
        process.stderr.write(`logs: ${msg}; reading the spill directory only\n`);
      }
    }
    if (connected && o.source !== 'spill') yield* redisBatches(o, client);
    if (o.source !== 'redis') yield* spillBatches(o, connected ? client : null);
  } finally {
    client.disconnect();
  }
}

async function* redisBatches(o: Options, client: RedisClient): AsyncGenerator<ReadBatch> {
  for (const key of keysOf(o)) {
    for await (const { index, frame } of listFrames(client, key, o.start, o.end)) {
      const b = decode(`redis:${key}[${index}]`, frame);
      if (b !== null) yield b;
    }
  }
}

async function* spillBatches(o: Options, client: RedisClient | null): AsyncGenerator<ReadBatch> {
  const keys = keysOf(o);
  let names: string[];
  try {
    names = await fsp.readdir(o.spillDir);
  } catch {
    return; // no spill directory: nothing waits on disk
  }
  const files = names.filter((n) => parseSpillName(n) !== null).sort();
  for (const name of files) {
    const parsed = parseSpillName(name);
    if (parsed && client !== null && (await client.exists(ackKey(listKeyFor(keys, parsed.frameId), parsed.frameId))) === 1) {
      process.stderr.write(`logs: spill file ${name} is already in Redis (skipped)\n`);
      continue;
    }
    let data: Buffer;
    try {
      data = await fsp.readFile(path.join(o.spillDir, name));
    } catch {
      continue; // drained meanwhile
    }
    const b = decode(`spill:${name}`, data);
    if (b !== null) yield b;
  }
}

function decode(where: string, frame: Buffer): ReadBatch | null {
  let raw: Buffer;
  try {
    raw = decompressFrame(frame);
  } catch (e) {
    bad.frames++;
    process.stderr.write(`logs: ${where}: not a whole zstd frame (${e instanceof Error ? e.message : String(e)}); skipped\n`);
    return null;
  }
  return { where, compressedBytes: frame.length, rawBytes: raw.length, lines: splitLines(raw) };
}

/** A record's `type` and `id`, or null for a line that is not a JSON object. */
function parseLine(line: string): { type: unknown; id: unknown; ts: unknown } | null {
  try {
    const r = JSON.parse(line) as unknown;
    return r !== null && typeof r === 'object' ? (r as { type: unknown; id: unknown; ts: unknown }) : null;
  } catch {
    return null;
  }
}

function makeFilter(o: Options): (line: string) => boolean {
  if (o.types === null && o.id === null) return () => true;
  const types = o.types;
  const idNeedle = o.id === null ? null : `"id":${JSON.stringify(o.id)}`;
  return (line) => {
    if (idNeedle !== null && !line.includes(idNeedle)) return false;
    const r = parseLine(line);
    if (r === null) return false;
    if (types !== null && !(typeof r.type === 'string' && types.has(r.type))) return false;
    if (o.id !== null && r.id !== o.id) return false;
    return true;
  };
}

async function write(text: string): Promise<void> {
  if (!process.stdout.write(text)) await once(process.stdout, 'drain');
}

async function cmdList(o: Options): Promise<void> {
  let n = 0;
  for await (const b of batches(o)) {
    const first = b.lines.length > 0 ? parseLine(b.lines[0])?.ts : undefined;
    const last = b.lines.length > 0 ? parseLine(b.lines[b.lines.length - 1])?.ts : undefined;
    const row = {
      batch: b.where,
      compressedBytes: b.compressedBytes,
      rawBytes: b.rawBytes,
      records: b.lines.length,
      firstTs: typeof first === 'number' ? first : null,
      lastTs: typeof last === 'number' ? last : null,
    };
    n++;
    if (o.json) {
      await write(JSON.stringify(row) + '\n');
    } else {
      const when = (t: number | null): string => (t === null ? '-' : new Date(t).toISOString());
      await write(
        `${row.batch}\t${row.compressedBytes} B zstd\t${row.rawBytes} B raw` +
          `\t${(row.rawBytes / Math.max(1, row.compressedBytes)).toFixed(1)}x\t${row.records} records` +
          `\t${when(row.firstTs)} .. ${when(row.lastTs)}\n`,
      );
    }
  }
  if (!o.json) process.stderr.write(`${n} batches\n`);
}

async function cmdCat(o: Options): Promise<void> {
  const keep = makeFilter(o);
  for await (const b of batches(o)) {
    let out = '';
    for (const line of b.lines) if (keep(line)) out += line + '\n';
    if (out.length > 0) await write(out);
  }
}

async function cmdCount(o: Options): Promise<void> {
  const keep = makeFilter(o);
  const byType: Record<string, number> = {};
  let batchCount = 0;
  let records = 0;
  let compressed = 0;
  let raw = 0;
  for await (const b of batches(o)) {
    batchCount++;
    compressed += b.compressedBytes;
    raw += b.rawBytes;
    for (const line of b.lines) {
      if (!keep(line)) continue;
      records++;
      const t = parseLine(line)?.type;
      const k = typeof t === 'string' ? t : '(none)';
      byType[k] = (byType[k] ?? 0) + 1;
    }
  }
  await write(JSON.stringify({ batches: batchCount, records, byType, compressedBytes: compressed, rawBytes: raw, badFrames: bad.frames }) + '\n');
}

async function cmdCheck(o: Options): Promise<number> {
  const requests = new Map<string, number>();
  const responses = new Map<string, number>();
  const lines = new Set<string>();
  let records = 0;
  let duplicateLines = 0;
  let malformed = 0;
  for await (const b of batches(o)) {
    for (const line of b.lines) {
      records++;
      if (lines.has(line)) duplicateLines++;
      else lines.add(line);
      const r = parseLine(line);
      if (r === null || typeof r.ts !== 'number' || typeof r.type !== 'string') {
        malformed++;
        continue;
      }
      const id = typeof r.id === 'string' ? r.id : JSON.stringify(r.id);
      if (r.type === 'request') requests.set(id, (requests.get(id) ?? 0) + 1);
      else if (r.type === 'response') responses.set(id, (responses.get(id) ?? 0) + 1);
    }
  }
  let repeatedRequests = 0;
  let repeatedResponses = 0;
  let requestsWithoutResponse = 0;
  let responsesWithoutRequest = 0;
  for (const [id, n] of requests) {
    if (n > 1) repeatedRequests++;
    if (!responses.has(id)) requestsWithoutResponse++;
  }
  for (const [id, n] of responses) {
    if (n > 1) repeatedResponses++;
    if (!requests.has(id)) responsesWithoutRequest++;
  }
  const ok = bad.frames + duplicateLines + malformed + repeatedRequests + repeatedResponses + requestsWithoutResponse + responsesWithoutRequest === 0;
  await write(
    JSON.stringify({
      ok,
      records,
      badFrames: bad.frames,
      requestIds: requests.size,
      responseIds: responses.size,
      duplicateLines,
      malformed,
      repeatedRequests,
      repeatedResponses,
      requestsWithoutResponse,
      responsesWithoutRequest,
    }) + '\n',
  );
  return ok ? 0 : 1;
}

async function main(argv: string[]): Promise<number> {
  const o = parseArgs(argv);
  switch (o.command) {
    case 'help':
      process.stdout.write(USAGE);
      return 0;
    case 'list':
      await cmdList(o);
      return 0;
    case 'cat':
      await cmdCat(o);
      return 0;
    case 'count':
      await cmdCount(o);
      return 0;
    case 'check':
      return cmdCheck(o);
    default:
      throw new UsageError(`unknown command ${o.command}`);
  }
}

assertNodeVersion();
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(0); // `| head`
  throw e;
});
let settled = false;
// A command that nothing will ever answer (a client ended with it pending) leaves Node nothing to
// run, and it would exit 0 in silence: a `check` that printed nothing would look like success.
process.on('beforeExit', () => {
  if (settled) return;
  settled = true;
  process.stderr.write('logs: cannot reach Redis: a command never got its answer and nothing was left to wait for\n');
  process.exitCode = 1;
});
main(process.argv.slice(2)).then(
  (code) => {
    settled = true;
    process.exitCode = code;
  },
  (e: unknown) => {
    settled = true;
    if (e instanceof UsageError) process.stderr.write(`logs: ${e.message}\n\n${USAGE}`);
    else process.stderr.write(`logs: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = e instanceof UsageError ? 2 : 1;
  },
);
