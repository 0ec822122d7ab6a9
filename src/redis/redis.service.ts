import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { CONFIG, type Config } from '../config/config';
import { redisClientOptions } from './redis.options';
import { BILL, HEARTBEAT, IMPRESSION, PUSH_ONCE } from './scripts';

/** The client with the project's scripts defined as commands (EVALSHA; the script text is sent only when Redis lacks it). */
interface ScriptCommands {
  bidderBill(marker: string, total: string, daily: string, micros: string, markerTtlS: string, dailyTtlS: string): Promise<number>;
  bidderHeartbeat(key: string, member: string, windowMs: string, ttlMs: string): Promise<number>;
  bidderImpression(marker: string, counts: string, campaign: string, markerTtlS: string, countsTtlS: string): Promise<number>;
  bidderPushOnce(list: string, marker: string, frame: Buffer, ttlS: string): Promise<number>;
}

/** How often a persisting connection problem is logged again. */
const ERROR_LOG_EVERY_MS = 30_000;

/**
 * The worker's one Redis connection, its lifecycle, its health and the project's Lua scripts
 * (src/redis/scripts.ts, each behind a typed method). Other modules use `client` for plain commands;
 * commands fail fast while Redis is away (see redisClientOptions), they never queue.
 * On shutdown the connection stays open until every `keepOpenUntil` promise has settled (the log
 * flusher's final flush), bounded by the shutdown deadline, then closes.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  readonly client: Redis;
  private readonly logger = new Logger('Redis');
  private readonly holds = new Set<Promise<unknown>>();
  private readonly readyListeners: Array<() => void> = [];
  private lastErrorLogAt = 0;
  private everReady = false;
  private down = false;
  private closed = false;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.client = new Redis(config.redisUrl, redisClientOptions(`bidder:${config.workerId}`));
    this.client.defineCommand('bidderBill', { numberOfKeys: 3, lua: BILL });
    this.client.defineCommand('bidderHeartbeat', { numberOfKeys: 1, lua: HEARTBEAT });
    this.client.defineCommand('bidderImpression', { numberOfKeys: 2, lua: IMPRESSION });
    this.client.defineCommand('bidderPushOnce', { numberOfKeys: 2, lua: PUSH_ONCE });
    this.client.on('error', (e: Error) => this.onError(e));
    this.client.on('ready', () => this.handleReady());
    this.client.on('close', () => {
      if (this.everReady && !this.down && !this.closed) {
        this.down = true;
        this.logger.warn(`connection to ${redactUrl(this.config.redisUrl)} lost; reconnecting`);
      }
    });
  }

  private get scripts(): ScriptCommands {
    return this.client as unknown as ScriptCommands;
  }

  /** Counts a bill once (src/redis/scripts.ts BILL): 1 counted, 0 counted before. */
  bill(keys: { marker: string; total: string; daily: string }, micros: number, markerTtlS: number, dailyTtlS: number): Promise<number> {
    return this.scripts.bidderBill(keys.marker, keys.total, keys.daily, String(micros), String(markerTtlS), String(dailyTtlS));
  }

  /** This worker's heartbeat on Redis's clock; the number of live members (HEARTBEAT). */
  heartbeat(key: string, member: string, windowMs: number, ttlMs: number): Promise<number> {
    return this.scripts.bidderHeartbeat(key, member, String(windowMs), String(ttlMs));
  }

  /** Counts an impression once per bid (IMPRESSION): the day's count, or -1 for a repeat. */
  impression(marker: string, counts: string, campaign: string, markerTtlS: number, countsTtlS: number): Promise<number> {
    return this.scripts.bidderImpression(marker, counts, campaign, String(markerTtlS), String(countsTtlS));
  }

  /** RPUSH once per frame id (PUSH_ONCE): the list length, or -1 when it was pushed before. */
  pushOnce(list: string, marker: string, frame: Buffer, ttlS: number): Promise<number> {
    return this.scripts.bidderPushOnce(list, marker, frame, String(ttlS));
  }

  /** True while the connection is established and usable. */
  isReady(): boolean {
    return this.client.status === 'ready';
  }

  /** Calls `fn` each time the connection becomes usable (first connect and every reconnect). */
  onReady(fn: () => void): void {
    this.readyListeners.push(fn);
  }

  private handleReady(): void {
    if (this.down || !this.everReady) {
      this.logger.log(`connected to ${redactUrl(this.config.redisUrl)}`);
    }
    this.everReady = true;
    this.down = false;
    for (const l of this.readyListeners) l();
  }

  /** Keeps the connection open during shutdown until `p` settles (bounded by the shutdown deadline). */
  keepOpenUntil(p: Promise<unknown>): void {
    const held = p.then(
      () => undefined,
      () => undefined,
    );
    this.holds.add(held);
    void held.then(() => this.holds.delete(held));
  }

  onModuleInit(): void {
    // Not awaited: the bidder starts (and logs to memory, then disk) even while Redis is away.
    this.client.connect().catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.holds.size > 0) {
      await withTimeout(Promise.all([...this.holds]), this.config.shutdownTimeoutMs + 500);
    }
    this.closed = true;
    if (this.client.status === 'ready') {
      const quit = await withTimeout(
        this.client.quit().then(
          () => true,
          () => false,
        ),
        1_000,
      );
      if (quit === true) return;
    }
    this.client.disconnect();
  }

  private onError(e: Error): void {
    const now = Date.now();
    if (this.closed || now - this.lastErrorLogAt < ERROR_LOG_EVERY_MS) return;
    this.lastErrorLogAt = now;
    this.logger.warn(`${redactUrl(this.config.redisUrl)}: ${e.message}`);
  }
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve) => {
    const t = setTimeout(() => resolve(undefined), ms);
    void p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      () => {
        clearTimeout(t);
        resolve(undefined);
      },
    );
  });
}
