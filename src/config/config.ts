import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { Type, type Static } from '@sinclair/typebox';
import { Bool, checkUrl, type Env, hideUserinfo, Int, OneOf, Reader, readEnv, Str } from './env';
import { type ExchangeSpec, readExchangesFile } from './exchanges-file';

export { type Env, hideUserinfo, Reader } from './env';

/** CURRENCY_MAX_CHANGE_PCT's default: a rate may double or halve between two refreshes, not more. */
export const DEFAULT_MAX_CHANGE_PCT = 100;
/** CURRENCY_MAX_DRIFT_PCT's default: within a day a rate may move to twice or half its reference, not more. */
export const DEFAULT_MAX_DRIFT_PCT = 100;

/**
 * Every setting the bidder reads, loaded from the environment once at start-up and frozen.
 * A bad value stops the process with one error that names every bad variable (README, Configuration).
 */
export interface Config {
  /**
   * NODE_ENV: `production` turns on the checks of unsafe settings (secrets, TRACKING_BASE_URL).
   * Exactly `production`, `development` or `test`; anything else (`Production`, `prod`) is refused.
   * Unset: `production` under PM2 (pm_id set), else `development`.
   */
  readonly nodeEnv: 'production' | 'development' | 'test';
  readonly port: number;
  readonly host: string;
  /** The admin port: metrics, the machine view, debug routes (never the exchange-facing port). */
  readonly adminPort: number;
  readonly adminHost: string;
  /** Deadline for a client to send a request's headers (ms). */
  readonly httpHeadersTimeoutMs: number;
  /** Deadline for a client to send a whole request, headers and body (ms). */
  readonly httpRequestTimeoutMs: number;
  /** Open connections per worker; past it new connections are dropped (and counted). */
  readonly httpMaxConnections: number;
  /** How long an idle keep-alive connection is kept (ms). */
  readonly httpKeepAliveTimeoutMs: number;
  readonly redisUrl: string;
  /** REDIS_ALLOW_VOLATILE: production runs on a Redis without an append-only file, or one that evicts (src/health/redis-durability.ts). */
  readonly redisAllowVolatile: boolean;
  /** One Redis server or a Redis Cluster, and how to reach it (REDIS_MODE, REDIS_CLUSTER_NODES, REDIS_URL). */
  readonly redis: RedisTarget;
  /** This host (machine, pod) in worker ids, heartbeats, metrics keys, log records and spill file names. */
  readonly hostId: string;
  /** The base name of the bid log lists (logListKeys in src/bidlog/keys.ts gives the lists). */
  readonly logRedisKey: string;
  /** How many lists the bid log is spread over (each its own hash slot in a cluster). */
  readonly logRedisShards: number;
  /** Replicas that must hold a pushed frame (WAIT) before the worker forgets it; 0: the master's reply is enough. */
  readonly logWaitReplicas: number;
  /** How long a push waits for those replicas (WAIT's timeout, ms). */
  readonly logWaitTimeoutMs: number;
  /** How often the log buffer is flushed to Redis. */
  readonly logFlushIntervalMs: number;
  /** Flush early once the queued NDJSON passes this many bytes. */
  readonly logFlushBytes: number;
  /** Upper bound of queued + pending (unsent) log bytes kept in memory before spilling to disk. */
  readonly logMaxMemoryBytes: number;
  /** zstd level of the bid log batches (1 = fastest, 19 = smallest). */
  readonly logZstdLevel: number;
  /** Directory for compressed batches that could not reach Redis. */
  readonly logSpillDir: string;
  /** Upper bound of the spill directory; past it records are dropped (and counted). */
  readonly logSpillMaxBytes: number;
  /** Journal every record to `<logSpillDir>/journal` before its answer is sent (a crash of the process loses none). */
  readonly logJournal: boolean;
  /** Where the journal's segments are (local to the host; default `<logSpillDir>/journal`; tmpfs makes a write cheaper). */
  readonly logJournalDir: string;
  /** Past this many journal bytes on disk (per worker), frames waiting for Redis are spilled early, so that their segments go. */
  readonly logJournalMaxBytes: number;
  /** fdatasync the journal this often (ms), so that a power loss loses at most that much; 0: never. */
  readonly logJournalFsyncMs: number;
  /** Past this many bytes of log frames waiting in Redis for the shipper, the worker says it is degraded. */
  readonly logBacklogWarnBytes: number;
  /** Deadline for the final flush on a graceful stop; shorter than PM2's kill_timeout. */
  readonly shutdownTimeoutMs: number;
  readonly campaignsFile: string;
  readonly trackingBaseUrl: string;
  /** Secret for signing tracking payloads (HMAC): the signing key. */
  readonly trackingSecret: string;
  /** Id of the signing key, carried in every payload (0-255). */
  readonly trackingKeyId: number;
  /** Earlier keys still accepted when verifying (key rotation). */
  readonly trackingOldKeys: ReadonlyArray<{ readonly id: number; readonly secret: string }>;
  /** Payload formats 1 and 2 of earlier versions (one signature for every URL of a bid) are still read. */
  readonly trackingLegacyPayloads: boolean;
  /** Largest accepted request body, before and after gunzip. */
  readonly bodyLimitBytes: number;
  /** Identifies this worker in log records and metrics (PM2 sets NODE_APP_INSTANCE). */
  readonly workerId: string;
  /** Per-request access log (off by default: the bid path is the hot path). */
  readonly accessLog: boolean;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** How often each worker re-reads campaign spend from Redis and renews its budget lease. */
  readonly budgetRefreshMs: number;
  /** Bids younger than this still count against the worker's lease (their billing may yet arrive). */
  readonly budgetWindowMs: number;
  /** Pacing (src/delivery/pacer.ts): time constant of the measured spend rate, ms. */
  readonly pacingWindowMs: number;
  /** Pacing: a campaign's share of requests at most doubles this often (no burst while the controller learns), ms. */
  readonly pacingRampMs: number;
  /** Pacing: an even campaign aims to have spent its daily budget this long before its day ends, ms. */
  readonly pacingEndMarginMs: number;
  /** How often each worker adds the eligible requests it counted per hour into Redis, for traffic-shaped curves (PACING_TRAFFIC_SYNC_S). */
  readonly pacingTrafficSyncMs: number;
  /** Bid shading (src/delivery/shading.ts) of first-price bids; off: bid the value. */
  readonly shading: boolean;
  /** Shading: share of bids priced at random around the best price, to keep learning. */
  readonly shadingExplore: number;
  /** Shading: how often a worker publishes what it learned and reads the others' (Redis), ms. */
  readonly shadingSyncMs: number;
  /** Shading: notices learned from per source (exchange) and second on one worker; the rest are counted, not learned. */
  readonly shadingLearnPerS: number;
  /** Shading: half-life of what the win-price model learned, ms (SHADING_HALF_LIFE_MIN). */
  readonly shadingHalfLifeMs: number;
  /** How long a billed bid id is remembered to make billing idempotent. */
  readonly billDedupeTtlSeconds: number;
  /** Poll CAMPAIGNS_FILE for changes this often and hot-swap it (0 = never). */
  readonly campaignsWatchMs: number;
  /** Enables POST /debug/explain (per-candidate filter verdicts); off by default. */
  readonly debugEndpoints: boolean;
  /** Requests the bid path runs, without effects, before the worker listens (src/bidding/warm-up.ts); 0 = none. */
  readonly warmUpRequests: number;
  /** Key of the keyed hash that stands in for user ids in the bid log, tracking payloads and caps. */
  readonly piiHashSecret: string;
  /** Our IAB TCF vendor id; null: none, so a request under GDPR never has consent. */
  readonly tcfVendorId: number | null;
  /** Log a consented request's personal data as sent (else IPs truncated, ids hashed, data dropped). */
  readonly logRawPii: boolean;
  /** The fraction of bid requests whose redacted body the bid log keeps (0 to 1; 1 keeps every body). */
  readonly logRequestSample: number;
  /** Where currency rates come from (Prebid Server's currency-file format); neither: the static table. */
  readonly currencyRatesFile: string | null;
  readonly currencyRatesUrl: string | null;
  /** How often the rates are read again (s). */
  readonly currencyRefreshSeconds: number;
  /** Rates older than this (by their dataAsOf) make the worker degraded (s; 0: never). */
  readonly currencyMaxAgeSeconds: number;
  /** A refreshed table with a rate moved by more than this (percent, either way) is refused (0: no bound). */
  readonly currencyMaxChangePct: number;
  /** A refreshed table with a rate more than this (percent, either way) from the reference rates (those in use a day before) is refused (0: no bound). */
  readonly currencyMaxDriftPct: number;
  /** The domain named in `ext.dsa.transparency` of DSA bids (default: TRACKING_BASE_URL's host). */
  readonly dsaDomain: string;
  /**
   * Overload: a bid request that has waited longer than min(this, tmax − SHED_MARGIN_MS) before the
   * bidder could look at it is answered at once with a no-bid (shed), not late (ms; 0: never shed).
   */
  readonly shedMaxWaitMs: number;
  /** What an exchange's tmax must leave for the network and the bidder's own work (ms). */
  readonly shedMarginMs: number;
  /** The exchanges that may call the bid endpoint (EXCHANGES_FILE); null: anyone may (src/exchanges/exchanges.ts). */
  readonly exchanges: readonly ExchangeSpec[] | null;
  /** With several exchanges, the share (%) of a campaign's lease one exchange's unbilled bids may hold. */
  readonly budgetSourcePercent: number;
  /** Largest bid response body (UTF-8 bytes); bids that would take it past this are dropped. */
  readonly answerMaxBytes: number;
}

