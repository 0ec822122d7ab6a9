import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { untilUsable } from '../redis/redis.options';
import { toBatch, type Batch } from './batch';
import { logListKeys } from '../bidlog/keys';
import { ParquetStore, StorageError, type StoreResult } from './parquet-store';
import { SHIPPER_CONFIG, type ShipperConfig } from './shipper.config';
import { ShipperMetrics, type ShipErrorKind } from './shipper.metrics';
import { LeaseLostError, ShipperRedis } from './shipper-redis';

/** Backoff after a failed round: 0.5 s, 1 s, 2 s, … at most 30 s between tries. */
export function retryDelay(failures: number): number {
  return Math.min(500 * 2 ** Math.min(failures - 1, 10), 30_000);
}

/**
 * A batch that cannot be loaded this many times in a row (the same frames, in this process) has its
 * frames tried one by one: those that fail alone are set aside in SHIP_DIR/bad-frames/ with a
 * `.reason` file, and the rest is stored (docs/log-pipeline.md, "The shipper").
 */
export const FRAME_TRIES = 5;

/** How often the retention runs (and at start). */
const RETENTION_EVERY_MS = 3_600_000;
/** A failure that persists is logged again at most this often (each one is counted). */
const ERROR_LOG_EVERY_MS = 30_000;

export interface ShipperStatus {
  ready: boolean;
  problems: string[];
}

/**
 * Moves the bid log out of Redis into Parquet files, batch by batch (docs/log-pipeline.md):
 * claim frames into this shipper's processing list, store them as one batch group, then remove
 * the processing list. A batch left in the processing list (a crash, a failure, a stop that ran out
 * of time) is resumed first; the same frames give the same file names, so what was already written
 * is not written again. A dead shipper's processing list is adopted once its heartbeat lease expires.
 */
