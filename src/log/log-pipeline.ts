import { performance } from 'node:perf_hooks';
import type { LogRecord } from '../bidlog/records';
import { LogBuffer } from './log-buffer';
import type { FieldBytes } from './log-line';
import { LogCounters, type PipelineLogger } from './log-counters';
import { LogDelivery, type PipelineState } from './log-delivery';
import { PendingFrames } from './log-frames';
import { LogSpillFlow } from './log-spill-flow';
import type { Journal } from './journal';
import type { FrameSink } from './log-sink';
import type { LogStats } from './log.types';
import type { SpillStore } from './spill';

export type { PipelineLogger } from './log-counters';

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

/**
 * Largest batch (NDJSON bytes) in one frame: ~0.45 MB compressed at ~9×. Sending a push copies the
 * frame on the event loop (ioredis builds the command in one buffer, then the socket write copies
 * it into the kernel): ~1.2 ms median for 1 MiB here, 0.6 ms for 512 KiB (bench/RESULTS-log.md).
 */
const FRAME_MAX_BYTES = 4 << 20;
/** After a drop the pipeline reports itself unhealthy for this long. */
const DROP_UNHEALTHY_MS = 10_000;

/**
 * The bid log pipeline of one worker: queue → zstd frames → Redis, with disk as the overflow.
 *
 * This class keeps the request path (`append`, `journalPending`, `commitJournal`: no call into the
 * parts below), the lifecycle (start, the final flush, the fatal-error spill) and the public API;
 * the work is done by its parts, one job each:
 * - LogDelivery (log-delivery.ts): compress the queue into frames (thread pool), push them to
 *   Redis, the oldest spill file first, retrying with backoff;
 * - LogSpillFlow (log-spill-flow.ts): frames to the spill directory while memory is over its bound
 *   (drop and count only when the directory is full or unwritable), spill files checked before
 *   their drain, journals of dead workers recovered into spill files;
 * - LogCounters (log-counters.ts): the counters, the dropped records and their warning, `stats()`;
 * - PendingFrames (log-frames.ts): the compressed frames still only in memory.
 * Neither a slow Redis nor a slow disk holds records as raw text (each loop is single-flight).
 * A push is idempotent per frame id (log-sink.ts), so a retry after an ambiguous failure, or a
 * spill file drained after a crash that followed its push, never duplicates records.
 */
export class LogPipeline {
  private readonly buffer: LogBuffer;
  private readonly threshold: number;
  private readonly maxMemory: number;
  private readonly frames = new PendingFrames();
  private readonly counters: LogCounters;
  private readonly delivery: LogDelivery;
  private readonly spillFlow: LogSpillFlow;
  private state: PipelineState = 'new';
  private kickQueued = false;
  /** Counted here rather than in LogCounters: append reaches into no other object. */
  private recordsLogged = 0;
  private interval: NodeJS.Timeout | null = null;
  private closeRun: Promise<void> | null = null;

  private readonly kickFromImmediate = (): void => {
    this.kickQueued = false;
    this.delivery.kickCompress();
  };
  private readonly journalWrite = (data: Buffer, offset: number, length: number): void => this.journal?.write(data, offset, length);
  private readonly onTick = (): void => {
    this.spillFlow.recoverIfDue();
    this.delivery.tick();
  };

  constructor(
    private readonly opts: PipelineOptions,
    private readonly sink: FrameSink,
    private readonly spill: SpillStore,
    private readonly logger: PipelineLogger,
    /** Sees every synchronous step the flusher takes on the event loop (the log benchmark's probe). */
    stepHook: ((ms: number, what: string) => void) | null = null,
    /** The crash journal (journal.ts): null keeps records in memory only until they are in Redis. */
    private readonly journal: Journal | null = null,
  ) {
    this.maxMemory = opts.maxMemoryBytes;
    // A flush threshold above the memory bound would never flush early enough to respect it.
    this.threshold = Math.max(1024, Math.min(opts.flushBytes, Math.floor(opts.maxMemoryBytes / 4)));
    // Chunks of up to 1 MiB: a small batch is one buffer (one compression job), a large one is
    // streamed to the compressor chunk by chunk.
    const chunk = Math.min(1 << 20, this.threshold);
    this.buffer = new LogBuffer(chunk, Math.max(4, Math.ceil((2 * this.threshold) / chunk)));
    this.counters = new LogCounters(logger, stepHook);
    const memoryBytes = (): number => this.memoryBytes();
    this.spillFlow = new LogSpillFlow(
      spill,
      journal,
      this.frames,
      this.counters,
      logger,
      this.maxMemory,
      opts.zstdLevel,
      memoryBytes,
      () => this.state === 'running',
      () => this.delivery.kickDeliver(),
    );
    this.delivery = new LogDelivery({
      buffer: this.buffer,
      journal,
      sink,
      spill,
      spillFlow: this.spillFlow,
      frames: this.frames,
      counters: this.counters,
      logger,
      threshold: this.threshold,
      frameMax: Math.min(this.threshold, FRAME_MAX_BYTES),
      maxMemory: this.maxMemory,
      zstdLevel: opts.zstdLevel,
      state: () => this.state,
      memoryBytes,
    });
  }

  /**
   * Appends one encoded line (`head + tail + "}\n"`, see LogBuffer.append). O(1) in the queue length,
   * no I/O: the line reaches the crash journal at the next `commitJournal`.
   */
  append(head: string, tail: string | Uint8Array | null, lineBreaks = false, after = ''): void {
    if (!this.admit()) return;
    this.buffer.append(head, tail, lineBreaks, after);
    this.appended();
  }

