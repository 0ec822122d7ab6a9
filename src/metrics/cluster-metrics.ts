import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AggregatorRegistry, type PrometheusContentType } from 'prom-client';
import { CONFIG, type Config } from '../config/config';
import { createRedisClient, stopSlotsRefresh, type RedisClient } from '../redis/redis.options';
import { scrapedGauge, type MetricFamily } from './scraped';
import { MetricsService, WINDOW_MS } from './metrics.service';
import { staggeredInterval, type Periodic } from '../timers';

/** A snapshot older than this belongs to a worker that is gone (crashed, or killed before it could say so). */
export const STALE_MS = 3 * WINDOW_MS;

interface Snapshot {
  ts: number;
  worker: string;
  host: string;
  pid: number;
  metrics: MetricFamily[];
}

/** Redis hash holding one snapshot per live worker of the bidder listening on `port` on this host (HOST_ID). */
export function machineKey(port: number, host: string): string {
  return `bidder:metrics:${host}:${port}`;
}

/** Removes the `worker` label so that the same series of different workers add up. */
export function withoutWorkerLabel(families: MetricFamily[]): MetricFamily[] {
  return families.map((f) => ({
    ...f,
    values: f.values.map((v) => {
      const { worker: _worker, ...labels } = v.labels;
      return { ...v, labels };
    }),
  }));
}

/**
 * Aggregates worker snapshots as prom-client's cluster mode does (counters and histograms summed,
 * gauges by each family's aggregator) and adds `bidder_cluster_workers` and
 * `bidder_cluster_view_complete`. `byWorker` keeps the `worker` label: every worker's series side by
 * side (an old and a new worker of the same PM2 instance during a reload add up), for Prometheus to
 * aggregate with `sum without (worker)`. `complete` false: Redis could not be read, and the view
 * holds only the worker that answered.
 */
export async function aggregate(snapshots: MetricFamily[][], byWorker = false, complete = true): Promise<string> {
  const families = (byWorker ? snapshots : snapshots.map(withoutWorkerLabel)).map(keepStartTime);
  const registry = AggregatorRegistry.aggregate<PrometheusContentType>(families);
  scrapedGauge(registry, 'bidder_cluster_workers', 'Workers whose snapshot is in this aggregated view.', 'sum', [], () => [{ value: snapshots.length, labels: {} }]);
  scrapedGauge(
    registry,
    'bidder_cluster_view_complete',
    '1 when this view holds every live worker of the host (read from Redis); 0 when Redis could not be read and it holds only the worker that answered.',
    'min',
    [],
    () => [{ value: complete ? 1 : 0, labels: {} }],
  );
  return registry.metrics();
}

/**
 * prom-client leaves `process_start_time_seconds` out of an aggregated view (aggregator `omit`): kept
 * as the latest start (by worker: of that PM2 instance's processes, an old and a new one side by side
 * during a reload; summed: of any worker). A restart then shows as a change
 * (`changes(process_start_time_seconds[15m])`), which a CPU counter's reset misses when the new
 * process has already used more CPU than the old one had.
 */
function keepStartTime(families: MetricFamily[]): MetricFamily[] {
  return families.map((f) => (f.name === 'process_start_time_seconds' ? { ...f, aggregator: 'max' } : f));
}

/** How long `GET /metrics/cluster` waits for Redis before it answers with the answering worker's figures alone. */
export const MACHINE_VIEW_REDIS_MS = 1_500;

/**
 * The machine-wide view. PM2's cluster has no master we control, so every worker publishes a JSON
 * snapshot of its registry to a Redis hash (one field per worker, every WINDOW_MS, and at start-up;
 * removed on a graceful stop), and `GET /metrics/cluster`, answered by whichever worker receives it,
 * refreshes its own snapshot, reads the others and aggregates. Figures of other workers are at most
 * WINDOW_MS old. Uses its own small Redis connection so that metrics never queue behind log batches
 * (on a Redis Cluster its own client; the hash is one key, so its MULTI runs on one node).
 */