/** The development secrets used when TRACKING_SECRET / PII_HASH_SECRET are unset outside production. */
export const DEV_TRACKING_SECRET = 'dev-only-tracking-secret-change-me';
export const DEV_PII_HASH_SECRET = 'dev-only-pii-hash-secret-change-me';
/** Where notice URLs point outside production when TRACKING_BASE_URL is unset; production must set it. */
export const DEV_TRACKING_BASE_URL = 'http://127.0.0.1:8080';
/** Shortest secret accepted in production (bytes of UTF-8). */
export const MIN_SECRET_BYTES = 32;

/** The exit code of a configuration error (ecosystem.config.js: PM2 stops, rather than restarts, a process that exits with it). */
export const EXIT_CONFIG_ERROR = 2;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    // One problem, one line (what PM2's error log shows); several, one line each.
    super(problems.length === 1 ? `invalid configuration: ${problems[0]}` : `invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** The project directory: the nearest folder above this file holding package.json (dist/, the test build, a Docker image). */
function projectRoot(): string {
  for (let dir = __dirname; ; ) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

export const DEFAULT_CAMPAIGNS_FILE = path.join(projectRoot(), 'data', 'campaigns.demo.json');

/** A Redis node's address. */
export interface RedisNode {
  readonly host: string;
  readonly port: number;
}

/**
 * Where Redis is. `single`: the server at `url`. `cluster`: a Redis Cluster found from the seed
 * `nodes` (REDIS_CLUSTER_NODES, else REDIS_URL's host and port); `url` then gives every node's
 * credentials and TLS (`rediss:`).
 */
export interface RedisTarget {
  readonly mode: 'single' | 'cluster';
  readonly url: string;
  readonly nodes: readonly RedisNode[];
}

/** Seed nodes a cluster client is given at most (it discovers the others itself). */
export const MAX_SEED_NODES = 64;
/** Most bid log lists (LOG_REDIS_SHARDS): the shipper and the reader visit each one every round. */
export const MAX_LOG_SHARDS = 256;
/**
 * LOG_REDIS_SHARDS in cluster mode when unset: 16 lists put the pushes of every host on 16 hash
 * slots, which the even slot split of a 3-master cluster spreads over its masters 6/6/4 (8 would
 * land 2/4/2: src/bidlog/keys.ts lists the slots), and a bigger cluster over up to 16 masters. The
 * cost is in the readers: the shipper's idle round asks 2 commands per list, `npm run logs` visits each.
 */
export const DEFAULT_CLUSTER_LOG_SHARDS = 16;
/** HOST_ID: a DNS label's characters, as a host or pod name has them (no `_`: it separates the fields of spill file names). */
const HOST_ID = /^[A-Za-z0-9.-]{1,63}$/;

/** The hostname made a valid HOST_ID. */
export function defaultHostId(hostname: string = os.hostname()): string {
  const id = hostname.replace(/[^A-Za-z0-9.-]/g, '-').slice(0, 63);
  return id === '' ? 'host' : id;
}

/** `host:port`, `[v6]:port` → a node; null when malformed. */
function parseNode(text: string): RedisNode | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1].startsWith('[') ? m[1].slice(1, -1) : m[1], port };
}

/** REDIS_URL, REDIS_MODE and REDIS_CLUSTER_NODES (the bidder, the log reader and the shipper read them alike). */
export function readRedisTarget(r: Reader, env: Env): RedisTarget {
  const url = r.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']);
  const nodesText = env.REDIS_CLUSTER_NODES?.trim() ?? '';
  const explicitMode = env.REDIS_MODE?.trim() ? r.oneOf<RedisTarget['mode']>('REDIS_MODE', 'single', ['single', 'cluster']) : null;
  if (nodesText !== '' && explicitMode === 'single') r.problem('REDIS_CLUSTER_NODES is set, which means REDIS_MODE=cluster, but REDIS_MODE=single: unset one of them');
  const mode = nodesText !== '' ? 'cluster' : (explicitMode ?? 'single');
  const nodes: RedisNode[] = [];
  if (nodesText !== '') {
    const parts = nodesText.split(',').map((p) => p.trim()).filter((p) => p !== '');
    const bad = parts.filter((p) => parseNode(p) === null);
    if (bad.length > 0) r.problem(`REDIS_CLUSTER_NODES: ${bad.map((b) => JSON.stringify(b)).join(', ')}: expected host:port,host:port,… (ports 1-65535)`);
    else if (parts.length > MAX_SEED_NODES) r.problem(`REDIS_CLUSTER_NODES: ${parts.length} nodes; list at most ${MAX_SEED_NODES} (the client discovers the others)`);
    else for (const p of parts) nodes.push(parseNode(p)!);
  } else if (mode === 'cluster') {
    try {
      const u = new URL(url);
      nodes.push({ host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 6379) });
    } catch {
      // REDIS_URL is reported above
    }
  }
  return Object.freeze({ mode, url, nodes: Object.freeze(nodes) });
}

/** LOG_REDIS_KEY and LOG_REDIS_SHARDS; a key of sharded lists must not carry a hash tag of its own (each shard's tag must be the one). */
export function readLogKeys(r: Reader, mode: RedisTarget['mode']): { logRedisKey: string; logRedisShards: number } {
  const logRedisKey = r.str('LOG_REDIS_KEY', 'bidlog');
  const logRedisShards = r.int('LOG_REDIS_SHARDS', mode === 'cluster' ? DEFAULT_CLUSTER_LOG_SHARDS : 1, 1, MAX_LOG_SHARDS);
  if (!/^[^\s{}]{1,200}$/.test(logRedisKey) && (mode === 'cluster' || logRedisShards > 1)) {
    r.problem(`LOG_REDIS_KEY=${JSON.stringify(logRedisKey)}: 1 to 200 characters without spaces or braces when the log is sharded or on a Redis Cluster (the lists are ${logRedisKey}:{0}, ${logRedisKey}:{1}, …)`);
  }
  return { logRedisKey, logRedisShards };
}

/** HOST_ID, default the hostname. */
export function readHostId(r: Reader, hostname?: string): string {
  const id = r.str('HOST_ID', defaultHostId(hostname));
  if (!HOST_ID.test(id)) r.problem(`HOST_ID=${JSON.stringify(id)}: expected 1 to 63 of A-Z a-z 0-9 . - (it names this host in keys and file names)`);
  return id;
}

const MiB = 1024 * 1024;
const DAY_S = 24 * 3600;
const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/**
 * The bidder's environment variables: each one's type, default and bounds (README, Configuration;
 * INTERFACE.md). loadConfig reads them with readEnv, which words a refused value's problem from
 * the same schema. Read beside it, with checks of their own: NODE_ENV, HOST_ID, REDIS_URL,
 * REDIS_MODE, REDIS_CLUSTER_NODES, LOG_REDIS_KEY and LOG_REDIS_SHARDS (shared with the shipper),
 * EXCHANGES_FILE and EXCHANGES_OPEN. No default: derived from other settings (loadConfig).
 */
export const BIDDER_ENV = Type.Object({
  PORT: Int(8080, 0, 65535, 'the exchange-facing port'),
  HOST: Str('0.0.0.0'),
  ADMIN_PORT: Int(8081, 0, 65535, 'metrics, the machine view, debug routes'),
  ADMIN_HOST: Str('127.0.0.1'),
  HTTP_HEADERS_TIMEOUT_MS: Int(2_000, 100, 60_000),
  HTTP_REQUEST_TIMEOUT_MS: Int(3_000, 100, 120_000),
  HTTP_MAX_CONNECTIONS: Int(2_048, 1, 1_000_000),
  HTTP_KEEPALIVE_TIMEOUT_MS: Int(65_000, 1_000, 600_000),
  REDIS_ALLOW_VOLATILE: Bool(false),
  LOG_REDIS_WAIT_REPLICAS: Type.Optional(Int(undefined, 0, 16, 'default 1 on a Redis Cluster, else 0')),
  // Below the client's command timeout (3 s, src/redis/redis.options.ts), which bounds every reply.
  LOG_REDIS_WAIT_MS: Int(1_000, 10, 2_500),
  LOG_FLUSH_INTERVAL_MS: Int(10_000, 10, 3_600_000),
  LOG_FLUSH_BYTES: Int(8 * MiB, 1024, 1024 * MiB),
  LOG_MAX_MEMORY_BYTES: Int(256 * MiB, 64 * 1024, 16 * 1024 * MiB),
  // 2 by default, as ZSTD_LEVEL in src/log/frame.ts says why.
  LOG_ZSTD_LEVEL: Int(2, 1, 19),
  LOG_SPILL_DIR: Type.Optional(Str(undefined, 'default .run/spill under the working directory')),
  LOG_SPILL_MAX_BYTES: Int(2048 * MiB, 0, Number.MAX_SAFE_INTEGER),
  LOG_JOURNAL: Bool(true),
  LOG_JOURNAL_DIR: Type.Optional(Str(undefined, 'default <LOG_SPILL_DIR>/journal')),
  LOG_JOURNAL_MAX_BYTES: Int(256 * MiB, MiB, Number.MAX_SAFE_INTEGER),
  LOG_JOURNAL_FSYNC_MS: Int(0, 0, 3_600_000),
  LOG_BACKLOG_WARN_BYTES: Int(512 * MiB, 0, Number.MAX_SAFE_INTEGER),
  SHUTDOWN_TIMEOUT_MS: Int(8_000, 100, 600_000),
  CAMPAIGNS_FILE: Str(DEFAULT_CAMPAIGNS_FILE),
  TRACKING_BASE_URL: Str(DEV_TRACKING_BASE_URL, 'an http or https URL'),
  TRACKING_SECRET: Str(DEV_TRACKING_SECRET),
  TRACKING_KEY_ID: Int(1, 0, 255),
  TRACKING_OLD_KEYS: Str('', 'comma-separated id:secret pairs'),
  TRACKING_LEGACY_PAYLOADS: Bool(true),
  BODY_LIMIT_BYTES: Int(MiB, 1024, 64 * MiB),
  WORKER_ID: Type.Optional(Str(undefined, 'default NODE_APP_INSTANCE, pm_id, else the process id')),
  ACCESS_LOG: Bool(false),
  LOG_LEVEL: OneOf(LEVELS, 'info'),
  BUDGET_REFRESH_MS: Int(250, 20, 60_000),
  BUDGET_WINDOW_MS: Int(10_000, 0, 3_600_000),
  PACING_WINDOW_S: Int(120, 10, DAY_S),
  PACING_RAMP_S: Int(5, 1, 3600),
  PACING_END_MARGIN_S: Int(300, 0, 6 * 3600),
  PACING_TRAFFIC_SYNC_S: Int(60, 1, 3600),
  SHADING: Bool(true),
  SHADING_EXPLORE_PERCENT: Int(5, 0, 50),
  SHADING_SYNC_S: Int(10, 1, 3600),
  SHADING_LEARN_PER_S: Int(1000, 1, 1_000_000),
  SHADING_HALF_LIFE_MIN: Int(10, 1, 7 * 24 * 60),
  BILL_DEDUPE_TTL_S: Int(7 * DAY_S, 60, 90 * DAY_S),
  CAMPAIGNS_WATCH_MS: Int(1_000, 0, 3_600_000),
  DEBUG_ENDPOINTS: Bool(false),
  WARM_UP_REQUESTS: Int(3000, 0, 1_000_000),
  PII_HASH_SECRET: Str(DEV_PII_HASH_SECRET),
  TCF_VENDOR_ID: Type.Optional(Int(undefined, 1, 65535, 'unset: none')),
  LOG_RAW_PII: Bool(false),
  LOG_REQUEST_SAMPLE: Type.Number({ default: 0.01, minimum: 0, maximum: 1 }),
  CURRENCY_RATES_FILE: Type.Optional(Str(undefined)),
  CURRENCY_RATES_URL: Type.Optional(Str(undefined, 'an http or https URL')),
  CURRENCY_REFRESH_S: Int(3600, 10, 7 * DAY_S),
  CURRENCY_MAX_AGE_S: Int(2 * DAY_S, 0, 365 * DAY_S),
  CURRENCY_MAX_CHANGE_PCT: Int(DEFAULT_MAX_CHANGE_PCT, 0, 1_000_000),
  CURRENCY_MAX_DRIFT_PCT: Int(DEFAULT_MAX_DRIFT_PCT, 0, 1_000_000),
  DSA_DOMAIN: Str('', 'default TRACKING_BASE_URL\'s host'),
  SHED_MAX_WAIT_MS: Int(200, 0, 60_000),
  SHED_MARGIN_MS: Int(30, 0, 10_000),
  BUDGET_SOURCE_PERCENT: Int(50, 1, 100),
  ANSWER_MAX_BYTES: Int(64 * 1024, 4 * 1024, 16 * MiB),
});
export type BidderEnv = Static<typeof BIDDER_ENV>;

const NODE_ENVS = ['production', 'development', 'test'] as const;

/**
 * NODE_ENV, exactly as Node tools spell it. A misspelling (`Production`, `prod`) would otherwise run
 * production traffic as development, on the development secrets anyone can read here: refused.
 * Unset under PM2 (it sets pm_id in every process it starts) means production, as the process file
 * sets it; unset elsewhere (`node dist/main.js`, tests) means development, said at start.
 */
function readNodeEnv(r: Reader, env: Env): Config['nodeEnv'] {
  if ((env.NODE_ENV ?? '').trim() === '') return env.pm_id !== undefined ? 'production' : 'development';
  const v = env.NODE_ENV!.trim();
  if (!(NODE_ENVS as readonly string[]).includes(v)) {
    r.problem(`NODE_ENV=${JSON.stringify(v)}: expected production, development or test, exactly (lower case); production checks the secrets and refuses unsafe settings`);
    return 'production';
  }
  return v as Config['nodeEnv'];
}

/**
 * TRACKING_BASE_URL: scheme, host and port only. Notice URLs are this plus `/t/<kind>?p=…&s=…`, and
 * the notice routes are served at the root: a path, a query or a fragment would break every one of
 * them, and credentials would be sent to every browser that loads an ad.
 */
function checkTrackingBaseUrl(r: Reader, url: string): void {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return; // reported by checkUrl
  }
  const extra = [u.username !== '' || u.password !== '' ? 'credentials' : '', u.pathname !== '/' ? 'a path' : '', u.search !== '' ? 'a query' : '', u.hash !== '' ? 'a fragment' : ''].filter((x) => x !== '');
  if (extra.length > 0) {
    r.problem(`TRACKING_BASE_URL=${JSON.stringify(hideUserinfo(url))}: has ${extra.join(', ')}; give the scheme, host and port only (no path, query or fragment), e.g. https://bidder.example.com, the address exchanges and browsers reach the notice routes at`);
  }
}

