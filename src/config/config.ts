import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Every setting the bidder reads, loaded from the environment once at start-up and frozen.
 * A bad value stops the process with one error that names every bad variable (INTERFACE.md).
 */
export interface Config {
  readonly port: number;
  readonly host: string;
  readonly redisUrl: string;
  readonly logRedisKey: string;
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
  /** Deadline for the final flush on a graceful stop; shorter than PM2's kill_timeout. */
  readonly shutdownTimeoutMs: number;
  readonly campaignsFile: string;
  readonly trackingBaseUrl: string;
  /** Secret for signing tracking payloads (HMAC). */
  readonly trackingSecret: string;
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
  /** How long a billed bid id is remembered to make billing idempotent. */
  readonly billDedupeTtlSeconds: number;
  /** Poll CAMPAIGNS_FILE for changes this often and hot-swap it (0 = never). */
  readonly campaignsWatchMs: number;
  /** Enables POST /debug/explain (per-candidate filter verdicts); off by default. */
  readonly debugEndpoints: boolean;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
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

export type Env = Record<string, string | undefined>;

/** Reads typed values from the environment, collecting every problem (the shipper reuses it: src/shipper/shipper.config.ts). */
export class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Env) {}

  private raw(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  str(name: string, def: string): string {
    return this.raw(name) ?? def;
  }

  int(name: string, def: number, min: number, max: number): number {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (!/^\d+$/.test(v)) {
      this.problems.push(`${name}=${JSON.stringify(v)}: expected a whole number`);
      return def;
    }
    const n = Number(v);
    if (n < min || n > max) {
      this.problems.push(`${name}=${v}: expected a number from ${min} to ${max}`);
      return def;
    }
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const v = this.raw(name);
    if (v === undefined) return def;
    const l = v.toLowerCase();
    if (['1', 'true', 'yes', 'on'].includes(l)) return true;
    if (['0', 'false', 'no', 'off'].includes(l)) return false;
    this.problems.push(`${name}=${JSON.stringify(v)}: expected true or false`);
    return def;
  }

  url(name: string, def: string, protocols: string[]): string {
    const v = this.str(name, def);
    try {
      const u = new URL(v);
      if (!protocols.includes(u.protocol)) throw new Error('protocol');
    } catch {
      this.problems.push(`${name}=${JSON.stringify(v)}: expected a ${protocols.join(' or ')} URL`);
    }
    return v;
  }

  oneOf<T extends string>(name: string, def: T, values: readonly T[]): T {
    const v = this.raw(name);
    if (v === undefined) return def;
    if (!(values as readonly string[]).includes(v)) {
      this.problems.push(`${name}=${JSON.stringify(v)}: expected one of ${values.join(', ')}`);
      return def;
    }
    return v as T;
  }
}

const LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export function loadConfig(env: Env = process.env): Config {
  const r = new Reader(env);
  const MiB = 1024 * 1024;
  const cfg: Config = {
    port: r.int('PORT', 8080, 0, 65535),
    host: r.str('HOST', '0.0.0.0'),
    redisUrl: r.url('REDIS_URL', 'redis://127.0.0.1:6379', ['redis:', 'rediss:']),
    logRedisKey: r.str('LOG_REDIS_KEY', 'bidlog'),
    logFlushIntervalMs: r.int('LOG_FLUSH_INTERVAL_MS', 10_000, 10, 3_600_000),
    logFlushBytes: r.int('LOG_FLUSH_BYTES', 8 * MiB, 1024, 1024 * MiB),
    logMaxMemoryBytes: r.int('LOG_MAX_MEMORY_BYTES', 256 * MiB, 64 * 1024, 16 * 1024 * MiB),
    // 2 by default, as ZSTD_LEVEL in src/log/frame.ts says why.
    logZstdLevel: r.int('LOG_ZSTD_LEVEL', 2, 1, 19),
    logSpillDir: path.resolve(r.str('LOG_SPILL_DIR', path.join(process.cwd(), '.run', 'spill'))),
    logSpillMaxBytes: r.int('LOG_SPILL_MAX_BYTES', 2048 * MiB, 0, Number.MAX_SAFE_INTEGER),
    shutdownTimeoutMs: r.int('SHUTDOWN_TIMEOUT_MS', 8_000, 100, 600_000),
    campaignsFile: path.resolve(r.str('CAMPAIGNS_FILE', DEFAULT_CAMPAIGNS_FILE)),
    trackingBaseUrl: r.url('TRACKING_BASE_URL', 'http://127.0.0.1:8080', ['http:', 'https:']).replace(/\/+$/, ''),
    trackingSecret: r.str('TRACKING_SECRET', 'dev-only-tracking-secret-change-me'),
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', MiB, 1024, 64 * MiB),
    workerId: r.str('WORKER_ID', env.NODE_APP_INSTANCE ?? env.pm_id ?? String(process.pid)),
    accessLog: r.bool('ACCESS_LOG', false),
    logLevel: r.oneOf('LOG_LEVEL', 'info', LEVELS),
    budgetRefreshMs: r.int('BUDGET_REFRESH_MS', 250, 20, 60_000),
    budgetWindowMs: r.int('BUDGET_WINDOW_MS', 10_000, 0, 3_600_000),
    billDedupeTtlSeconds: r.int('BILL_DEDUPE_TTL_S', 7 * 24 * 3600, 60, 90 * 24 * 3600),
    campaignsWatchMs: r.int('CAMPAIGNS_WATCH_MS', 1_000, 0, 3_600_000),
    debugEndpoints: r.bool('DEBUG_ENDPOINTS', false),
  };
  if (r.problems.length > 0) throw new ConfigError(r.problems);
  return Object.freeze(cfg);
}

/** Nest injection token for the frozen config. */
export const CONFIG = Symbol('CONFIG');
