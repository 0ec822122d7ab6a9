import calculateSlot from 'cluster-key-slot';
import Redis, { Cluster, type ClusterOptions, type RedisOptions } from 'ioredis';
import { hideUserinfo, type RedisTarget } from '../config/config';

/** A connection to one Redis server, or a client of a Redis Cluster: both take the same commands. */
export type RedisClient = Redis | Cluster;

/** Longest a command may wait for its reply before it fails (the caller decides about retrying). */
export const REDIS_COMMAND_TIMEOUT_MS = 3_000;
const CONNECT_TIMEOUT_MS = 2_000;
/** How often a cluster client asks for the slot map even when no reply told it the map changed. */
const SLOTS_REFRESH_MS = 5_000;

export interface ClientBehaviour {
  /**
   * Commands issued while disconnected wait until the connection is back (default false: they fail
   * at once). Only for users that are off the bid path and never hold data for it (metrics).
   */
  readonly offlineQueue?: boolean;
  /** Reconnect forever (default), or give up at the first failure (a command-line tool). */
  readonly reconnect?: boolean;
  /** Default REDIS_COMMAND_TIMEOUT_MS. */
  readonly commandTimeoutMs?: number;
}

/**
 * Client options for a single server's connection. Commands never wait in a queue while Redis is
 * away: with no offline queue and no retries, a command fails at once when the connection is down
 * and within REDIS_COMMAND_TIMEOUT_MS when Redis is slow, so the caller (e.g. the log flusher) keeps
 * its data and decides itself about retrying or spilling. The connection itself is re-established
 * forever with a capped backoff.
 */
export function redisClientOptions(connectionName: string, b: ClientBehaviour = {}): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: b.offlineQueue ?? false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: b.commandTimeoutMs ?? REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: CONNECT_TIMEOUT_MS,
    keepAlive: 10_000,
    enableReadyCheck: true,
    disableClientInfo: true,
    connectionName: safeName(connectionName),
    retryStrategy: b.reconnect === false ? () => null : reconnectDelay,
  };
}

/**
 * Options of a cluster client, with the same failure behaviour as redisClientOptions: no offline
 * queue (a command fails at once while the cluster is not ready), a command that meets a closed
 * node connection or CLUSTERDOWN fails at once instead of being retried inside the client (the
 * caller retries, and every write the project retries is idempotent), the command timeout on every
 * node, and the cluster reconnected forever. MOVED and ASK are followed (the slot moved, e.g. after
 * a failover: the same command on the node that now holds it). Node connections are not
 * reconnected one by one: the client learns the new map (after MOVED, every SLOTS_REFRESH_MS, or
 * when every node is gone) and connects to the nodes it names. Credentials and TLS come from the
 * target's URL and apply to every node.
 */
export function clusterClientOptions(target: RedisTarget, connectionName: string, b: ClientBehaviour = {}): ClusterOptions {
  const u = new URL(target.url);
  const node = redisClientOptions(connectionName, b);
  return {
    lazyConnect: true,
    enableOfflineQueue: b.offlineQueue ?? false,
    enableReadyCheck: true,
    clusterRetryStrategy: b.reconnect === false ? () => null : reconnectDelay,
    retryDelayOnFailover: 0,
    retryDelayOnClusterDown: 0,
    retryDelayOnTryAgain: 100,
    retryDelayOnMoved: 0,
    maxRedirections: 16,
    slotsRefreshTimeout: CONNECT_TIMEOUT_MS,
    slotsRefreshInterval: SLOTS_REFRESH_MS,
    redisOptions: {
      maxRetriesPerRequest: node.maxRetriesPerRequest,
      autoResendUnfulfilledCommands: false,
      commandTimeout: node.commandTimeout,
      connectTimeout: node.connectTimeout,
      keepAlive: node.keepAlive,
      disableClientInfo: true,
      connectionName: node.connectionName,
      username: u.username ? decodeURIComponent(u.username) : undefined,
      password: u.password ? decodeURIComponent(u.password) : undefined,
      tls: u.protocol === 'rediss:' ? {} : undefined,
    },
  };
}

/**
 * The one place Redis clients are made (the bidder's users, the log reader, the shipper): a `Redis`
 * for a single server, a `Cluster` for a Redis Cluster, with the same failure behaviour. Not yet
 * connected: call `connect()`.
 */
export function createRedisClient(target: RedisTarget, connectionName: string, b: ClientBehaviour = {}): RedisClient {
  const client = makeClient(target, connectionName, b);
  client.on('error', (e: Error) => noteError(client, e));
  client.on('node error', (e: Error) => noteError(client, e));
  client.on('ready', () => lastErrors.delete(client));
  return client;
}

/** Each client's last connection error (for readiness: why Redis cannot be used), until it is ready again. */
const lastErrors = new WeakMap<RedisClient, string>();

function noteError(client: RedisClient, e: Error): void {
  // A cluster client that reached no node says only "Failed to refresh slots cache."; the node's own error says why.
  const node = (e as Error & { lastNodeError?: Error }).lastNodeError;
  lastErrors.set(client, node !== undefined ? `${e.message} (${node.message})` : e.message);
}

/** Why `client` is not usable, as its last error said; null when it said nothing (or is ready). */
export function lastClientError(client: RedisClient): string | null {
  return lastErrors.get(client) ?? null;
}

