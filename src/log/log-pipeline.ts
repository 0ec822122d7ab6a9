import { performance } from 'node:perf_hooks';
import { compressFrame, compressFrameSync, verifyFrame } from './frame';
import { LogBuffer, type Batch } from './log-buffer';
import { type Journal, recoverJournals, type Segment } from './journal';
import type { FrameSink } from './log-sink';
import type { LogStats } from './log.types';
import { newFrameId, type SpillEntry, SpillStore } from './spill';

export interface PipelineOptions {
  /** Compress and push what is queued at least this often. */
  readonly flushIntervalMs: number;
  /** Flush early once this many bytes are queued; a frame holds at most this much (and at most 4 MiB). */
  readonly flushBytes: number;
  /** Bound of queued + compressing + unsent compressed bytes; past it batches go to disk. */
  readonly maxMemoryBytes: number;
  /** zstd compression level (default ZSTD_LEVEL). */
  readonly zstdLevel?: number;
}

export interface PipelineLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** A compressed batch in memory, waiting for (or on its way to) Redis. */
interface Frame {
  readonly id: string;
  readonly data: Buffer;
  readonly records: number;
  readonly rawBytes: number;
  readonly createdAt: number;
  readonly compressMs: number;
  /** The journal segment holding its records (deleted once all its frames are safe). */
  readonly seg: Segment | null;
  inFlight: boolean;
  spilling: boolean;
}

/**
 * Largest batch (NDJSON bytes) in one frame: ~0.45 MB compressed at ~9×. Sending a push copies the
 * frame on the event loop (ioredis builds the command in one buffer, then the socket write copies
 * it into the kernel): ~1.2 ms median for 1 MiB here, 0.6 ms for 512 KiB (bench/RESULTS-log.md).
 */
const FRAME_MAX_BYTES = 4 << 20;
const COMPRESS_PARALLEL = 4;
const COMPRESS_GROUP_BYTES = 1 << 20;
// Leaves thread-pool threads (4 by default) for compression while files are written.
const SPILL_PARALLEL = 2;
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 5_000;
const CLOSING_MAX_RETRY_MS = 200;
const WARN_EVERY_MS = 10_000;
/** After a drop the pipeline reports itself unhealthy for this long. */
const DROP_UNHEALTHY_MS = 10_000;
/** Largest decompressed frame a drain verifies (a frame holds at most 4 MiB of NDJSON, FRAME_MAX_BYTES). */
const VERIFY_MAX_BYTES = 64 << 20;
/** How often a worker looks for journals of dead workers to recover (besides at start). */
const RECOVER_EVERY_MS = 30_000;

type State = 'new' | 'running' | 'closing' | 'closed';


/**
 * The bid log pipeline of one worker: queue → zstd frames → Redis, with disk as the overflow.
 *
 * Three single-flight loops, so that neither a slow Redis nor a slow disk holds records as raw text:
 * - compress: when the interval ticks or the queue passes `flushBytes`, take the queue, compress
 *   it (thread pool) into frames of at most min(`flushBytes`, 4 MiB) raw each, append them to `pending`;
 * - spill: while memory is over its bound, move the oldest pending frames to the spill directory
 *   (drop and count only when the directory is full or unwritable);
 * - deliver: push the oldest spill file, else the oldest pending frame, one at a time; on failure
 *   keep it and retry with exponential backoff (100 ms … 5 s), immediately when Redis reconnects.
 * A push is idempotent per frame id (log-sink.ts), so a retry after an ambiguous failure, or a
 * spill file drained after a crash that followed its push, never duplicates records.
 */
