import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { CONFIG, type Config } from '../config/config';
import type Redis from 'ioredis';
import { createRedisClient, describeTarget, masterFor, untilUsable, usable, type RedisClient } from './redis.options';
import { BILL, HEARTBEAT, IMPRESSION, PUSH_ONCE, READ_MANY } from './scripts';
import { ChannelSubscriber, type SubscriberHandlers } from './subscriber';

/** The client with the project's scripts defined as commands (EVALSHA; the script text is sent only when Redis lacks it). */
interface ScriptCommands {
  bidderBill(marker: string, total: string, daily: string, micros: string, markerTtlS: string, dailyTtlS: string): Promise<number>;
  bidderHeartbeat(key: string, member: string, windowMs: string, ttlMs: string): Promise<number>;
  bidderImpression(marker: string, counts: string, campaign: string, markerTtlS: string, countsTtlS: string): Promise<number>;
  bidderPushOnce(list: string, marker: string, frame: Buffer, ttlS: string): Promise<number>;
  bidderReadMany(...keys: string[]): Promise<Array<string | null>>;
}

const SCRIPTS = {
  bidderBill: { numberOfKeys: 3, lua: BILL },
  bidderHeartbeat: { numberOfKeys: 1, lua: HEARTBEAT },
  bidderImpression: { numberOfKeys: 2, lua: IMPRESSION },
  bidderPushOnce: { numberOfKeys: 2, lua: PUSH_ONCE },
  bidderReadMany: { numberOfKeys: 0, lua: READ_MANY },
} as const;

function defineScripts(c: RedisClient): void {
  for (const [name, def] of Object.entries(SCRIPTS)) c.defineCommand(name, def);
}

/** How often a persisting connection problem is logged again. */
const ERROR_LOG_EVERY_MS = 30_000;

