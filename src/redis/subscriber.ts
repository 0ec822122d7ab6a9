import Redis from 'ioredis';
import type { RedisNode, RedisTarget } from '../config/config';
import { reconnectDelay, redisClientOptions } from './redis.options';

export interface SubscriberHandlers {
  message(text: string): void;
  /** The subscription is (again) in place: what was published while it was not has been missed. */
  subscribed(): void;
  error(e: Error): void;
}

/**
 * A subscription to one channel that says each time it is established, so that its user can load
 * what it missed meanwhile. One connection at a time; when it ends, another is made after a capped
 * backoff, forever. On a single server it is that server. On a Redis Cluster a PUBLISH reaches the
 * subscribers of every node (the cluster bus forwards it), so any node will do: each attempt takes
 * the next node the cluster client knows (`nodes()`, then the seeds), so that a node that failed
 * is left for another at once.
 *
 * The subscription is made by hand on every connection (not ioredis' resubscription), and
 * `subscribed` is called only once Redis has confirmed it: a load started then misses nothing.
 */
export class ChannelSubscriber {
  private conn: Redis | null = null;
  private attempt = 0;
  private next = 0;
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private firstSubscribed: () => void = () => undefined;
  readonly firstSubscription = new Promise<void>((resolve) => (this.firstSubscribed = resolve));

  constructor(
    private readonly target: RedisTarget,
    private readonly channel: string,
    private readonly connectionName: string,
    private readonly handlers: SubscriberHandlers,
    /** Cluster nodes known now (tried before the seeds). */
    private readonly nodes: () => readonly RedisNode[] = () => [],
  ) {}

  start(): void {
    if (this.conn === null && this.timer === null && !this.stopped) this.connect();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.conn?.disconnect();
    this.conn = null;
  }

  /** The node the current connection goes to (`host:port`), for tests and messages. */
  get address(): string | null {
    return this.conn === null ? null : `${this.conn.options.host}:${this.conn.options.port}`;
  }

  private connect(): void {
    this.timer = null;
    const options = {
      ...redisClientOptions(this.connectionName),
      enableOfflineQueue: true,
      autoResubscribe: false,
      retryStrategy: () => null,
    };
    let c: Redis;
    if (this.target.mode === 'single') {
      c = new Redis(this.target.url, options);
    } else {
      const node = this.pick();
      const u = new URL(this.target.url);
      c = new Redis({
        ...options,
        host: node.host,
        port: node.port,
        username: u.username ? decodeURIComponent(u.username) : undefined,
        password: u.password ? decodeURIComponent(u.password) : undefined,
        tls: u.protocol === 'rediss:' ? {} : undefined,
      });
    }
    this.conn = c;
    c.on('error', (e: Error) => this.handlers.error(e));
    c.on('message', (_channel: string, text: string) => this.handlers.message(text));
    c.once('ready', () => {
      c.subscribe(this.channel).then(
        () => {
          if (this.conn !== c) return;
          this.attempt = 0;
          this.handlers.subscribed();
          this.firstSubscribed();
        },
        () => c.disconnect(),
      );
    });
    c.once('end', () => {
      if (this.conn !== c) return;
      this.conn = null;
      if (this.stopped) return;
      this.timer = setTimeout(() => this.connect(), reconnectDelay(++this.attempt));
      this.timer.unref();
    });
    c.connect().catch(() => undefined);
  }

  /** The next node in turn: those the cluster client knows, then the seeds, without repeats. */
  private pick(): RedisNode {
    const all: RedisNode[] = [];
    const seen = new Set<string>();
    for (const n of [...this.nodes(), ...this.target.nodes]) {
      const k = `${n.host}:${n.port}`;
      if (seen.has(k)) continue;
      seen.add(k);
      all.push(n);
    }
    return all[this.next++ % all.length];
  }
}