@Injectable()
export class ClusterMetrics implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('ClusterMetrics');
  private readonly field: string;
  private redis: RedisClient | null = null;
  private timer: Periodic | null = null;
  private inFlight: Promise<void> | null = null;
  private next: Promise<void> | null = null;
  private failing = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly metrics: MetricsService,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.field = `${config.workerId}:${process.pid}`;
  }

  onApplicationBootstrap(): void {
    // Off the bid path: a snapshot may wait for the connection (its offline queue) rather than fail.
    this.redis = createRedisClient(this.config.redis, `bidder:${this.config.hostId}:${this.config.workerId}:metrics`, { offlineQueue: true, commandTimeoutMs: 2_000 });
    this.redis.on('error', (e: Error) => this.fail(e));
    this.redis.connect().catch(() => undefined);
    this.publishInBackground();
    // At a random phase of the window: not in the same turns as the bid log's and shading's periodic work (src/timers.ts).
    this.timer = staggeredInterval(() => this.publishInBackground(), WINDOW_MS);
  }

  async onApplicationShutdown(): Promise<void> {
    this.timer?.stop();
    this.timer = null;
    const redis = this.redis;
    this.redis = null;
    if (!redis) return;
    // Bounded: a stop never waits on metrics. Whatever is not removed goes stale after STALE_MS.
    const removeOwn = async () => {
      await this.inFlight?.catch(() => undefined);
      if (redis.status === 'ready') await redis.hdel(this.key(), this.field);
    };
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([removeOwn().catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, 1_000)))]);
    clearTimeout(timer);
    redis.disconnect();
    stopSlotsRefresh(redis);
  }

  /** The Redis key of this machine's bidder (by the port all workers share). */
  key(): string {
    let port = this.config.port;
    if (port === 0) {
      const addr = this.adapterHost.httpAdapter?.getHttpServer()?.address?.();
      if (addr && typeof addr === 'object') port = addr.port;
    }
    return machineKey(port, this.config.hostId);
  }

  /**
   * Writes this worker's snapshot now; while a write is under way, one more follows it (so that a
   * change, such as becoming ready, is never hidden behind a snapshot taken before it).
   */
  publish(): Promise<void> {
    if (!this.inFlight) {
      this.inFlight = this.write().finally(() => {
        this.inFlight = null;
      });
      return this.inFlight;
    }
    this.next ??= this.inFlight
      .catch(() => undefined)
      .then(() => {
        this.next = null;
        return this.publish();
      });
    return this.next;
  }

  /**
   * The Prometheus text of every live worker of this machine's bidder, summed or by worker. When
   * Redis does not answer within MACHINE_VIEW_REDIS_MS (down, refusing the password), the answering
   * worker's own figures with `bidder_cluster_view_complete 0`: a scrape during an outage still
   * stores the failure (`bidder_log_redis_up 0`, the spill growing), rather than failing the target.
   */
  async machine(byWorker = false): Promise<string> {
    const redis = this.redis;
    if (!redis) throw new Error('not started');
    if (redis.status === 'ready') {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), MACHINE_VIEW_REDIS_MS)));
      const read = this.readView(redis).catch(() => null);
      const snapshots = await Promise.race([read, deadline]);
      clearTimeout(timer);
      if (snapshots !== null) return aggregate(snapshots, byWorker);
    }
    return aggregate([await this.metrics.snapshot()], byWorker, false);
  }

  /** Publishes this worker's snapshot, then reads every live worker's (and removes stale ones). */
  private async readView(redis: RedisClient): Promise<MetricFamily[][]> {
    await this.publish();
    const all = await redis.hgetall(this.key());
    const now = Date.now();
    const snapshots: MetricFamily[][] = [];
    const stale: string[] = [];
    for (const [field, json] of Object.entries(all)) {
      let s: Snapshot;
      try {
        s = JSON.parse(json) as Snapshot;
      } catch {
        stale.push(field);
        continue;
      }
      if (now - s.ts > STALE_MS || !Array.isArray(s.metrics)) stale.push(field);
      else snapshots.push(s.metrics);
    }
    if (stale.length > 0) redis.hdel(this.key(), ...stale).catch(() => undefined);
    return snapshots;
  }

  private async write(): Promise<void> {
    const redis = this.redis;
    if (!redis) return;
    const snapshot: Snapshot = { ts: Date.now(), worker: this.config.workerId, host: this.config.hostId, pid: process.pid, metrics: await this.metrics.snapshot() };
    const key = this.key();
    await redis.multi().hset(key, this.field, JSON.stringify(snapshot)).pexpire(key, 2 * STALE_MS).exec();
    if (this.failing) this.logger.log('publishing metrics to Redis again');
    this.failing = false;
  }

  /** Publishes without waiting; a failure is logged once per outage. */
  publishInBackground(): void {
    this.publish().catch((e: unknown) => this.fail(e));
  }

  private fail(e: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.logger.warn(`cannot publish metrics to Redis (the machine view lacks this worker until it can): ${e instanceof Error ? e.message : String(e)}`);
  }
}