export function loadConfig(env: Env = process.env): Config {
  const r = new Reader(env);
  const nodeEnv = readNodeEnv(r, env);
  const production = nodeEnv === 'production';
  const redis = readRedisTarget(r, env);
  const hostId = readHostId(r);
  const logKeys = readLogKeys(r, redis.mode);
  const e = readEnv(env, BIDDER_ENV, r.problems);
  checkUrl(r.problems, 'TRACKING_BASE_URL', e.TRACKING_BASE_URL, ['http:', 'https:']);
  if (e.CURRENCY_RATES_URL !== undefined) checkUrl(r.problems, 'CURRENCY_RATES_URL', e.CURRENCY_RATES_URL, ['http:', 'https:'], true);
  const spillDir = e.LOG_SPILL_DIR ?? path.join(process.cwd(), '.run', 'spill');
  const cfg: Config = {
    nodeEnv,
    port: e.PORT,
    host: e.HOST,
    adminPort: e.ADMIN_PORT,
    adminHost: e.ADMIN_HOST,
    httpHeadersTimeoutMs: e.HTTP_HEADERS_TIMEOUT_MS,
    httpRequestTimeoutMs: e.HTTP_REQUEST_TIMEOUT_MS,
    httpMaxConnections: e.HTTP_MAX_CONNECTIONS,
    httpKeepAliveTimeoutMs: e.HTTP_KEEPALIVE_TIMEOUT_MS,
    redisUrl: redis.url,
    redis,
    redisAllowVolatile: e.REDIS_ALLOW_VOLATILE,
    hostId,
    ...logKeys,
    logWaitReplicas: e.LOG_REDIS_WAIT_REPLICAS ?? (redis.mode === 'cluster' ? 1 : 0),
    logWaitTimeoutMs: e.LOG_REDIS_WAIT_MS,
    logFlushIntervalMs: e.LOG_FLUSH_INTERVAL_MS,
    logFlushBytes: e.LOG_FLUSH_BYTES,
    logMaxMemoryBytes: e.LOG_MAX_MEMORY_BYTES,
    logZstdLevel: e.LOG_ZSTD_LEVEL,
    logSpillDir: path.resolve(spillDir),
    logSpillMaxBytes: e.LOG_SPILL_MAX_BYTES,
    logJournal: e.LOG_JOURNAL,
    logJournalDir: path.resolve(e.LOG_JOURNAL_DIR ?? path.join(spillDir, 'journal')),
    logJournalMaxBytes: e.LOG_JOURNAL_MAX_BYTES,
    logJournalFsyncMs: e.LOG_JOURNAL_FSYNC_MS,
    logBacklogWarnBytes: e.LOG_BACKLOG_WARN_BYTES,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    campaignsFile: path.resolve(e.CAMPAIGNS_FILE),
    trackingBaseUrl: e.TRACKING_BASE_URL.replace(/\/+$/, ''),
    trackingSecret: e.TRACKING_SECRET,
    trackingKeyId: e.TRACKING_KEY_ID,
    trackingOldKeys: Object.freeze(readKeys(r, 'TRACKING_OLD_KEYS', e.TRACKING_OLD_KEYS)),
    trackingLegacyPayloads: e.TRACKING_LEGACY_PAYLOADS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    workerId: e.WORKER_ID ?? env.NODE_APP_INSTANCE ?? env.pm_id ?? String(process.pid),
    accessLog: e.ACCESS_LOG,
    logLevel: e.LOG_LEVEL,
    budgetRefreshMs: e.BUDGET_REFRESH_MS,
    budgetWindowMs: e.BUDGET_WINDOW_MS,
    pacingWindowMs: e.PACING_WINDOW_S * 1000,
    pacingRampMs: e.PACING_RAMP_S * 1000,
    pacingEndMarginMs: e.PACING_END_MARGIN_S * 1000,
    pacingTrafficSyncMs: e.PACING_TRAFFIC_SYNC_S * 1000,
    shading: e.SHADING,
    shadingExplore: e.SHADING_EXPLORE_PERCENT / 100,
    shadingSyncMs: e.SHADING_SYNC_S * 1000,
    shadingLearnPerS: e.SHADING_LEARN_PER_S,
    shadingHalfLifeMs: e.SHADING_HALF_LIFE_MIN * 60_000,
    billDedupeTtlSeconds: e.BILL_DEDUPE_TTL_S,
    campaignsWatchMs: e.CAMPAIGNS_WATCH_MS,
    debugEndpoints: e.DEBUG_ENDPOINTS,
    warmUpRequests: e.WARM_UP_REQUESTS,
    piiHashSecret: e.PII_HASH_SECRET,
    tcfVendorId: e.TCF_VENDOR_ID ?? null,
    logRawPii: e.LOG_RAW_PII,
    logRequestSample: e.LOG_REQUEST_SAMPLE,
    currencyRatesFile: e.CURRENCY_RATES_FILE !== undefined ? path.resolve(e.CURRENCY_RATES_FILE) : null,
    currencyRatesUrl: e.CURRENCY_RATES_URL ?? null,
    currencyRefreshSeconds: e.CURRENCY_REFRESH_S,
    currencyMaxAgeSeconds: e.CURRENCY_MAX_AGE_S,
    currencyMaxChangePct: e.CURRENCY_MAX_CHANGE_PCT,
    currencyMaxDriftPct: e.CURRENCY_MAX_DRIFT_PCT,
    dsaDomain: e.DSA_DOMAIN,
    shedMaxWaitMs: e.SHED_MAX_WAIT_MS,
    shedMarginMs: e.SHED_MARGIN_MS,
    exchanges: readExchanges(r, env),
    budgetSourcePercent: e.BUDGET_SOURCE_PERCENT,
    answerMaxBytes: e.ANSWER_MAX_BYTES,
  };
  if (cfg.dsaDomain === '') {
    // TRACKING_BASE_URL's host when it is a name; an IP address is no domain (configWarnings says so).
    const host = trackingHost(cfg.trackingBaseUrl);
    if (host !== null && !isIpAddress(host)) (cfg as { dsaDomain: string }).dsaDomain = host;
  } else if (!DOMAIN.test(cfg.dsaDomain) || isIpAddress(cfg.dsaDomain)) {
    r.problem(`DSA_DOMAIN=${JSON.stringify(cfg.dsaDomain)}: expected a domain name (e.g. bidder.example.com: no scheme, path or port, not an IP address); it is named in ext.dsa.transparency`);
  }
  checkTrackingBaseUrl(r, cfg.trackingBaseUrl);
  if (cfg.currencyRatesFile !== null && cfg.currencyRatesUrl !== null) r.problem('CURRENCY_RATES_FILE, CURRENCY_RATES_URL: set one of them, not both');
  if (Buffer.byteLength(cfg.piiHashSecret) < 16) r.problem(`PII_HASH_SECRET: at least 16 bytes (${MIN_SECRET_BYTES} in production)`);
  if (cfg.httpHeadersTimeoutMs > cfg.httpRequestTimeoutMs) {
    r.problem(`HTTP_HEADERS_TIMEOUT_MS=${cfg.httpHeadersTimeoutMs}: must not exceed HTTP_REQUEST_TIMEOUT_MS (${cfg.httpRequestTimeoutMs})`);
  }
  if (cfg.port !== 0 && cfg.adminPort === cfg.port) {
    r.problem(`ADMIN_PORT=${cfg.adminPort}: the same as PORT; the admin port (metrics, machine view, debug routes) must be another port than the exchange-facing one`);
  }
  if (cfg.trackingOldKeys.some((k) => k.id === cfg.trackingKeyId)) {
    r.problem(`TRACKING_OLD_KEYS: key id ${cfg.trackingKeyId} is TRACKING_KEY_ID's, the signing key; give the new key a new id`);
  }
  if (production) checkProductionSecrets(env, cfg, r);
  checkAdmission(r, env, cfg, production);
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(cfg);
}