function makeClient(target: RedisTarget, connectionName: string, b: ClientBehaviour): RedisClient {
  if (target.mode === 'cluster') {
    const cluster = new Cluster(
      target.nodes.map((n) => ({ host: n.host, port: n.port })),
      clusterClientOptions(target, connectionName, b),
    );
    // ioredis connects to a node at its first command, and without an offline queue every further
    // command to a node still connecting fails ("Connection is closed."): two thirds of the first
    // burst of GETs over 3 masters did. So each node is connected as soon as the client learns of it.
    cluster.on('+node', (node: Redis) => {
      if (node.status === 'wait') node.connect().catch(() => undefined);
    });
    return cluster;
  }
  return new Redis(target.url, redisClientOptions(connectionName, b));
}

/**
 * Whether commands can be sent now: the connection is ready, and on a cluster so is the connection
 * to every master the client knows. A cluster client says `ready` once it has the slot map, while
 * it may still be connecting to some masters, and (without an offline queue) commands to those fail.
 */
export function usable(c: RedisClient): boolean {
  if (c.status !== 'ready') return false;
  if (!(c instanceof Cluster)) return true;
  const masters = c.nodes('master');
  return masters.length > 0 && masters.every((n) => n.status === 'ready');
}

/** Resolves once usable(c), or after `timeoutMs` (then commands may still fail, and the caller's retries take over). */
export async function untilUsable(c: RedisClient, timeoutMs = CONNECT_TIMEOUT_MS): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  while (!usable(c)) {
    if (Date.now() >= end || c.status === 'end') return false;
    await new Promise((r) => setTimeout(r, 5));
  }
  return true;
}

/**
 * Connects `c` and resolves once usable(c). Rejects when the connection fails, when the client ends
 * (it does not reconnect), or after `timeoutMs`. `connect()` alone is not enough: ioredis's
 * `Cluster.connect()` never settles when its ready check finds the cluster not ok (cluster_state:fail,
 * e.g. a master down without a replica) and the client does not reconnect, and a process awaiting
 * it has nothing left to run and exits 0 in silence (test/cluster/reader.spec.ts).
 */
export async function connectUsable(c: RedisClient, timeoutMs = CONNECT_TIMEOUT_MS): Promise<void> {
  let failure: { error: unknown } | null = null;
  c.connect().catch((e: unknown) => {
    failure = { error: e };
  });
  const end = Date.now() + timeoutMs;
  while (!usable(c)) {
    if (failure !== null) throw (failure as { error: unknown }).error;
    if (c.status === 'end') throw new Error(`the connection ended before it was usable${c instanceof Cluster ? ' (is cluster_state ok?)' : ''}`);
    if (Date.now() >= end) throw new Error('not every node answered in time');
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Reconnect after 100, 200, 400 … ms, at most 1 s apart, forever. */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * 2 ** Math.min(attempt - 1, 10), 1_000);
}

/**
 * After `quit()` or `disconnect()` of a cluster client: makes sure its periodic slot-map refresh
 * stays stopped. ioredis (5.x) schedules the next refresh when one completes without checking
 * whether the client was closed meanwhile, so a refresh in flight at the close re-arms the timer,
 * which then fires every `slotsRefreshInterval` for good and keeps the process from exiting
 * (test/cluster/redis.spec.ts). `disconnect()` clears the timer: at once when the refresh has
 * completed, else in a callback queued behind it (run after it re-armed the timer). Nothing to do
 * for a single server's client.
 */
export function stopSlotsRefresh(client: RedisClient): void {
  if (!(client instanceof Cluster)) return;
  if ((client as unknown as { isRefreshing?: boolean }).isRefreshing === true) client.refreshSlotsCache(() => client.disconnect());
  else client.disconnect();
}

/** The Redis Cluster hash slot of a key (its hash tag's, when it has one). */
export function slotOf(key: string): number {
  return calculateSlot(key);
}

/**
 * The connection to the master that serves `key`'s slot, as the cluster client's slot map says now;
 * null when the map does not know it yet (not connected, or the node just left). Commands sent on it
 * run on that node or fail (a MOVED reply is an error here, not followed): what a command that
 * must be followed by WAIT on the same connection needs.
 */
export function masterFor(cluster: Cluster, key: string): Redis | null {
  const nodeKey = cluster.slots[slotOf(key)]?.[0];
  if (nodeKey === undefined) return null;
  for (const node of cluster.nodes('master')) {
    if (`${node.options.host}:${node.options.port}` === nodeKey) return node;
  }
  return null;
}

/** Groups keys by hash slot (for commands such as MGET, whose keys must share one on a cluster). */
export function bySlot(keys: readonly string[]): Map<number, number[]> {
  const groups = new Map<number, number[]>();
  for (let i = 0; i < keys.length; i++) {
    const slot = slotOf(keys[i]);
    const g = groups.get(slot);
    if (g === undefined) groups.set(slot, [i]);
    else g.push(i);
  }
  return groups;
}

/** A URL or the seed nodes, without the password, for messages. */
export function describeTarget(target: RedisTarget): string {
  if (target.mode === 'single') return redactUrl(target.url);
  return `the Redis Cluster at ${target.nodes.map((n) => (n.host.includes(':') ? `[${n.host}]:${n.port}` : `${n.host}:${n.port}`)).join(',')}`;
}

/** The URL without its password, for messages. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return hideUserinfo(url);
  }
}

function safeName(name: string): string {
  return name.replace(/[^A-Za-z0-9_.:-]/g, '_');
}