export class LogPipeline {
  private readonly buffer: LogBuffer;
  private readonly threshold: number;
  private readonly frameMax: number;
  private readonly maxMemory: number;
  private pending: Frame[] = [];
  private pendingBytes = 0;
  private pendingRecords = 0;
  private compressingBytes = 0;
  /** Batches handed to the compressor and not yet back (raw records still only in memory), with their frame ids. */
  private readonly compressing = new Map<Batch, { id: string; seg: Segment | null }>();
  private recoverRun: Promise<void> | null = null;
  private lastRecoverAt = 0;
  private compressRun: Promise<void> | null = null;
  private compressAgain = false;
  private deliverRun: Promise<void> | null = null;
  private deliverAgain = false;
  private spillRun: Promise<void> | null = null;
  private spillAgain = false;
  private due = false;
  private kickQueued = false;
  private retryAt = 0;
  private backoffMs = 0;
  private maxBackoffMs = MAX_RETRY_MS;
  private retryTimer: NodeJS.Timeout | null = null;
  private interval: NodeJS.Timeout | null = null;
  private state: State = 'new';
  private spillReady: Promise<boolean> | null = null;
  private closeRun: Promise<void> | null = null;
  private failing = false;
  private lastFailWarnAt = -Infinity;
  private lastDropWarnAt = -Infinity;
  private droppedSinceWarn = 0;
  private dropWhy = '';
  private lastDropAt = -Infinity;
  private dropWarnTimer: NodeJS.Timeout | null = null;

  // Counters (monotonic) and last values, see LogStats.
  private recordsLogged = 0;
  private batchesFlushed = 0;
  private recordsFlushed = 0;
  private bytesFlushedRaw = 0;
  private bytesFlushedCompressed = 0;
  private lastFlushMs = 0;
  private flushMsTotal = 0;
  private compressedRaw = 0;
  private compressedOut = 0;
  private flushErrors = 0;
  private batchesSpilled = 0;
  private recordsSpilled = 0;
  private batchesDrained = 0;
  private recordsDrained = 0;
  private recordsDropped = 0;
  private batchesQuarantined = 0;
  private recordsQuarantined = 0;

  /** Longest synchronous step the flusher itself took on the event loop (ms). */
  private longestStepMs = 0;
  private readonly onStep = (ms: number, what: string): void => {
    if (ms > this.longestStepMs) this.longestStepMs = ms;
    this.stepHook?.(ms, what);
  };

  private readonly kickFromImmediate = (): void => {
    this.kickQueued = false;
    this.kickCompress();
  };
  private readonly journalWrite = (data: Buffer, offset: number, length: number): void => this.journal?.write(data, offset, length);
  private readonly onTick = (): void => {
    if (Date.now() - this.lastRecoverAt >= RECOVER_EVERY_MS) this.recover();
    this.due = true;
    this.kickCompress();
    this.kickDeliver();
  };
  private readonly onRetry = (): void => {
    this.retryTimer = null;
    this.kickDeliver();
  };

  constructor(
    private readonly opts: PipelineOptions,
    private readonly sink: FrameSink,
    private readonly spill: SpillStore,
    private readonly logger: PipelineLogger,
    /** Sees every synchronous step the flusher takes on the event loop (the log benchmark's probe). */
    private readonly stepHook: ((ms: number, what: string) => void) | null = null,
    /** The crash journal (journal.ts): null keeps records in memory only until they are in Redis. */
    private readonly journal: Journal | null = null,
  ) {
    this.maxMemory = opts.maxMemoryBytes;
    // A flush threshold above the memory bound would never flush early enough to respect it.
    this.threshold = Math.max(1024, Math.min(opts.flushBytes, Math.floor(opts.maxMemoryBytes / 4)));
    this.frameMax = Math.min(this.threshold, FRAME_MAX_BYTES);
    // Chunks of up to 1 MiB: a small batch is one buffer (one compression job), a large one is
    // streamed to the compressor chunk by chunk.
    const chunk = Math.min(1 << 20, this.threshold);
    this.buffer = new LogBuffer(chunk, Math.max(4, Math.ceil((2 * this.threshold) / chunk)));
  }