/** `id:secret` pairs separated by commas (ids 0-255, unique). */
function readKeys(r: Reader, name: string, text: string): Array<{ id: number; secret: string }> {
  if (text === '') return [];
  const out: Array<{ id: number; secret: string }> = [];
  for (const part of text.split(',')) {
    const p = part.trim();
    const colon = p.indexOf(':');
    const id = colon > 0 ? Number(p.slice(0, colon)) : NaN;
    const secret = colon > 0 ? p.slice(colon + 1) : '';
    if (!Number.isInteger(id) || id < 0 || id > 255 || secret === '' || out.some((k) => k.id === id)) {
      r.problem(`${name}: expected comma-separated id:secret pairs with distinct ids from 0 to 255`);
      return [];
    }
    // `2: secret` would verify with " secret", not the key the URLs were signed with: every one refused.
    if (secret.trim() !== secret) {
      r.problem(`${name}: key ${id}: the secret starts or ends with whitespace; write id:secret with nothing between the colon and the secret`);
      return [];
    }
    out.push({ id, secret });
  }
  return out;
}

/** EXCHANGES_FILE, read and validated once (null when unset: the bid endpoint is open). */
function readExchanges(r: Reader, env: Env): readonly ExchangeSpec[] | null {
  const file = env.EXCHANGES_FILE?.trim();
  if (!file) return null;
  const { exchanges, problems } = readExchangesFile(path.resolve(file));
  for (const p of problems) r.problem(p);
  return Object.freeze(exchanges);
}

