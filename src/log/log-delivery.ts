import { performance } from 'node:perf_hooks';
import { compressFrame } from './frame';
import type { Batch, LogBuffer } from './log-buffer';
import type { LogCounters, PipelineLogger } from './log-counters';
import { errorText, type Frame, type PendingFrames, spillable } from './log-frames';
import type { FrameSink } from './log-sink';
import type { LogSpillFlow, RawBatch } from './log-spill-flow';
import type { Journal } from './journal';
import { newFrameId, type SpillEntry, type SpillStore } from './spill';

export type PipelineState = 'new' | 'running' | 'closing' | 'closed';

const COMPRESS_PARALLEL = 4;
const COMPRESS_GROUP_BYTES = 1 << 20;
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;
const CLOSING_MAX_RETRY_MS = 200;
const WARN_EVERY_MS = 10_000;

/** What the delivery is given by the pipeline that owns it. */
export interface DeliveryParts {
  readonly buffer: LogBuffer;
  readonly journal: Journal | null;
  readonly sink: FrameSink;
  readonly spill: SpillStore;
  readonly spillFlow: LogSpillFlow;
  readonly frames: PendingFrames;
  readonly counters: LogCounters;
  readonly logger: PipelineLogger;
  /** Flush early once this many bytes are queued. */
  readonly threshold: number;
  /** Most NDJSON bytes in one frame. */
  readonly frameMax: number;
  readonly maxMemory: number;
  readonly zstdLevel: number | undefined;
  readonly state: () => PipelineState;
  readonly memoryBytes: () => number;
}

/**
 * Compress and deliver, two single-flight loops:
 * - compress: when the interval ticks or the queue passes `threshold`, take the queue, compress it
 *   (thread pool) into frames of at most `frameMax` raw bytes each, add them to the pending frames;
 * - deliver: push the oldest spill file, else the oldest pending frame, one at a time; on failure
 *   keep it and retry with exponential backoff (100 ms … 5 s), immediately when Redis reconnects.
 */
export class LogDelivery {
  /** The compress loop under way (LogPipeline.append starts one only when there is none). */
  compressRun: Promise<void> | null = null;
  deliverRun: Promise<void> | null = null;
  compressingBytes = 0;
  /** Batches handed to the compressor and not yet back (raw records still only in memory), with their frame ids. */
  private readonly compressing = new Map<Batch, { id: string; seg: RawBatch['seg'] }>();
  private compressAgain = false;
  private deliverAgain = false;
  private due = false;
  private retryAt = 0;
  private backoffMs = 0;
  private maxBackoffMs = MAX_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private failing = false;
  private lastFailWarnAt = -Infinity;

  private readonly journalWrite = (data: Buffer, offset: number, length: number): void => this.p.journal?.write(data, offset, length);
  private readonly onRetry = (): void => {
    this.retryTimer = null;
    this.kickDeliver();
  };

  constructor(private readonly p: DeliveryParts) {}

  /** The flush interval ticked: compress what is queued, whatever its size. */
  tick(): void {
    this.due = true;
    this.kickCompress();
    this.kickDeliver();
  }

  /** Redis is (back) up: retry at once. */
  redisReady(): void {
    this.retryAt = 0;
    this.backoffMs = 0;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    this.kickDeliver();
  }

  /** The final flush: retry often, it has a deadline. */
  closing(): void {
    this.maxBackoffMs = CLOSING_MAX_RETRY_MS;
  }

  stop(): void {
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
  }

  /** Records in batches being compressed. */
  compressingRecords(): number {
    return [...this.compressing.keys()].reduce((n, b) => n + b.records, 0);
  }

  /** Everything raw: the batches being compressed (given up), then the queue. */
  takeAllRaw(): RawBatch[] {
    const raw = [...this.compressing].map(([b, named]) => ({ b, ...named }));
    for (const q of this.takeQueue()) raw.push(q);
    this.compressing.clear();
    return raw;
  }