  /**
   * Appends one encoded line (`head + tail + "}\n"`, see LogBuffer.append). O(1) in the queue length,
   * no I/O: the line reaches the crash journal at the next `commitJournal`.
   */
  append(head: string, tail: string | Uint8Array | null, lineBreaks = false): void {
    if (this.state === 'closed') {
      this.drop(1, 'logged after the final flush');
      return;
    }
    if (this.buffer.bytes >= this.maxMemory) {
      // Only when compression cannot keep up at all: the raw queue alone fills the bound.
      this.drop(1, 'queue over its memory bound');
      return;
    }
    this.buffer.append(head, tail, lineBreaks);
    this.recordsLogged++;
    if (this.buffer.bytes >= this.threshold && this.compressRun === null && !this.kickQueued) {
      // Never compress inside the caller (a request): start on the next loop turn.
      this.kickQueued = true;
      setImmediate(this.kickFromImmediate);
    }
  }

  /** Whether lines were appended that the crash journal does not hold yet (an answer must wait for `commitJournal`). */
  journalPending(): boolean {
    return this.journal !== null && this.buffer.hasUnjournaled();
  }

  /**
   * Writes what was appended since the last call to the crash journal: one write(2) to the page
   * cache, usually for every answer of an event-loop turn (src/http/server.ts holds the answers
   * until then).
   */
  commitJournal(): void {
    if (this.journal !== null) this.buffer.unjournaled(this.journalWrite);
  }

  /** Starts the interval and the drain of what earlier processes spilled. */
  start(): void {
    if (this.state !== 'new') return;
    this.state = 'running';
    this.journal?.open();
    this.spillReady = this.spill.init().then((ok) => {
      if (!ok) this.logger.warn(`spill directory ${this.spill.dir} is not usable: batches that cannot reach Redis will be dropped once memory is full`);
      return ok;
    });
    this.recover();
    this.interval = setInterval(this.onTick, this.opts.flushIntervalMs);
    this.interval.unref();
    this.kickDeliver();
  }

  /**
   * Turns the journals of dead workers of this host into spill files, which the drain pushes
   * (single-flight; at start and every 30 s).
   */
  private recover(): void {
    if (this.journal === null || this.recoverRun !== null || this.state !== 'running') return;
    this.lastRecoverAt = Date.now();
    const journal = this.journal;
    this.recoverRun = (async () => {
      if (!(await this.spillReady)) return;
      const r = await recoverJournals(journal.dir, this.spill, this.logger, this.opts.zstdLevel);
      if (r.segments > 0 || r.frames > 0) {
        this.logger.log(`recovered ${r.records} records from ${r.segments} journal segments of stopped workers (${r.frames} frames to the spill directory)`);
        this.kickDeliver();
      }
    })()
      .catch((e: unknown) => this.logger.warn(`journal recovery failed: ${errorText(e)}`))
      .finally(() => {
        this.recoverRun = null;
      });
  }

  /** Redis is (back) up: retry at once. */
  redisReady(): void {
    if (this.state === 'closed') return;
    this.retryAt = 0;
    this.backoffMs = 0;
    if (this.retryTimer) {
      clearTimeout(this.retryTimer);
      this.retryTimer = null;
    }
    this.kickDeliver();
  }

  /** In memory: queued + being compressed + compressed but unsent. */
  memoryBytes(): number {
    return this.buffer.bytes + this.compressingBytes + this.pendingBytes;
  }

  /** Within the memory bound and no record dropped in the last 10 s. */
  healthy(): boolean {
    return this.memoryBytes() <= this.maxMemory && performance.now() - this.lastDropAt > DROP_UNHEALTHY_MS;
  }