/**
 * EXCHANGES_OPEN=1: the bid endpoint is meant to answer any caller. Production refuses to start
 * without EXCHANGES_FILE unless it is set: an open endpoint lets anyone request bids and bill them
 * (spend budgets), and send notices the win-price model learns from.
 */
function checkAdmission(r: Reader, env: Env, cfg: Config, production: boolean): void {
  const open = r.bool('EXCHANGES_OPEN', false);
  if (open && cfg.exchanges !== null) {
    r.problem('EXCHANGES_OPEN=1 and EXCHANGES_FILE are both set: EXCHANGES_FILE admits its exchanges only, EXCHANGES_OPEN=1 any caller; unset one of them');
  } else if (production && !open && (env.EXCHANGES_FILE ?? '').trim() === '') {
    r.problem(
      'EXCHANGES_FILE: not set, and NODE_ENV=production needs it: list the exchanges that may call the bid endpoint (docs/operations.md, Exchanges); ' +
        'without it anyone can request bids, bill them against the budgets and move the win-price model. Set EXCHANGES_OPEN=1 to run an open endpoint anyway',
    );
  }
}

/**
 * In production a tracking secret anyone can read in this repository (or guess) lets anyone forge
 * billing notices: refuse to start, saying what to set.
 */
function checkProductionSecrets(env: Env, cfg: Config, r: Reader): void {
  const how = `set a random secret of at least ${MIN_SECRET_BYTES} bytes (e.g. \`openssl rand -base64 48\`), the same on every worker and host`;
  const dev = new Set([DEV_TRACKING_SECRET, DEV_PII_HASH_SECRET]);
  if (env.TRACKING_SECRET === undefined || env.TRACKING_SECRET.trim() === '' || cfg.trackingSecret === DEV_TRACKING_SECRET) {
    r.problem(`TRACKING_SECRET: not set, and NODE_ENV=production needs it: ${how}; it signs every tracking URL`);
  } else if (dev.has(cfg.trackingSecret)) {
    r.problem(`TRACKING_SECRET: a development secret, public in this repository: ${how}; it signs every tracking URL`);
  } else if (Buffer.byteLength(cfg.trackingSecret) < MIN_SECRET_BYTES) {
    r.problem(`TRACKING_SECRET: ${Buffer.byteLength(cfg.trackingSecret)} bytes is too short for production: ${how}`);
  }
  for (const k of cfg.trackingOldKeys) {
    if (k.secret === DEV_TRACKING_SECRET || k.secret === DEV_PII_HASH_SECRET) {
      r.problem(`TRACKING_OLD_KEYS: key ${k.id} is the development secret, public in this repository: anyone could sign notices with it; remove it`);
    } else if (Buffer.byteLength(k.secret) < MIN_SECRET_BYTES) r.problem(`TRACKING_OLD_KEYS: key ${k.id} is shorter than ${MIN_SECRET_BYTES} bytes`);
  }
  // The same for the key of the hash that stands in for user ids: guessable, it unmasks them.
  const pii = `set a random secret of at least ${MIN_SECRET_BYTES} bytes, the same on every worker and host (it keys the hash that stands in for user ids)`;
  if (env.PII_HASH_SECRET === undefined || env.PII_HASH_SECRET.trim() === '' || cfg.piiHashSecret === DEV_PII_HASH_SECRET) {
    r.problem(`PII_HASH_SECRET: not set, and NODE_ENV=production needs it: ${pii}`);
  } else if (dev.has(cfg.piiHashSecret)) {
    r.problem(`PII_HASH_SECRET: a development secret, public in this repository: ${pii}`);
  } else if (Buffer.byteLength(cfg.piiHashSecret) < MIN_SECRET_BYTES) {
    r.problem(`PII_HASH_SECRET: ${Buffer.byteLength(cfg.piiHashSecret)} bytes is too short for production: ${pii}`);
  } else if (cfg.piiHashSecret === cfg.trackingSecret) {
    // The hashed user keys travel in tracking URLs signed with the tracking key: one leak would give both.
    r.problem(`PII_HASH_SECRET: the same as TRACKING_SECRET; ${pii}, and different from the tracking keys`);
  } else {
    const same = cfg.trackingOldKeys.find((k) => k.secret === cfg.piiHashSecret);
    if (same !== undefined) r.problem(`PII_HASH_SECRET: the same as key ${same.id} of TRACKING_OLD_KEYS; ${pii}, and different from the tracking keys`);
  }
  if ((env.TRACKING_BASE_URL ?? '').trim() === '') {
    r.problem(`TRACKING_BASE_URL: not set, and NODE_ENV=production needs it: the public address of the notice routes (e.g. https://bidder.example.com), which every bid's win, bill and impression URLs point at (the default ${DEV_TRACKING_BASE_URL} reaches no exchange)`);
  }
}

