import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { CONFIG, type Config } from '../config/config';
import { createRedisClient, describeTarget, lastClientError, stopSlotsRefresh, untilUsable, usable, type RedisClient } from './redis.options';
import { defineScripts, type ScriptSet } from './scripts';
import { ChannelSubscriber, type SubscriberHandlers } from './subscriber';

/** How often a persisting connection problem is logged again. */
const ERROR_LOG_EVERY_MS = 30_000;

/** One client's state as the service reports it: connected, lost, back. */
class Watched {
  private readonly listeners: Array<() => void> = [];
  private lastErrorLogAt = 0;
  private everReady = false;
  private down = false;
  closed = false;

  constructor(
    readonly client: RedisClient,
    private readonly what: string,
    private readonly logger: Logger,
  ) {
    client.on('error', (e: Error) => this.onError(e));
    // A cluster client stays ready while one node is away; its node errors say why commands to that node fail.
    client.on('node error', (e: Error, node: string) => this.onError(new Error(`node ${node}: ${e.message}`)));
    client.on('ready', () => void this.handleReady());
    client.on('close', () => {
      if (this.everReady && !this.down && !this.closed) {
        this.down = true;
        this.logger.warn(`connection to ${this.what} lost; reconnecting`);
      }
    });
  }

  isReady(): boolean {
    return usable(this.client);
  }

  onReady(fn: () => void): void {
    this.listeners.push(fn);
  }

  private async handleReady(): Promise<void> {
    // A cluster client is ready before its node connections are: wait for them (bounded).
    await untilUsable(this.client);
    if (this.client.status !== 'ready') return;
    if (this.down || !this.everReady) this.logger.log(`connected to ${this.what}`);
    this.everReady = true;
    this.down = false;
    for (const l of this.listeners) l();
  }

  private onError(e: Error): void {
    const now = Date.now();
    if (this.closed || now - this.lastErrorLogAt < ERROR_LOG_EVERY_MS) return;
    this.lastErrorLogAt = now;
    this.logger.warn(`${this.what}: ${e.message}`);
  }
}

/**
 * The worker's Redis connection (src/redis/redis.options.ts makes the clients: one server or a Redis
 * Cluster), its lifecycle and health; nothing of any domain. Each domain gets the connection with
 * its own Lua scripts defined on it (`connection(scripts)`: delivery's DeliveryRedis, the bid log's
 * sink) and keeps its keys and commands to itself. Commands fail fast while Redis is away, they
 * never queue.
 *
 * The bid log has a connection of its own when its pushes wait for replicas (LOG_REDIS_WAIT_REPLICAS):
 * WAIT holds the connection it runs on until the replicas answer, so nothing else waits behind it;
 * otherwise `logConnection` is the same connection.
 *
 * On shutdown the clients stay open until every `closeAfter` work (the log's final flush) has
 * settled, bounded by the shutdown deadline, then close.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Redis');
  private readonly closers: Array<() => Promise<unknown>> = [];
  private readonly main: Watched;
  private readonly log: Watched;
  private readonly subscribers = new Set<ChannelSubscriber>();
  private readonly name: string;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.name = `bidder:${config.hostId}:${config.workerId}`;
    const where = describeTarget(config.redis);
    this.main = new Watched(createRedisClient(config.redis, this.name), where, this.logger);
    this.log = config.logWaitReplicas > 0 ? new Watched(createRedisClient(config.redis, `${this.name}:log`), `${where} (bid log)`, this.logger) : this.main;
  }

  /** The connection, with `scripts` defined on it as commands (a name defined before is kept). */
  connection(scripts: ScriptSet = {}): RedisClient {
    defineScripts(this.main.client, scripts);
    return this.main.client;
  }

  /** The bid log's connection (its own with LOG_REDIS_WAIT_REPLICAS > 0), with `scripts` defined on it. */
  logConnection(scripts: ScriptSet = {}): RedisClient {
    defineScripts(this.log.client, scripts);
    return this.log.client;
  }

  /** The last error of the connection (null: none since it was last usable), for the readiness text. */
  lastError(): string | null {
    return lastClientError(this.main.client);
  }

  /**
   * Subscribes to `channel` on a connection of its own (src/redis/subscriber.ts), kept up forever
   * until shutdown; on a cluster it follows the nodes this service's client knows.
   */
  subscribe(channel: string, purpose: string, handlers: SubscriberHandlers): ChannelSubscriber {
    const client = this.main.client;
    const nodes = () =>
      client instanceof Cluster ? client.nodes('all').map((n) => ({ host: n.options.host ?? '127.0.0.1', port: n.options.port ?? 6379 })) : [];
    const s = new ChannelSubscriber(this.config.redis, channel, `${this.name}:${purpose}`, handlers, nodes);
    this.subscribers.add(s);
    s.start();
    return s;
  }

  /** True while the client is connected (a cluster: ready, though a node may be failing over). */
  isReady(): boolean {
    return this.main.isReady();
  }

  /** Calls `fn` each time the client becomes usable (first connect and every reconnect). */
  onReady(fn: () => void): void {
    this.main.onReady(fn);
  }

  /** The bid log's client: isReady() and onReady() for it. */
  isLogReady(): boolean {
    return this.log.isReady();
  }

  onLogReady(fn: () => void): void {
    this.log.onReady(fn);
  }

  /**
   * Runs `work` (the log's final flush) at shutdown before the clients close, and keeps them open
   * until it settles (bounded by the shutdown deadline). `work` is called by this service's own
   * onApplicationShutdown whichever module's hook Nest runs first (Nest awaits one module's hooks
   * before the next's, so waiting here for a flush another module's later hook starts would only
   * time out); the owner calls the same once-only function from its own hook.
   */
  closeAfter(work: () => Promise<unknown>): void {
    this.closers.push(work);
  }

  onModuleInit(): void {
    // Not awaited: the bidder starts (and logs to memory, then disk) even while Redis is away.
    for (const w of this.watched()) w.client.connect().catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    for (const s of this.subscribers) s.stop();
    if (this.closers.length > 0) {
      const work = this.closers.map((w) => w().catch(() => undefined));
      await withTimeout(Promise.all(work), this.config.shutdownTimeoutMs + 500);
    }
    await Promise.all(this.watched().map((w) => close(w)));
  }

  private watched(): Watched[] {
    return this.log === this.main ? [this.main] : [this.main, this.log];
  }
}

async function close(w: Watched): Promise<void> {
  w.closed = true;
  if (w.client.status === 'ready') {
    const quit = await withTimeout(
      w.client.quit().then(
        () => true,
        () => false,
      ),
      1_000,
    );
    if (quit !== true) w.client.disconnect();
  } else {
    w.client.disconnect();
  }
  stopSlotsRefresh(w.client);
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
