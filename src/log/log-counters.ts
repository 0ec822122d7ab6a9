import { performance } from 'node:perf_hooks';
import type { LogStats } from './log.types';

const WARN_EVERY_MS = 10_000;

export interface PipelineLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** The figures of LogStats that are not counters: read from the queue, the frames and the spill store when asked. */
export type LiveFigures = Pick<
  LogStats,
  'recordsLogged' | 'recordsQueued' | 'bytesQueued' | 'batchesPending' | 'recordsPending' | 'bytesPending' | 'memoryBytes' | 'memoryLimitBytes' | 'spillBytes' | 'spillFiles' | 'redisUp'
>;

/**
 * The pipeline's counters (monotonic) and last values, see LogStats, and the accounting of dropped
 * records with its rate-limited warning. `recordsLogged` is counted by LogPipeline.append itself.
 */
export class LogCounters {
  batchesFlushed = 0;
  recordsFlushed = 0;
  bytesFlushedRaw = 0;
  bytesFlushedCompressed = 0;
  lastFlushMs = 0;
  flushMsTotal = 0;
  compressedRaw = 0;
  compressedOut = 0;
  flushErrors = 0;
  batchesSpilled = 0;
  recordsSpilled = 0;
  batchesDrained = 0;
  recordsDrained = 0;
  recordsDropped = 0;
  batchesQuarantined = 0;
  recordsQuarantined = 0;
  /** Longest synchronous step the flusher itself took on the event loop (ms). */
  longestStepMs = 0;
  /** When a record was last dropped (performance.now()). */
  lastDropAt = -Infinity;

  private lastDropWarnAt = -Infinity;
  private droppedSinceWarn = 0;
  private dropWhy = '';
  private dropWarnTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly logger: PipelineLogger,
    /** Sees every synchronous step the flusher takes on the event loop (the log benchmark's probe). */
    private readonly stepHook: ((ms: number, what: string) => void) | null,
  ) {}

  readonly onStep = (ms: number, what: string): void => {
    if (ms > this.longestStepMs) this.longestStepMs = ms;
    this.stepHook?.(ms, what);
  };

  /** A frame reached Redis (from memory, or from the spill directory with `rawBytes` 0). */
  flushed(records: number, rawBytes: number, bytes: number): void {
    this.batchesFlushed++;
    this.recordsFlushed += records;
    this.bytesFlushedRaw += rawBytes;
    this.bytesFlushedCompressed += bytes;
  }

  /** Counts dropped records; warns at once, then at most every 10 s (a later warning sums up). */
  drop(records: number, why: string): void {
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

  readonly warnDropped = (): void => {
    if (this.dropWarnTimer !== null) clearTimeout(this.dropWarnTimer);
    this.dropWarnTimer = null;
    if (this.droppedSinceWarn === 0) return;
    this.lastDropWarnAt = performance.now();
    this.logger.warn(`DROPPED ${this.droppedSinceWarn} bid log records (${this.dropWhy}); ${this.recordsDropped} dropped since start`);
    this.droppedSinceWarn = 0;
  };

  stats(live: LiveFigures): LogStats {
    return {
      recordsLogged: live.recordsLogged,
      recordsQueued: live.recordsQueued,
      bytesQueued: live.bytesQueued,
      batchesPending: live.batchesPending,
      recordsPending: live.recordsPending,
      bytesPending: live.bytesPending,
      memoryBytes: live.memoryBytes,
      memoryLimitBytes: live.memoryLimitBytes,
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
      spillBytes: live.spillBytes,
      spillFiles: live.spillFiles,
      batchesDrained: this.batchesDrained,
      recordsDrained: this.recordsDrained,
      recordsDropped: this.recordsDropped,
      batchesQuarantined: this.batchesQuarantined,
      recordsQuarantined: this.recordsQuarantined,
      redisUp: live.redisUp,
      longestStepMs: this.longestStepMs,
    };
  }
}