@Injectable()
export class ShipperService implements OnModuleInit, OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Shipper');
  private readonly keys: string[];
  private readonly leases = new Map<string, boolean>();
  private loop: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private lastError: { kind: ShipErrorKind; message: string } | null = null;
  private lastErrorLogAt = 0;
  private nextAdoptAt = 0;
  private nextRetentionAt = 0;
  private nextBacklogAt = 0;
  private waitingForLease = false;
  /** Whether the heartbeat leases were taken at start: not ready before (another shipper could still adopt its list). */
  private leasesTaken = false;
  private drainUntil = 0;
  /** The batch group that failed to load and how many times in a row (FRAME_TRIES). */
  private loadFailures: { group: string; tries: number } | null = null;

  constructor(
    @Inject(SHIPPER_CONFIG) private readonly config: ShipperConfig,
    private readonly redis: ShipperRedis,
    private readonly store: ParquetStore,
    private readonly metrics: ShipperMetrics,
  ) {
    this.keys = logListKeys(config);
    this.redis.client.on('ready', () => this.metrics.redisUp.set(1));
    this.redis.client.on('close', () => this.metrics.redisUp.set(0));
    this.redis.client.on('error', () => undefined);
  }

  async onModuleInit(): Promise<void> {
    await this.store.open();
    // Not awaited: the loop waits for the connection (and retries) itself.
    this.redis.connect().catch(() => undefined);
  }

  onApplicationBootstrap(): void {
    this.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.stop();
  }

  start(): void {
    if (this.loop !== null) return;
    this.logger.log({
      msg: 'shipping',
      lists: this.keys,
      dir: this.config.dir,
      shipperId: this.config.shipperId,
      intervalMs: this.config.intervalMs,
      batchFrames: this.config.batchFrames,
      batchBytes: this.config.batchBytes,
      retentionDays: this.config.retentionDays,
    });
    this.loop = this.run();
  }

  /**
   * Graceful stop: the batch under way is finished (and removed from Redis), and what is left in
   * the lists is shipped too, new batches starting only during the first half of
   * SHIP_STOP_TIMEOUT_MS; a batch not finished by the deadline stays in the processing list to be
   * resumed. Then the leases are given up, so that another shipper can adopt at once, and the
   * connections closed.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    // New batches start only in the first half of the stop deadline; the one under way may use the rest.
    this.drainUntil = Date.now() + Math.floor(this.config.stopTimeoutMs / 2);
    this.wake?.();
    let finished = true;
    if (this.loop !== null) {
      finished = await Promise.race([this.loop.then(() => true), sleep(this.config.stopTimeoutMs).then(() => false)]);
      if (!finished) this.logger.warn({ msg: 'stop: the batch under way did not finish in time; it stays in the processing list and is resumed later', stopTimeoutMs: this.config.stopTimeoutMs });
    }
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    if (finished && this.redis.ready()) {
      for (const key of this.keys) await this.redis.release(key).catch(() => undefined);
    }
    if (finished) this.store.close();
    await this.redis.close();
    this.logger.log({ msg: 'stopped', batchFinished: finished });
  }

  status(): ShipperStatus {
    const problems: string[] = [];
    if (this.stopping) problems.push('stopping');
    if (!this.redis.ready()) problems.push('redis not connected');
    if (this.waitingForLease) problems.push(`waiting for the heartbeat lease of SHIP_ID=${this.config.shipperId} (another process holds it)`);
    else if (!this.leasesTaken && !this.stopping) problems.push('taking the heartbeat lease');
    if (this.failures > 0 && this.lastError) problems.push(`${this.lastError.kind}: ${this.lastError.message}`);
    return { ready: problems.length === 0, problems };
  }

  // ------------------------------------------------------------------------------------------

  private async run(): Promise<void> {
    await this.acquireLeases();
    if (this.stopping) return;
    const beatEvery = Math.max(100, Math.floor(this.config.heartbeatTtlMs / 3));
    this.heartbeatTimer = setInterval(() => void this.beat(), beatEvery);
    while (!this.stopping || Date.now() < this.drainUntil) {
      let busy = false;
      let more = false;
      try {
        if (!this.stopping) await this.housekeeping();
        for (const key of this.keys) {
          if (this.stopping && Date.now() >= this.drainUntil) break;
          const r = await this.shipOne(key);
          busy ||= r !== 'empty';
          more ||= r === 'more';
        }
        if (this.failures > 0) this.logger.log({ msg: 'shipping again', afterFailures: this.failures });
        this.failures = 0;
        this.lastError = null;
        this.metrics.storageUp.set(1);
      } catch (e) {
        this.failed(e);
        if (this.stopping) break;
        // The backlog matters most while shipping fails: keep its gauges current.
        await this.refreshBacklog();
        await this.pause(retryDelay(this.failures));
        continue;
      }
      // Stopping: ship what is left (the workers' final flush, under `npm stop`) until the list is empty or the drain time is up.
      if (this.stopping) {
        if (!busy) break;
        continue;
      }
      await this.refreshBacklog();
      // Frames trickle in all the time under load; claiming them as they come would make a batch
      // (and pay its fixed cost: the DuckDB load and COPY, a file and its fsyncs) per frame or two.
      if (!more) await this.pause(this.config.intervalMs);
    }
  }

  /**
   * Ships one batch group of `listKey`: the processing list if it holds one (resumed), else a dead
   * shipper's (adopted), else a fresh claim. Returns 'empty' when there was nothing to ship, 'more'
   * when more should be shipped at once (a resumed or adopted batch, or a claim that a bound cut
   * short: frames were left in the list), else 'shipped' (the claim took all there was).
   */
  private async shipOne(listKey: string): Promise<'empty' | 'shipped' | 'more'> {
    if (this.leases.get(listKey) !== true) throw new LeaseLostError(listKey);
    let source: 'resumed' | 'adopted' | 'claimed' = 'resumed';
    let frames = await this.redis.processing(listKey);
    if (frames.length > 0) {
      this.logger.log({ msg: 'resuming the batch in the processing list', list: listKey, frames: frames.length });
    } else if (Date.now() >= this.nextAdoptAt) {
      this.nextAdoptAt = Date.now() + Math.floor(this.config.heartbeatTtlMs / 2);
      const adopted = await this.redis.adopt(listKey);
      if (adopted) {
        source = 'adopted';
        frames = await this.redis.processing(listKey);
        this.logger.warn({ msg: 'adopted the processing list of a shipper whose heartbeat expired', list: listKey, from: adopted.from, frames: frames.length });
      }
    }
    let more = true;
    if (frames.length === 0) {
      const claimed = await this.redis.claim(listKey, this.config.batchFrames, this.config.batchBytes);
      if (claimed === null) return 'more'; // a processing list appeared (an ambiguous earlier reply): resume it next
      if (claimed.length === 0) {
        this.metrics.processingFrames.set(0);
        this.metrics.lastSuccess.set(Date.now() / 1000);
        return 'empty';
      }
      source = 'claimed';
      frames = claimed;
      if (this.config.testCrashAt === 'after-claim') crashNow();
      // Read at once: a frame pushed in between is rare, and costs only an early next round.
      more = (await this.redis.waiting(listKey)) > 0;
    }
    this.metrics.processingFrames.set(frames.length);
    const t0 = performance.now();
    const claimed = toBatch(frames);
    const { batch, stored } = await this.storeOrSetAside(listKey, claimed);
    if (this.config.testCrashAt === 'after-write') crashNow();
    await this.redis.remove(listKey);
    const seconds = (performance.now() - t0) / 1000;
    this.metrics.processingFrames.set(0);
    this.metrics.batchSeconds.observe(seconds);
    this.metrics.batches.inc({ source });
    this.metrics.frames.inc(claimed.elements);
    this.metrics.records.inc(stored.records);
    this.metrics.bytes.inc({ kind: 'redis' }, claimed.compressedBytes);
    this.metrics.bytes.inc({ kind: 'parquet' }, stored.written.reduce((s, w) => s + w.bytes, 0));
    if (stored.invalidLines > 0) this.metrics.invalidLines.inc(stored.invalidLines);
    if (stored.badFrames.length > 0) {
      this.metrics.badFrames.inc(stored.badFrames.length);
      this.logger.warn({ msg: 'list elements that are not zstd frames were kept apart', dir: `${this.config.dir}/bad-frames`, frames: stored.badFrames });
    }
    if (stored.invalidLines > 0) this.logger.warn({ msg: 'lines that are not JSON were stored with type NULL', lines: stored.invalidLines, group: batch.group });
    if (stored.deadLetters.length > 0) {
      this.metrics.deadLetters.inc(stored.deadLetters.length);
      this.logger.warn({
        msg: 'lines the store refused were kept apart; the rest of the batch is stored',
        file: `${this.config.dir}/dead-letters/${batch.group}.ndjson`,
        lines: stored.deadLetters.length,
        reasons: [...new Set(stored.deadLetters.map((d) => d.reason))].slice(0, 5),
      });
    }
    this.metrics.lastSuccess.set(Date.now() / 1000);
    this.logger.debug({
      msg: 'shipped',
      list: listKey,
      source,
      group: batch.group,
      frames: batch.elements,
      records: stored.records,
      files: stored.written.length,
      alreadyWritten: stored.skipped.length,
      ms: Math.round(seconds * 1000),
    });
    return more ? 'more' : 'shipped';
  }

  /**
   * Stores `batch`. A batch that failed to load FRAME_TRIES times in a row has its frames tried
   * alone; those refused alone are set aside (bad-frames/, counted) and the rest is stored. A
   * failure no single frame explains (the disk, DuckDB's memory) is thrown: retried as before.
   */
  private async storeOrSetAside(listKey: string, batch: Batch): Promise<{ batch: Batch; stored: StoreResult }> {
    try {
      const stored = await this.store.store(batch);
      this.loadFailures = null;
      return { batch, stored };
    } catch (e) {
      if (!(e instanceof StorageError) || (e.step !== 'load' && e.step !== 'stage')) throw e;
      const tries = this.loadFailures?.group === batch.group ? this.loadFailures.tries + 1 : 1;
      this.loadFailures = { group: batch.group, tries };
      if (tries < FRAME_TRIES) throw e;
      const aside = await this.store.setAside(batch);
      if (aside.length === 0) throw e;
      this.metrics.framesSetAside.inc(aside.length);
      this.logger.error({ msg: `frames that could not be stored after ${tries} tries were set aside; the rest of the batch is stored`, list: listKey, dir: `${this.config.dir}/bad-frames`, frames: aside });
      const setAside = new Set(aside.map((a) => a.hash));
      const rest = toBatch(batch.frames.filter((f) => !setAside.has(f.hash)).map((f) => f.bytes));
      const stored: StoreResult = rest.frames.length === 0 ? { records: 0, written: [], skipped: [], invalidLines: 0, badFrames: [], deadLetters: [] } : await this.store.store(rest);
      this.loadFailures = null;
      return { batch: rest, stored };
    }
  }

  private async housekeeping(): Promise<void> {
    const now = Date.now();
    if (now < this.nextRetentionAt) return;
    this.nextRetentionAt = now + RETENTION_EVERY_MS;
    try {
      const deleted = await this.store.retain(this.config.retentionDays, now);
      if (deleted.length > 0) {
        this.metrics.partitionsDeleted.inc(deleted.length);
        this.logger.log({ msg: 'retention: deleted old partitions', retentionDays: this.config.retentionDays, partitions: deleted });
      }
    } catch (e) {
      this.metrics.errors.inc({ kind: 'retention' });
      this.logger.warn({ msg: 'retention failed', err: errorText(e) });
    }
  }

  private async refreshBacklog(): Promise<void> {
    const now = Date.now();
    if (now < this.nextBacklogAt) return;
    this.nextBacklogAt = now + Math.max(1_000, this.config.intervalMs);
    try {
      const b = await this.redis.backlog(this.keys);
      this.metrics.backlogFrames.set(b.frames);
      this.metrics.backlogBytes.set(b.bytes);
      this.metrics.backlogAge.set(b.oldestTs === null ? 0 : Math.max(0, (now - b.oldestTs) / 1000));
    } catch {
      this.metrics.errors.inc({ kind: 'backlog' });
    }
  }

  private failed(e: unknown): void {
    this.failures++;
    const kind: ShipErrorKind = e instanceof StorageError ? e.step : e instanceof LeaseLostError ? 'lease' : 'redis';
    if (kind === 'stage' || kind === 'load' || kind === 'write') this.metrics.storageUp.set(0);
    this.metrics.errors.inc({ kind });
    const message = errorText(e);
    const now = Date.now();
    if (this.failures === 1 || now - this.lastErrorLogAt >= ERROR_LOG_EVERY_MS || this.lastError?.message !== message) {
      this.lastErrorLogAt = now;
      this.logger.warn({ msg: 'shipping failed; the frames stay in Redis and are retried', kind, err: message, failures: this.failures, retryInMs: retryDelay(this.failures) });
    }
    this.lastError = { kind, message };
  }

  /** Takes the heartbeat lease of every list; waits while another live process holds one under the same SHIP_ID. */
  private async acquireLeases(): Promise<void> {
    let announced = false;
    while (!this.stopping) {
      if (!this.redis.ready()) {
        await this.untilRedisReady(1_000);
        continue;
      }
      try {
        let all = true;
        for (const key of this.keys) {
          const lease = await this.redis.heartbeat(key, this.config.heartbeatTtlMs);
          this.leases.set(key, lease !== 'taken');
          if (lease === 'taken') all = false;
        }
        if (all) {
          this.waitingForLease = false;
          this.leasesTaken = true;
          return;
        }
        this.waitingForLease = true;
        if (!announced) {
          announced = true;
          this.logger.warn({ msg: 'another process holds the heartbeat lease of this SHIP_ID (a previous run that crashed, or a second shipper with the same id); waiting for it to expire', shipperId: this.config.shipperId, ttlMs: this.config.heartbeatTtlMs });
        }
      } catch (e) {
        this.failed(e);
      }
      await this.pause(Math.max(100, Math.floor(this.config.heartbeatTtlMs / 5)));
    }
  }

  private async untilRedisReady(maxMs: number): Promise<void> {
    await untilUsable(this.redis.client, maxMs);
  }

  private async beat(): Promise<void> {
    for (const key of this.keys) {
      try {
        const lease = await this.redis.heartbeat(key, this.config.heartbeatTtlMs);
        if (lease === 'acquired') {
          this.metrics.errors.inc({ kind: 'lease' });
          this.logger.warn({ msg: 'the heartbeat lease had expired (this process stalled or lost Redis); the batch under way may have been adopted by another shipper, which is harmless', list: key });
        }
        this.leases.set(key, lease !== 'taken');
      } catch {
        // Redis away: the loop notices and counts it; the lease is renewed on the next beat.
      }
    }
  }

  private pause(ms: number): Promise<void> {
    if (this.stopping) return Promise.resolve();
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
  }
}

function crashNow(): void {
  // Tests only (SHIP_TEST_CRASH_AT): die at once, as a power cut or the OOM killer would.
  process.kill(process.pid, 'SIGKILL');
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
