import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { CONFIG, type Config } from '../config/config';
import { redisClientOptions } from './redis.options';

/** How often a persisting connection problem is logged again. */
const ERROR_LOG_EVERY_MS = 30_000;

/**
 * The worker's one Redis connection, its lifecycle and its health. Other modules use `client`
 * directly; commands fail fast while Redis is away (see redisClientOptions), they never queue.
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
    this.client.on('error', (e: Error) => this.onError(e));
    this.client.on('ready', () => this.handleReady());
    this.client.on('close', () => {
      if (this.everReady && !this.down && !this.closed) {
        this.down = true;
        this.logger.warn(`connection to ${redactUrl(this.config.redisUrl)} lost; reconnecting`);
      }
    });
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