  kickCompress(): void {
    if (this.compressRun !== null) {
      this.compressAgain = true;
      return;
    }
    this.compressAgain = false;
    this.compressRun = this.compressLoop()
      .catch((e: unknown) => this.p.logger.warn(`compress loop failed: ${errorText(e)}`))
      .finally(() => {
        this.compressRun = null;
        if (this.compressAgain) this.kickCompress();
      });
  }

  kickDeliver(): void {
    const state = this.p.state();
    if (state === 'new' || state === 'closed') return;
    if (this.deliverRun !== null) {
      this.deliverAgain = true;
      return;
    }
    this.deliverAgain = false;
    this.deliverRun = this.deliverLoop()
      .catch((e: unknown) => this.p.logger.warn(`deliver loop failed: ${errorText(e)}`))
      .finally(() => {
        this.deliverRun = null;
        if (this.deliverAgain) this.kickDeliver();
      });
  }

  private async compressLoop(): Promise<void> {
    for (;;) {
      this.compressAgain = false;
      const b = this.p.buffer;
      if (b.records > 0 && (this.due || b.bytes >= this.p.threshold || this.p.state() === 'closing')) {
        this.due = false;
        const takenAt = Date.now();
        const t0 = performance.now();
        const named = this.takeQueue();
        const batches = named.map((n) => n.b);
        this.p.counters.onStep(performance.now() - t0, 'take queue');
        for (const { b: batch, id, seg } of named) {
          this.compressingBytes += batch.bytes;
          this.compressing.set(batch, { id, seg });
        }
        // Small batches a few at a time (each costs a few loop turns whatever its size), large
        // ones one at a time: a compression thread per core would take CPU from the event loop
        // (and from the other workers) on a small machine. Frames stay in order.
        for (let i = 0; i < batches.length; ) {
          const group: Batch[] = [];
          let groupBytes = 0;
          while (i < batches.length && group.length < COMPRESS_PARALLEL && groupBytes < COMPRESS_GROUP_BYTES) {
            groupBytes += batches[i].bytes;
            group.push(batches[i++]);
          }
          const frames = await Promise.all(group.map((batch) => this.compressBatch(batch, takenAt)));
          for (const f of frames) if (f !== null) this.addPending(f);
        }
        continue;
      }
      return;
    }
  }

  /**
   * Takes the queue as batches with their frame ids: the journal gets what it has not yet written,
   * then its segment is sealed with these batches (the ids come from it), and a new one begun.
   */
  private takeQueue(): RawBatch[] {
    const { buffer, journal } = this.p;
    if (journal !== null) buffer.unjournaled(this.journalWrite);
    const batches = buffer.take(this.p.frameMax);
    if (batches.length === 0) return [];
    const seg = journal?.seal(batches) ?? null;
    return batches.map((b, i) => ({ b, id: seg !== null ? seg.frameIds[i] : newFrameId(), seg }));
  }

  private async compressBatch(batch: Batch, takenAt: number): Promise<Frame | null> {
    const t0 = performance.now();
    const named = this.compressing.get(batch);
    let data: Buffer;
    try {
      data = await compressFrame(batch.chunks, batch.bytes, this.p.counters.onStep, this.p.zstdLevel);
    } catch (e) {
      this.compressingBytes -= batch.bytes;
      this.compressing.delete(batch);
      this.p.counters.drop(batch.records, `compression failed: ${errorText(e)}`);
      this.p.journal?.done(named?.seg ?? null);
      return null;
    }
    // Closed meanwhile (the final flush counted it, or a fatal error spilled it): not ours any more.
    if (named === undefined || !this.compressing.delete(batch)) return null;
    this.p.buffer.release(batch.chunks);
    const compressMs = performance.now() - t0;
    this.compressingBytes -= batch.bytes;
    this.p.counters.compressedRaw += batch.bytes;
    this.p.counters.compressedOut += data.length;
    return {
      id: named.id,
      data,
      records: batch.records,
      rawBytes: batch.bytes,
      createdAt: takenAt,
      compressMs,
      seg: named.seg,
      inFlight: false,
      spilling: false,
    };
  }