/** A pushed frame: whether it was new (not pushed before under its id), and how many replicas hold it (null: not asked). */
export interface PushResult {
  readonly pushed: boolean;
  readonly replicas: number | null;
}

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
 * The worker's Redis clients (src/redis/redis.options.ts makes them: one server or a Redis Cluster),
 * their lifecycle, their health and the project's Lua scripts (src/redis/scripts.ts, each behind a
 * typed method). Other modules use `client` for plain commands; commands fail fast while Redis is
 * away, they never queue.
 *
 * The bid log pushes through `client` too, unless pushes wait for replicas (LOG_REDIS_WAIT_REPLICAS):
 * WAIT holds the connection it runs on until the replicas answer, so the log then has a client of
 * its own and nothing else waits behind it.
 *
 * On shutdown the clients stay open until every `keepOpenUntil` promise has settled (the log
 * flusher's final flush), bounded by the shutdown deadline, then close.
 */
@Injectable()
export class RedisService implements OnModuleInit, OnApplicationShutdown {
  readonly client: RedisClient;
  private readonly logger = new Logger('Redis');
  private readonly holds = new Set<Promise<unknown>>();
  private readonly main: Watched;
  private readonly log: Watched;
  private readonly subscribers = new Set<ChannelSubscriber>();
  private readonly name: string;

  constructor(@Inject(CONFIG) private readonly config: Config) {
    this.name = `bidder:${config.hostId}:${config.workerId}`;
    const where = describeTarget(config.redis);
    this.client = createRedisClient(config.redis, this.name);
    defineScripts(this.client);
    this.main = new Watched(this.client, where, this.logger);
    if (config.logWaitReplicas > 0) {
      const logClient = createRedisClient(config.redis, `${this.name}:log`);
      defineScripts(logClient);
      this.log = new Watched(logClient, `${where} (bid log)`, this.logger);
    } else {
      this.log = this.main;
    }
  }

  private scripts(c: unknown = this.client): ScriptCommands {
    return c as ScriptCommands;
  }

  /** Counts a bill once (src/redis/scripts.ts BILL): 1 counted, 0 counted before. */
  bill(keys: { marker: string; total: string; daily: string }, micros: number, markerTtlS: number, dailyTtlS: number): Promise<number> {
    return this.scripts().bidderBill(keys.marker, keys.total, keys.daily, String(micros), String(markerTtlS), String(dailyTtlS));
  }

  /** This worker's heartbeat on Redis's clock; the number of live members (HEARTBEAT). */
  heartbeat(key: string, member: string, windowMs: number, ttlMs: number): Promise<number> {
    return this.scripts().bidderHeartbeat(key, member, String(windowMs), String(ttlMs));
  }

  /** Counts an impression once per bid (IMPRESSION): the day's count, or -1 for a repeat. */
  impression(marker: string, counts: string, campaign: string, markerTtlS: number, countsTtlS: number): Promise<number> {
    return this.scripts().bidderImpression(marker, counts, campaign, String(markerTtlS), String(countsTtlS));
  }

  /**
   * RPUSH once per frame id (PUSH_ONCE), then, when LOG_REDIS_WAIT_REPLICAS > 0, `WAIT` on the same
   * connection until that many replicas hold it (at most LOG_REDIS_WAIT_MS). On a cluster both go to
   * the master of the list's slot itself (WAIT counts the writes of the connection it runs on): a
   * MOVED reply (the slot moved, e.g. a failover) is then a failure, and the slot map is refreshed for
   * the retry. Rejects when Redis failed; resolves `replicas` < LOG_REDIS_WAIT_REPLICAS when they did
   * not answer in time (the caller keeps the frame and retries: the retry is a no-op push that
   * rewrites the marker's TTL, a write the next WAIT then covers).
   */
  async pushOnce(list: string, marker: string, frame: Buffer, ttlS: number): Promise<PushResult> {
    const want = this.config.logWaitReplicas;
    const c = this.log.client;
    if (want === 0) {
      return { pushed: (await this.scripts(c).bidderPushOnce(list, marker, frame, String(ttlS))) !== -1, replicas: null };
    }
    if (c instanceof Cluster) {
      const node = masterFor(c, list);
      if (node === null) {
        c.refreshSlotsCache();
        throw new Error(`no master known for the slot of ${list} yet`);
      }
      if (typeof (node as unknown as Partial<ScriptCommands>).bidderPushOnce !== 'function') defineScripts(node);
      try {
        const n = await this.scripts(node).bidderPushOnce(list, marker, frame, String(ttlS));
        const replicas = await node.wait(want, this.config.logWaitTimeoutMs);
        return { pushed: n !== -1, replicas };
      } catch (e) {
        c.refreshSlotsCache();
        throw e;
      }
    }
    const n = await this.scripts(c).bidderPushOnce(list, marker, frame, String(ttlS));
    return { pushed: n !== -1, replicas: await c.wait(want, this.config.logWaitTimeoutMs) };
  }

  /**
   * The values of many string keys (null: no such key), whatever their slots. One server: one
   * MGET (rejects when it fails). A cluster: one READ_MANY per master, on that master's own
   * connection, with the keys its slots hold by the client's slot map (`slots`: each key's slot,
   * computed once by the caller); a node whose script fails (a slot moved, an old Redis) has its keys
   * read by slot instead, once the slot map has been asked for again: one MGET per slot through the
   * cluster client. A key that could not be read at all is `undefined`: the caller decides per key.
   */
  async readMany(keys: readonly string[], slots: readonly number[]): Promise<Array<string | null | undefined>> {
    const c = this.client;
    if (!(c instanceof Cluster)) return c.mget(keys as string[]);
    const out = new Array<string | null | undefined>(keys.length);
    const byNode = new Map<string, number[]>();
    for (let i = 0; i < keys.length; i++) {
      const nodeKey = c.slots[slots[i]]?.[0] ?? '';
      const group = byNode.get(nodeKey);
      if (group === undefined) byNode.set(nodeKey, [i]);
      else group.push(i);
    }
    const masters = new Map<string, Redis>();
    for (const n of c.nodes('master')) masters.set(`${n.options.host}:${n.options.port}`, n);
    await Promise.all(
      [...byNode].map(async ([nodeKey, idx]) => {
        const node = masters.get(nodeKey);
        try {
          if (node === undefined || node.status !== 'ready') throw new Error(`no connection to ${nodeKey || 'the node of these slots'}`);
          if (typeof (node as unknown as Partial<ScriptCommands>).bidderReadMany !== 'function') defineScripts(node);
          const values = await this.scripts(node).bidderReadMany(...idx.map((i) => keys[i]));
          for (let j = 0; j < idx.length; j++) out[idx[j]] = values[j];
        } catch {
          // The slot map first (a connection to the slot's new master, if it moved), so that the
          // reads below do not meet a node still connecting, which fails them at once.
          await new Promise<void>((resolve) => c.refreshSlotsCache(() => resolve()));
          await untilUsable(c, 1_000);
          const bySlot = new Map<number, number[]>();
          for (const i of idx) {
            const g = bySlot.get(slots[i]);
            if (g === undefined) bySlot.set(slots[i], [i]);
            else g.push(i);
          }
          await Promise.allSettled(
            [...bySlot.values()].map(async (ii) => {
              const values = await c.mget(ii.map((i) => keys[i]));
              for (let j = 0; j < ii.length; j++) out[ii[j]] = values[j];
            }),
          );
        }
      }),
    );
    return out;
  }

  /**
   * Subscribes to `channel` on a connection of its own (src/redis/subscriber.ts), kept up forever
   * until shutdown; on a cluster it follows the nodes this service's client knows.
   */
  subscribe(channel: string, purpose: string, handlers: SubscriberHandlers): ChannelSubscriber {
    const client = this.client;
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

  /** Keeps the clients open during shutdown until `p` settles (bounded by the shutdown deadline). */
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
    for (const w of this.watched()) w.client.connect().catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    for (const s of this.subscribers) s.stop();
    if (this.holds.size > 0) {
      await withTimeout(Promise.all([...this.holds]), this.config.shutdownTimeoutMs + 500);
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
    if (quit === true) return;
  }
  w.client.disconnect();
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