  stats(): LogStats {
    return {
      recordsLogged: this.recordsLogged,
      recordsQueued: this.buffer.records,
      bytesQueued: this.buffer.bytes,
      batchesPending: this.pending.length,
      recordsPending: this.pendingRecords,
      bytesPending: this.pendingBytes,
      memoryBytes: this.memoryBytes(),
      memoryLimitBytes: this.maxMemory,
      batchesFlushed: this.batchesFlushed,
      recordsFlushed: this.recordsFlushed,
      bytesFlushedRaw: this.bytesFlushedRaw,
      bytesFlushedCompressed: this.bytesFlushedCompressed,
      lastFlushMs: this.lastFlushMs,
      flushMsTotal: this.flushMsTotal,
      compressionRatio: this.compressedOut > 0 ? this.compressedRaw / this.compressedOut : 0,
      flushErrors: this.flushErrors,
      batchesSpilled: this.batchesSpilled,
      recordsSpilled: this.recordsSpilled,
      spillBytes: this.spill.knownBytes,
      spillFiles: this.spill.count,
      batchesDrained: this.batchesDrained,
      recordsDrained: this.recordsDrained,
      recordsDropped: this.recordsDropped,
      batchesQuarantined: this.batchesQuarantined,
      recordsQuarantined: this.recordsQuarantined,
      redisUp: this.sink.ready() ? 1 : 0,
      longestStepMs: this.longestStepMs,
    };
  }

  /**
   * The final flush, within `timeoutMs` whatever Redis and the disk do: compress everything, push
   * until the deadline minus a reserve, write to the spill directory what Redis did not take, and
   * when the deadline comes count what is still only in memory as dropped (with a warning). Resolves
   * by the deadline.
   */
  close(timeoutMs: number): Promise<void> {
    this.closeRun ??= this.runClose(timeoutMs);
    return this.closeRun;
  }

  private async runClose(timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const left = (): number => deadline - Date.now();
    this.state = 'closing';
    if (this.interval) clearInterval(this.interval);
    this.maxBackoffMs = CLOSING_MAX_RETRY_MS;
    this.redisReady();
    this.kickCompress();
    // Keep a reserve for writing to disk what Redis did not take.
    const deliverBy = deadline - Math.min(2_000, Math.floor(timeoutMs / 4));
    while (Date.now() < deliverBy) {
      if (this.buffer.records === 0 && this.compressRun === null && this.pending.length === 0) break;
      this.kickCompress();
      this.kickDeliver();
      await sleep(5);
    }
    while ((this.compressRun !== null || this.buffer.records > 0) && left() > 0) {
      this.kickCompress();
      await within(this.compressRun ?? sleep(1), left());
    }
    if (this.spillRun !== null) await within(this.spillRun, left());
    const unsent = this.pending.filter((f) => !f.spilling);
    if (unsent.length > 0 && left() > 0) {
      const records = unsent.reduce((n, f) => n + f.records, 0);
      this.logger.warn(`final flush: Redis did not take ${records} records in time; writing them to ${this.spill.dir}`);
      for (const f of unsent) {
        if (left() <= 0) break;
        await within(this.spillFrame(f), left());
      }
    }
    if (this.recoverRun !== null) await within(this.recoverRun, left());
    this.state = 'closed';
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    // A segment whose frames did not all get to Redis or disk stays: the next worker recovers it.
    this.journal?.close();
    const stranded = this.pendingRecords + this.buffer.records + [...this.compressing.keys()].reduce((n, b) => n + b.records, 0);
    if (stranded > 0) {
      this.drop(stranded, `the final flush ran out of its ${timeoutMs} ms (SHUTDOWN_TIMEOUT_MS) with Redis and the spill directory unable to take them`);
      this.pending = [];
      this.pendingBytes = 0;
      this.pendingRecords = 0;
    }
    this.warnDropped();
  }