  /** Whether a line may be appended now; counts the drop when not. */
  private admit(): boolean {
    if (this.state === 'closed') {
      this.counters.drop(1, 'logged after the final flush');
      return false;
    }
    if (this.buffer.bytes >= this.maxMemory) {
      // Only when compression cannot keep up at all: the raw queue alone fills the bound.
      this.counters.drop(1, 'queue over its memory bound');
      return false;
    }
    return true;
  }

  private appended(): void {
    this.recordsLogged++;
    if (this.buffer.bytes >= this.threshold && this.delivery.compressRun === null && !this.kickQueued) {
      // Never compress inside the caller (a request): start on the next loop turn.
      this.kickQueued = true;
      setImmediate(this.kickFromImmediate);
    }
  }

  /** As `append`, the head written in place (LogBuffer.appendRecord, log-line.ts's headBytes). */
  appendRecord(
    headMax: number,
    ts: number,
    worker: Uint8Array,
    host: Uint8Array,
    record: LogRecord,
    rawKey: string | null,
    tail: string | Uint8Array | null,
    lineBreaks: boolean,
    after: string | FieldBytes,
  ): void {
    if (!this.admit()) return;
    this.buffer.appendRecord(headMax, ts, worker, host, record, rawKey, tail, lineBreaks, after);
    this.appended();
  }

  /** Whether lines were appended that the crash journal does not hold yet (an answer must wait for `commitJournal`). */
  journalPending(): boolean {
    return this.journal !== null && this.buffer.hasUnjournaled();
  }

  /**
   * Writes what was appended since the last call to the crash journal: one write(2) to the page
   * cache, usually for every answer of an event-loop turn (src/http/outbox.ts holds the answers
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
    this.spillFlow.start();
    this.spillFlow.recover();
    this.interval = setInterval(this.onTick, this.opts.flushIntervalMs);
    this.interval.unref();
    this.delivery.kickDeliver();
  }

  /** Redis is (back) up: retry at once. */
  redisReady(): void {
    if (this.state === 'closed') return;
    this.delivery.redisReady();
  }

  /** In memory: queued + being compressed + compressed but unsent. */
  memoryBytes(): number {
    return this.buffer.bytes + this.delivery.compressingBytes + this.frames.bytes;
  }

  /** Within the memory bound and no record dropped in the last 10 s. */
  healthy(): boolean {
    return this.memoryBytes() <= this.maxMemory && performance.now() - this.counters.lastDropAt > DROP_UNHEALTHY_MS;
  }

  stats(): LogStats {
    return this.counters.stats({
      recordsLogged: this.recordsLogged,
      recordsQueued: this.buffer.records,
      bytesQueued: this.buffer.bytes,
      batchesPending: this.frames.list.length,
      recordsPending: this.frames.records,
      bytesPending: this.frames.bytes,
      memoryBytes: this.memoryBytes(),
      memoryLimitBytes: this.maxMemory,
      spillBytes: this.spill.knownBytes,
      spillFiles: this.spill.count,
      redisUp: this.sink.ready() ? 1 : 0,
    });
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
    const { delivery, spillFlow, frames } = this;
    this.state = 'closing';
    if (this.interval) clearInterval(this.interval);
    delivery.closing();
    this.redisReady();
    delivery.kickCompress();
    // Keep a reserve for writing to disk what Redis did not take.
    const deliverBy = deadline - Math.min(2_000, Math.floor(timeoutMs / 4));
    while (Date.now() < deliverBy) {
      if (this.buffer.records === 0 && delivery.compressRun === null && frames.list.length === 0) break;
      delivery.kickCompress();
      delivery.kickDeliver();
      await sleep(5);
    }
    while ((delivery.compressRun !== null || this.buffer.records > 0) && left() > 0) {
      delivery.kickCompress();
      await within(delivery.compressRun ?? sleep(1), left());
    }
    if (spillFlow.spillRun !== null) await within(spillFlow.spillRun, left());
    const unsent = frames.list.filter((f) => !f.spilling);
    if (unsent.length > 0 && left() > 0) {
      const records = unsent.reduce((n, f) => n + f.records, 0);
      this.logger.warn(`final flush: Redis did not take ${records} records in time; writing them to ${this.spill.dir}`);
      for (const f of unsent) {
        if (left() <= 0) break;
        await within(spillFlow.spillFrame(f), left());
      }
    }
    if (spillFlow.recoverRun !== null) await within(spillFlow.recoverRun, left());
    this.state = 'closed';
    delivery.stop();
    // A segment whose frames did not all get to Redis or disk stays: the next worker recovers it.
    this.journal?.close();
    const stranded = frames.records + this.buffer.records + delivery.compressingRecords();
    if (stranded > 0) {
      this.counters.drop(stranded, `the final flush ran out of its ${timeoutMs} ms (SHUTDOWN_TIMEOUT_MS) with Redis and the spill directory unable to take them`);
      frames.clear();
    }
    this.counters.warnDropped();
  }

  /**
   * The fatal-error path: writes everything still only in memory (pending frames, batches being
   * compressed, the queue) to the spill directory synchronously, since no callback will run again.
   * Frames whose push may have reached Redis are written too: their drain is a no-op (the push is
   * idempotent per frame id). Returns the records written and those that could not be.
   */
  emergencySpill(): { written: number; lost: number } {
    // The spill files take the frame ids the journal gives: a journal that outlives this (say the
    // process is killed before it deletes them) recovers into no-op pushes.
    const { written, lost } = this.spillFlow.writeAllSync(this.frames.list, () => this.delivery.takeAllRaw());
    this.journal?.close();
    this.frames.list = [];
    this.state = 'closed';
    if (lost > 0) this.counters.recordsDropped += lost;
    this.counters.recordsSpilled += written;
    return { written, lost };
  }
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
