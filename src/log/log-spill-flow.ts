import { compressFrameSync, verifyFrame } from './frame';
import type { Batch } from './log-buffer';
import type { LogCounters, PipelineLogger } from './log-counters';
import { errorText, type Frame, type PendingFrames, spillable } from './log-frames';
import { type Journal, recoverJournals, type Segment } from './journal';
import type { SpillEntry, SpillStore } from './spill';

// Leaves thread-pool threads (4 by default) for compression while files are written.
const SPILL_PARALLEL = 2;
/** Largest decompressed frame a drain verifies (a frame holds at most 4 MiB of NDJSON, FRAME_MAX_BYTES). */
const VERIFY_MAX_BYTES = 64 << 20;
/** How often a worker looks for journals of dead workers to recover (besides at start). */
const RECOVER_EVERY_MS = 30_000;

/** A batch taken from the queue and not compressed yet, with its frame id and journal segment. */
export interface RawBatch {
  readonly b: Batch;
  readonly id: string;
  readonly seg: Segment | null;
}

/**
 * The pipeline's disk side: frames to the spill directory while memory (or the journal) is over its
 * bound, spill files checked before the drain pushes them, the journals of dead workers turned into
 * spill files, and the synchronous write of everything on the fatal-error path.
 */
export class LogSpillFlow {
  /** Resolves once the spill directory was checked (false: not usable); null before `start`. */
  ready: Promise<boolean> | null = null;
  spillRun: Promise<void> | null = null;
  recoverRun: Promise<void> | null = null;
  private spillAgain = false;
  private lastRecoverAt = 0;

  constructor(
    private readonly spill: SpillStore,
    private readonly journal: Journal | null,
    private readonly frames: PendingFrames,
    private readonly counters: LogCounters,
    private readonly logger: PipelineLogger,
    private readonly maxMemory: number,
    private readonly zstdLevel: number | undefined,
    private readonly memoryBytes: () => number,
    private readonly running: () => boolean,
    /** Spill files appeared (recovered journals): the drain should look. */
    private readonly onRecovered: () => void,
  ) {}

  start(): void {
    this.ready = this.spill.init().then((ok) => {
      if (!ok) this.logger.warn(`spill directory ${this.spill.dir} is not usable: batches that cannot reach Redis will be dropped once memory is full`);
      return ok;
    });
  }

  recoverIfDue(): void {
    if (Date.now() - this.lastRecoverAt >= RECOVER_EVERY_MS) this.recover();
  }

  /**
   * Turns the journals of dead workers of this host into spill files, which the drain pushes
   * (single-flight; at start and every 30 s).
   */
  recover(): void {
    if (this.journal === null || this.recoverRun !== null || !this.running()) return;
    this.lastRecoverAt = Date.now();
    const journal = this.journal;
    this.recoverRun = (async () => {
      if (!(await this.ready)) return;
      const r = await recoverJournals(journal.dir, this.spill, this.logger, this.zstdLevel);
      if (r.segments > 0 || r.frames > 0) {
        this.logger.log(`recovered ${r.records} records from ${r.segments} journal segments of stopped workers (${r.frames} frames to the spill directory)`);
        this.onRecovered();
      }
    })()
      .catch((e: unknown) => this.logger.warn(`journal recovery failed: ${errorText(e)}`))
      .finally(() => {
        this.recoverRun = null;
      });
  }

  /** The journal holds more than its bound (frames waiting for Redis keep their segments). */
  private journalOver(): boolean {
    return this.journal !== null && this.journal.diskBytes > this.journal.maxBytes;
  }

  /** Over the memory bound: move the oldest pending frames to disk (its own loop: disk never delays compression). */
  kick(): void {
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
        if (this.spillAgain) this.kick();
      });
  }

  private async spillLoop(): Promise<void> {
    while (this.memoryBytes() > this.maxMemory || this.journalOver()) {
      this.spillAgain = false;
      // The oldest frames that bring memory back under the bound, a few files at a time.
      const group: Frame[] = [];
      // Over the journal's bound: the oldest frames (each spilled frame frees its part of the journal).
      let excess = this.journalOver() ? Infinity : this.memoryBytes() - this.maxMemory;
      for (const f of this.frames.list) {
        if (group.length === SPILL_PARALLEL || excess <= 0) break;
        if (!spillable(f)) continue;
        group.push(f);
        excess -= f.data.length;
      }
      if (group.length === 0) return;
      await Promise.all(group.map((f) => this.spillFrame(f)));
    }
  }

  /** Moves one pending frame to disk (or drops it when the disk is full). */
  async spillFrame(f: Frame): Promise<void> {
    f.spilling = true;
    const ok = await this.spill.write(f.data, f.id, f.records, f.createdAt);
    this.frames.remove(f);
    this.journal?.done(f.seg);
    if (ok) {
      this.counters.batchesSpilled++;
      this.counters.recordsSpilled += f.records;
    } else {
      this.counters.drop(f.records, `spill directory ${this.spill.dir} full (LOG_SPILL_MAX_BYTES) or not writable`);
    }
  }

  /**
   * Claims a spill file for the drain and returns its frame, or null when another worker took it or
   * it failed verification (then set aside as .bad and counted).
   */
  async claim(e: SpillEntry): Promise<Buffer | null> {
    const data = await this.spill.claim(e);
    if (data === null) return null; // taken by another worker
    // A file is trusted only once its frame decompresses whole, its checksum holds, and it has the
    // records its name says (a truncated or corrupted file would put a bad frame in the list).
    const records = await verifyFrame(data, VERIFY_MAX_BYTES);
    if (records !== e.records) {
      this.counters.batchesQuarantined++;
      this.counters.recordsQuarantined += e.records;
      this.logger.warn(
        `spill file ${e.path} failed verification (${records === null ? 'not a whole zstd frame, or its checksum does not match' : `${records} records, its name says ${e.records}`}); ` +
          `set aside as .bad, ${e.records} records not pushed`,
      );
      await this.spill.quarantine(e);
      return null;
    }
    return data;
  }

  /** A claimed spill file's frame is in Redis: remove the file. */
  async drained(e: SpillEntry, bytes: number): Promise<void> {
    await this.spill.remove(e);
    this.counters.batchesDrained++;
    this.counters.recordsDrained += e.records;
    this.counters.flushed(e.records, 0, bytes);
  }

  /**
   * Writes the given frames and raw batches to the spill directory synchronously (the fatal-error
   * path), the frames first, then the batches `takeRaw` gives once they are written. Returns the
   * records written and those that could not be.
   */
  writeAllSync(frames: readonly Frame[], takeRaw: () => readonly RawBatch[]): { written: number; lost: number } {
    let written = 0;
    let lost = 0;
    const keep = (ok: boolean, records: number): void => {
      if (ok) written += records;
      else lost += records;
    };
    for (const f of frames) {
      const ok = this.spill.writeSync(f.data, f.id, f.records, f.createdAt);
      keep(ok, f.records);
      if (ok) this.journal?.done(f.seg, true);
    }
    for (const { b, id, seg } of takeRaw()) {
      let frame: Buffer;
      try {
        frame = compressFrameSync(b.chunks, b.bytes, this.zstdLevel);
      } catch {
        keep(false, b.records);
        continue;
      }
      const ok = this.spill.writeSync(frame, id, b.records, Date.now());
      keep(ok, b.records);
      if (ok) this.journal?.done(seg, true);
    }
    return { written, lost };
  }
}