  /**
   * The fatal-error path: writes everything still only in memory (pending frames, batches being
   * compressed, the queue) to the spill directory synchronously, since no callback will run again.
   * Frames whose push may have reached Redis are written too: their drain is a no-op (the push is
   * idempotent per frame id). Returns the records written and those that could not be.
   */
  emergencySpill(): { written: number; lost: number } {
    let written = 0;
    let lost = 0;
    const keep = (ok: boolean, records: number): void => {
      if (ok) written += records;
      else lost += records;
    };
    for (const f of this.pending) {
      const ok = this.spill.writeSync(f.data, f.id, f.records, f.createdAt);
      keep(ok, f.records);
      if (ok) this.journal?.done(f.seg, true);
    }
    // The spill files take the frame ids the journal gives: a journal that outlives this (say the
    // process is killed before it deletes them) recovers into no-op pushes.
    const raw = [...this.compressing].map(([b, named]) => ({ b, ...named }));
    for (const q of this.takeQueue()) raw.push(q);
    for (const { b, id, seg } of raw) {
      let frame: Buffer;
      try {
        frame = compressFrameSync(b.chunks, b.bytes, this.opts.zstdLevel);
      } catch {
        keep(false, b.records);
        continue;
      }
      const ok = this.spill.writeSync(frame, id, b.records, Date.now());
      keep(ok, b.records);
      if (ok) this.journal?.done(seg, true);
    }
    this.journal?.close();
    this.pending = [];
    this.compressing.clear();
    this.state = 'closed';
    if (lost > 0) this.recordsDropped += lost;
    this.recordsSpilled += written;
    return { written, lost };
  }

  private kickCompress(): void {
    if (this.compressRun !== null) {
      this.compressAgain = true;
      return;
    }
    this.compressAgain = false;
    this.compressRun = this.compressLoop()
      .catch((e: unknown) => this.logger.warn(`compress loop failed: ${errorText(e)}`))
      .finally(() => {
        this.compressRun = null;
        if (this.compressAgain) this.kickCompress();
      });
  }

  private kickDeliver(): void {
    if (this.state === 'new' || this.state === 'closed') return;
    if (this.deliverRun !== null) {
      this.deliverAgain = true;
      return;
    }
    this.deliverAgain = false;
    this.deliverRun = this.deliverLoop()
      .catch((e: unknown) => this.logger.warn(`deliver loop failed: ${errorText(e)}`))
      .finally(() => {
        this.deliverRun = null;
        if (this.deliverAgain) this.kickDeliver();
      });
  }