/** A domain name: dot-separated labels of letters, digits and hyphens. */
const DOMAIN = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

function isIpAddress(host: string): boolean {
  return net.isIP(host.replace(/^\[|\]$/g, '')) !== 0;
}

/** TRACKING_BASE_URL's host (IPv6 without brackets), or null when it does not parse. */
function trackingHost(url: string): string | null {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return null;
  }
}

/** Hosts that only this machine reaches. */
function isLocalHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h.endsWith('.localhost') || h === '0.0.0.0' || h === '::' || h === '::1' || /^127\./.test(h);
}

/**
 * What start-up should say about a configuration that loads but is unsafe for real traffic:
 * outside production, the development secrets; in every mode, a TRACKING_BASE_URL only this
 * machine reaches (`npm start` sets one for a trial, and says so) and a DSA domain that cannot be
 * taken from an IP address.
 */
export function configWarnings(cfg: Config): string[] {
  const out: string[] = [];
  const host = trackingHost(cfg.trackingBaseUrl);
  if (host !== null && cfg.nodeEnv === 'production' && isLocalHost(host)) {
    out.push(`TRACKING_BASE_URL=${cfg.trackingBaseUrl}: only this machine reaches it, and it reaches no exchange or browser: every win, bill and impression URL points at it; set the public address of this bidder`);
  }
  if (host !== null && cfg.dsaDomain === '' && isIpAddress(host)) {
    out.push(`DSA_DOMAIN: not set, and TRACKING_BASE_URL's host ${host} is an IP address, not a domain: DSA bids carry no transparency domain; set DSA_DOMAIN`);
  }
  return [...out, ...devSecretWarnings(cfg)];
}

function devSecretWarnings(cfg: Config): string[] {
  if (cfg.nodeEnv === 'production') return [];
  const dev = [cfg.trackingSecret === DEV_TRACKING_SECRET ? 'TRACKING_SECRET' : '', cfg.piiHashSecret === DEV_PII_HASH_SECRET ? 'PII_HASH_SECRET' : ''].filter((x) => x !== '');
  if (dev.length === 0) return [];
  return [
    `NODE_ENV=${cfg.nodeEnv}: ${dev.join(' and ')} ${dev.length > 1 ? 'are' : 'is'} the development secret, public in this repository (anyone can forge tracking notices); never take real traffic like this: set NODE_ENV=production and the secrets`,
  ];
}

/** Nest injection token for the frozen config. */
export const CONFIG = Symbol('CONFIG');