  private addPending(frame: Frame): void {
    this.p.frames.add(frame);
    this.kickDeliver();
    this.p.spillFlow.kick();
  }

  private async deliverLoop(): Promise<void> {
    const { spill, spillFlow } = this.p;
    if (spillFlow.ready) await spillFlow.ready;
    for (;;) {
      this.deliverAgain = false;
      const state = this.p.state();
      if (state === 'closed') return;
      if (Date.now() < this.retryAt) {
        this.scheduleRetry();
        return;
      }
      // Oldest first: what earlier went to disk, then memory. While closing, only memory
      // (spill files are safe where they are; the next start drains them).
      if (state !== 'closing') {
        if (spill.count === 0) await spill.refresh();
        const e = spill.next();
        if (e) {
          await this.drainOne(e);
          continue;
        }
      }
      const f = this.p.frames.list.find(spillable);
      if (!f) return;
      await this.pushFrame(f);
    }
  }

  private async pushFrame(f: Frame): Promise<void> {
    const { sink, counters, frames } = this.p;
    if (!sink.ready()) {
      this.fail('Redis is not connected');
      return;
    }
    f.inFlight = true;
    const t0 = performance.now();
    try {
      const pushed = sink.push(f.id, f.data);
      counters.onStep(performance.now() - t0, 'send push'); // builds and writes the command (a copy of the frame)
      await pushed;
    } catch (e) {
      f.inFlight = false;
      this.fail(errorText(e));
      return;
    }
    f.inFlight = false;
    const ms = f.compressMs + (performance.now() - t0);
    counters.lastFlushMs = ms;
    counters.flushMsTotal += ms;
    counters.flushed(f.records, f.rawBytes, f.data.length);
    // Still pending unless the final flush spilled it meanwhile (its drain is then a no-op).
    if (frames.list.includes(f)) this.p.journal?.done(f.seg);
    frames.remove(f);
    this.succeed();
  }

  private async drainOne(e: SpillEntry): Promise<void> {
    if (!this.p.sink.ready()) {
      this.fail('Redis is not connected');
      return;
    }
    const data = await this.p.spillFlow.claim(e);
    if (data === null) return;
    try {
      await this.p.sink.push(e.frameId, data);
    } catch (err) {
      this.fail(errorText(err));
      return;
    }
    await this.p.spillFlow.drained(e, data.length);
    this.succeed();
  }

  private fail(why: string): void {
    this.p.counters.flushErrors++;
    this.backoffMs = this.backoffMs === 0 ? FIRST_RETRY_MS : Math.min(this.backoffMs * 2, this.maxBackoffMs);
    this.retryAt = Date.now() + this.backoffMs;
    const now = performance.now();
    if (!this.failing || now - this.lastFailWarnAt >= WARN_EVERY_MS) {
      this.lastFailWarnAt = now;
      this.p.logger.warn(
        `cannot push to Redis (${why}); keeping ${this.p.frames.records + this.p.buffer.records} records in memory ` +
          `(${this.p.memoryBytes()} of ${this.p.maxMemory} bytes), ${this.p.spill.count} batches on disk; retrying`,
      );
    }
    this.failing = true;
    // Pending frames may now pass the memory bound.
    this.p.spillFlow.kick();
  }

  private succeed(): void {
    if (this.failing) {
      this.failing = false;
      this.p.logger.log('pushing to Redis again; draining what waited');
    }
    this.backoffMs = 0;
    this.retryAt = 0;
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== null) return;
    this.retryTimer = setTimeout(this.onRetry, Math.max(1, this.retryAt - Date.now()));
    this.retryTimer.unref();
  }
}