  private async compressLoop(): Promise<void> {
    for (;;) {
      this.compressAgain = false;
      const b = this.buffer;
      if (b.records > 0 && (this.due || b.bytes >= this.threshold || this.state === 'closing')) {
        this.due = false;
        const takenAt = Date.now();
        const t0 = performance.now();
        const named = this.takeQueue();
        const batches = named.map((n) => n.b);
        this.onStep(performance.now() - t0, 'take queue');
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
  private takeQueue(): Array<{ b: Batch; id: string; seg: Segment | null }> {
    if (this.journal !== null) this.buffer.unjournaled(this.journalWrite);
    const batches = this.buffer.take(this.frameMax);
    if (batches.length === 0) return [];
    const seg = this.journal?.seal(batches) ?? null;
    return batches.map((b, i) => ({ b, id: seg !== null ? seg.frameIds[i] : newFrameId(), seg }));
  }

  /** The journal holds more than its bound (frames waiting for Redis keep their segments). */
  private journalOver(): boolean {
    return this.journal !== null && this.journal.diskBytes > this.journal.maxBytes;
  }

  /** Over the memory bound: move the oldest pending frames to disk (its own loop: disk never delays compression). */
  private kickSpill(): void {
    if (this.spillRun !== null) {
      this.spillAgain = true;
      return;
    }
    if (this.memoryBytes() <= this.maxMemory && !this.journalOver()) return;
    this.spillAgain = false;
    this.spillRun = this.spillLoop()
      .catch((e: unknown) => this.logger.warn(`spill loop failed: ${errorText(e)}`))
      .finally(() => {
        this.spillRun = null;
        if (this.spillAgain) this.kickSpill();
      });
  }

  private async spillLoop(): Promise<void> {
    while (this.memoryBytes() > this.maxMemory || this.journalOver()) {
      this.spillAgain = false;
      // The oldest frames that bring memory back under the bound, a few files at a time.
      const group: Frame[] = [];
      // Over the journal's bound: the oldest frames (each spilled frame frees its part of the journal).
      let excess = this.journalOver() ? Infinity : this.memoryBytes() - this.maxMemory;
      for (const f of this.pending) {
        if (group.length === SPILL_PARALLEL || excess <= 0) break;
        if (!spillable(f)) continue;
        group.push(f);
        excess -= f.data.length;
      }
      if (group.length === 0) return;
      await Promise.all(group.map((f) => this.spillFrame(f)));
    }
  }

  private async compressBatch(batch: Batch, takenAt: number): Promise<Frame | null> {
    const t0 = performance.now();
    const named = this.compressing.get(batch);
    let data: Buffer;
    try {
      data = await compressFrame(batch.chunks, batch.bytes, this.onStep, this.opts.zstdLevel);
    } catch (e) {
      this.compressingBytes -= batch.bytes;
      this.compressing.delete(batch);
      this.drop(batch.records, `compression failed: ${errorText(e)}`);
      this.journal?.done(named?.seg ?? null);
      return null;
    }
    // Closed meanwhile (the final flush counted it, or a fatal error spilled it): not ours any more.
    if (named === undefined || !this.compressing.delete(batch)) return null;
    this.buffer.release(batch.chunks);
    const compressMs = performance.now() - t0;
    this.compressingBytes -= batch.bytes;
    this.compressedRaw += batch.bytes;
    this.compressedOut += data.length;
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
    this.pending.push(frame);
    this.pendingBytes += frame.data.length;
    this.pendingRecords += frame.records;
    this.kickDeliver();
    this.kickSpill();
  }

  /** Moves one pending frame to disk (or drops it when the disk is full). */
  private async spillFrame(f: Frame): Promise<void> {
    f.spilling = true;
    const ok = await this.spill.write(f.data, f.id, f.records, f.createdAt);
    this.removePending(f);
    this.journal?.done(f.seg);
    if (ok) {
      this.batchesSpilled++;
      this.recordsSpilled += f.records;
    } else {
      this.drop(f.records, `spill directory ${this.spill.dir} full (LOG_SPILL_MAX_BYTES) or not writable`);
    }
  }

  private async deliverLoop(): Promise<void> {
    if (this.spillReady) await this.spillReady;
    for (;;) {
      this.deliverAgain = false;
      if (this.state === 'closed') return;
      if (Date.now() < this.retryAt) {
        this.scheduleRetry();
        return;
      }
      // Oldest first: what earlier went to disk, then memory. While closing, only memory
      // (spill files are safe where they are; the next start drains them).
      if (this.state !== 'closing') {
        if (this.spill.count === 0) await this.spill.refresh();
        const e = this.spill.next();
        if (e) {
          await this.drainOne(e);
          continue;
        }
      }
      const f = this.pending.find(spillable);
      if (!f) return;
      await this.pushFrame(f);
    }
  }

  private async pushFrame(f: Frame): Promise<void> {
    if (!this.sink.ready()) {
      this.fail('Redis is not connected');
      return;
    }
    f.inFlight = true;
    const t0 = performance.now();
    try {
      const pushed = this.sink.push(f.id, f.data);
      this.onStep(performance.now() - t0, 'send push'); // builds and writes the command (a copy of the frame)
      await pushed;
    } catch (e) {
      f.inFlight = false;
      this.fail(errorText(e));
      return;
    }
    f.inFlight = false;
    const ms = f.compressMs + (performance.now() - t0);
    this.lastFlushMs = ms;
    this.flushMsTotal += ms;
    this.flushed(f.records, f.rawBytes, f.data.length);
    // Still pending unless the final flush spilled it meanwhile (its drain is then a no-op).
    if (this.pending.includes(f)) this.journal?.done(f.seg);
    this.removePending(f);
    this.succeed();
  }

  private async drainOne(e: SpillEntry): Promise<void> {
    if (!this.sink.ready()) {
      this.fail('Redis is not connected');
      return;
    }
    const data = await this.spill.claim(e);
    if (data === null) return; // taken by another worker
    // A file is trusted only once its frame decompresses whole, its checksum holds, and it has the
    // records its name says (a truncated or corrupted file would put a bad frame in the list).
    const records = await verifyFrame(data, VERIFY_MAX_BYTES);
    if (records !== e.records) {
      this.batchesQuarantined++;
      this.recordsQuarantined += e.records;
      this.logger.warn(
        `spill file ${e.path} failed verification (${records === null ? 'not a whole zstd frame, or its checksum does not match' : `${records} records, its name says ${e.records}`}); ` +
          `set aside as .bad, ${e.records} records not pushed`,
      );
      await this.spill.quarantine(e);
      return;
    }
    try {
      await this.sink.push(e.frameId, data);
    } catch (err) {
      this.fail(errorText(err));
      return;
    }
    await this.spill.remove(e);
    this.batchesDrained++;
    this.recordsDrained += e.records;
    this.flushed(e.records, 0, data.length);
    this.succeed();
  }

  private flushed(records: number, rawBytes: number, bytes: number): void {
    this.batchesFlushed++;
    this.recordsFlushed += records;
    this.bytesFlushedRaw += rawBytes;
    this.bytesFlushedCompressed += bytes;
  }

  private removePending(f: Frame): void {
    const i = this.pending.indexOf(f);
    if (i === -1) return;
    this.pending.splice(i, 1);
    this.pendingBytes -= f.data.length;
    this.pendingRecords -= f.records;
  }

  private fail(why: string): void {
    this.flushErrors++;
    this.backoffMs = this.backoffMs === 0 ? FIRST_RETRY_MS : Math.min(this.backoffMs * 2, this.maxBackoffMs);
    this.retryAt = Date.now() + this.backoffMs;
    const now = performance.now();
    if (!this.failing || now - this.lastFailWarnAt >= WARN_EVERY_MS) {
      this.lastFailWarnAt = now;
      this.logger.warn(
        `cannot push to Redis (${why}); keeping ${this.pendingRecords + this.buffer.records} records in memory ` +
          `(${this.memoryBytes()} of ${this.maxMemory} bytes), ${this.spill.count} batches on disk; retrying`,
      );
    }
    this.failing = true;
    // Pending frames may now pass the memory bound.
    this.kickSpill();
  }

  private succeed(): void {
    if (this.failing) {
      this.failing = false;
      this.logger.log('pushing to Redis again; draining what waited');
    }
    this.backoffMs = 0;
    this.retryAt = 0;
  }

  private scheduleRetry(): void {
    if (this.retryTimer !== null) return;
    this.retryTimer = setTimeout(this.onRetry, Math.max(1, this.retryAt - Date.now()));
    this.retryTimer.unref();
  }

  /** Counts dropped records; warns at once, then at most every 10 s (a later warning sums up). */
  private drop(records: number, why: string): void {
    this.recordsDropped += records;
    this.droppedSinceWarn += records;
    this.dropWhy = why;
    const now = performance.now();
    this.lastDropAt = now;
    if (now - this.lastDropWarnAt >= WARN_EVERY_MS) {
      this.warnDropped();
    } else if (this.dropWarnTimer === null) {
      this.dropWarnTimer = setTimeout(this.warnDropped, WARN_EVERY_MS - (now - this.lastDropWarnAt));
      this.dropWarnTimer.unref();
    }
  }

  private readonly warnDropped = (): void => {
    if (this.dropWarnTimer !== null) clearTimeout(this.dropWarnTimer);
    this.dropWarnTimer = null;
    if (this.droppedSinceWarn === 0) return;
    this.lastDropWarnAt = performance.now();
    this.logger.warn(`DROPPED ${this.droppedSinceWarn} bid log records (${this.dropWhy}); ${this.recordsDropped} dropped since start`);
    this.droppedSinceWarn = 0;
  };
}

function spillable(f: Frame): boolean {
  return !f.inFlight && !f.spilling;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Waits for `p` at most `ms` (never rejects). */
function within(p: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, Math.max(0, ms));
    p.then(
      () => {
        clearTimeout(t);
        resolve();
      },
      () => {
        clearTimeout(t);
        resolve();
      },
    );
  });
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
