import * as os from 'node:os';
import * as path from 'node:path';
import { ConfigError, readLogKeys, Reader, readRedisTarget, type Env, type RedisTarget } from '../config/config';

export const CRASH_POINTS = ['after-claim', 'after-write'] as const;
export type CrashPoint = (typeof CRASH_POINTS)[number];

/**
 * The shipper's settings (docs/log-pipeline.md, "The shipper"), read from the environment once and
 * frozen. It shares REDIS_URL, REDIS_MODE, REDIS_CLUSTER_NODES, LOG_REDIS_KEY, LOG_REDIS_SHARDS and
 * LOG_LEVEL with the bidder (it reads the same lists: src/bidlog/keys.ts); a bad value stops the
 * process with one error naming every bad variable, like the bidder's config.
 */
export interface ShipperConfig {
  readonly redis: RedisTarget;
  readonly logRedisKey: string;
  readonly logRedisShards: number;
  readonly logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /** Root of the partitions (`date=YYYY-MM-DD/hour=HH/<group>.parquet`), absolute. */
  readonly dir: string;
  /** Pause between rounds when the list held less than a full batch. */
  readonly intervalMs: number;
  /** Bounds of one claim: at most this many frames and (beyond the first frame) this many compressed bytes. */
  readonly batchFrames: number;
  readonly batchBytes: number;
  /** Partitions (`date=` directories) whose day ended more than this many days ago are deleted; 0 keeps everything. */
  readonly retentionDays: number;
  /** This shipper's name in Redis keys: unique among the shippers of one Redis. */
  readonly shipperId: string;
  /** Heartbeat lease: a shipper silent for this long is taken for dead and its batch adopted. */
  readonly heartbeatTtlMs: number;
  readonly adminHost: string;
  /** Port of /metrics and /health/*; 0 picks a free port (logged at start). */
  readonly adminPort: number;
  /** Nice value of every thread (19: the lowest CPU priority; 0 leaves it), and the idle I/O class unless 0. */
  readonly nice: number;
  /** Threads and memory of the embedded DuckDB. */
  readonly duckdbThreads: number;
  readonly duckdbMemoryMb: number;
  /** Deadline of a graceful stop: the batch under way is finished within it, else left to be resumed. */
  readonly stopTimeoutMs: number;
  /** Tests only: SIGKILL this process at that point of the first batch (docs/log-pipeline.md). */
  readonly testCrashAt: CrashPoint | null;
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** Shipper ids end up in Redis key names: no braces (Redis Cluster hash tags), no spaces. */
const ID = /^[A-Za-z0-9_.:-]{1,100}$/;

export function defaultShipperId(): string {
  return `${os.hostname()}-${process.pid}`.replace(/[^A-Za-z0-9_.:-]/g, '_');
}

export function loadShipperConfig(env: Env = process.env, cwd: string = process.cwd()): ShipperConfig {
  const r = new Reader(env);
  const MiB = 1024 * 1024;
  const shipperId = r.str('SHIP_ID', defaultShipperId());
  if (!ID.test(shipperId)) r.problems.push(`SHIP_ID=${JSON.stringify(shipperId)}: expected 1 to 100 of A-Z a-z 0-9 _ . : -`);
  const crash = r.str('SHIP_TEST_CRASH_AT', '');
  const redis = readRedisTarget(r, env);
  const cfg: ShipperConfig = {
    redis,
    ...readLogKeys(r, redis.mode),
    logLevel: r.oneOf('LOG_LEVEL', 'info', LEVELS),
    dir: path.resolve(cwd, r.str('SHIP_DIR', path.join('.run', 'bidlog'))),
    intervalMs: r.int('SHIP_INTERVAL_MS', 10_000, 10, 3_600_000),
    batchFrames: r.int('SHIP_BATCH_FRAMES', 256, 1, 100_000),
    batchBytes: r.int('SHIP_BATCH_BYTES', 8 * MiB, 64 * 1024, 1024 * MiB),
    retentionDays: r.int('SHIP_RETENTION_DAYS', 30, 0, 36_500),
    shipperId,
    heartbeatTtlMs: r.int('SHIP_HEARTBEAT_TTL_MS', 15_000, 500, 600_000),
    adminHost: r.str('SHIP_ADMIN_HOST', '127.0.0.1'),
    adminPort: r.int('SHIP_ADMIN_PORT', 9465, 0, 65535),
    nice: r.int('SHIP_NICE', 19, 0, 19),
    duckdbThreads: r.int('SHIP_DUCKDB_THREADS', 1, 1, 64),
    duckdbMemoryMb: r.int('SHIP_DUCKDB_MEMORY_MB', 256, 64, 1024 * 1024),
    stopTimeoutMs: r.int('SHIP_STOP_TIMEOUT_MS', 20_000, 100, 600_000),
    testCrashAt: crash === '' ? null : r.oneOf<CrashPoint>('SHIP_TEST_CRASH_AT', 'after-claim', CRASH_POINTS),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(cfg);
}

/** Nest injection token of the frozen shipper config. */
export const SHIPPER_CONFIG = Symbol('SHIPPER_CONFIG');
