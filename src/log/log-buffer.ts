import type { LogRecord } from '../bidlog/records';
import { type FieldBytes, headBytes } from './log-line';

/** A part of the queue: UTF-8 NDJSON lines, each ending in `\n`. */
export interface LineChunk {
  readonly data: Buffer;
  readonly records: number;
}

/** What one flush takes: whole lines, at most about `maxBytes` of them. */
export interface Batch {
  readonly chunks: LineChunk[];
  readonly records: number;
  readonly bytes: number;
}

const EMPTY = Buffer.alloc(0);

/**
 * The in-memory queue of NDJSON lines, written straight into UTF-8 chunks as they are logged.
 * Appending costs one or two native string writes (no per-record allocation that survives the
 * call), the queued bytes sit outside the JS heap (so a 100 MB queue adds no GC work), and a flush
 * hands the chunks to the compressor as they are: no join, no copy on the event loop.
 */
export class LogBuffer {
  private chunk: Buffer = EMPTY;
  private pos = 0;
  private chunkRecords = 0;
  private sealed: LineChunk[] = [];
  /** Records and bytes queued (gauges). */
  records = 0;
  bytes = 0;
  /** Chunks given back after compression, reused before allocating (no external-memory churn, fewer GCs). */
  private readonly free: Buffer[] = [];
  /** What `unjournaled` has not handed out yet: the current chunk from `journaled`, and sealed chunks' tails. */
  private journaled = 0;
  private sealedTails: Buffer[] = [];

  constructor(
    private readonly chunkSize: number,
    private readonly maxFree = 8,
  ) {}

  /** Gives chunks back once their batch is compressed (nothing may read them afterwards). */
  release(chunks: readonly LineChunk[]): void {
    for (const c of chunks) {
      if (this.free.length >= this.maxFree) return;
      const ab = c.data.buffer;
      if (c.data.byteOffset === 0 && ab.byteLength === this.chunkSize) this.free.push(Buffer.from(ab, 0, ab.byteLength));
    }
  }

  /**
   * Appends `head + tail + "}\n"` (tail may be null) as one line. A tail given as bytes (UTF-8, a
   * JSON text the caller already holds encoded, such as the request body) is copied as it is,
   * with CR and LF turned into spaces when `lineBreaks` says it may hold some: a JSON text holds
   * them only as whitespace between tokens, and in UTF-8 those byte values are never part of a
   * longer character. An empty tail is written as `null`.
   */
  append(head: string, tail: string | Uint8Array | null, lineBreaks = false, after = ''): void {
    const tailMax = tail === null ? 0 : typeof tail === 'string' ? 3 * tail.length : tail.length;
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; check the exact size only near the end.
    const worst = 3 * (head.length + after.length) + tailMax + 6;
    if (this.pos + worst > this.chunk.length) {
      const exact = Buffer.byteLength(head) + Buffer.byteLength(after) + (tail === null ? 0 : typeof tail === 'string' ? Buffer.byteLength(tail) : tail.length) + 6;
      if (this.pos + exact > this.chunk.length) this.nextChunk(exact);
    }
    const c = this.chunk;
    const start = this.pos;
    this.finish(c, start, start + c.write(head, start), tail, lineBreaks, after);
  }

  /**
   * As `append`, the head written in place by `headBytes` (log-line.ts) instead of given as text:
   * no string is made for it. `headMax` is `headBytes.measure`'s bound; `after` may be bytes.
   */
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
    const tailMax = tail === null ? 0 : typeof tail === 'string' ? 3 * tail.length : tail.length;
    const worst = headMax + (typeof after === 'string' ? 3 * after.length : after.length) + tailMax + 6;
    // The head's exact size is known only once written: a chunk with room for the bound.
    if (this.pos + worst > this.chunk.length) this.nextChunk(worst);
    const c = this.chunk;
    const start = this.pos;
    this.finish(c, start, headBytes.write(c, start, ts, worker, host, record, rawKey), tail, lineBreaks, after);
  }

  /** The tail, `after` and `}\n` of a line whose head ends at `p`, then the counts. */
  private finish(c: Buffer, start: number, p: number, tail: string | Uint8Array | null, lineBreaks: boolean, after: string | FieldBytes): void {
    if (tail !== null) {
      if (tail.length === 0) {
        p += c.write('null', p);
      } else if (typeof tail === 'string') {
        p += c.write(tail, p);
      } else {
        c.set(tail, p);
        if (lineBreaks) {
          for (let i = p, end = p + tail.length; i < end; i++) if (c[i] === 0x0a || c[i] === 0x0d) c[i] = 0x20;
        }
        p += tail.length;
      }
    }
    if (typeof after === 'string') {
      if (after.length > 0) p += c.write(after, p);
    } else {
      p += after.buf.copy(c, p, 0, after.length);
    }
    c[p++] = 0x7d; // }
    c[p++] = 0x0a; // \n
    this.pos = p;
    this.chunkRecords++;
    this.records++;
    this.bytes += p - start;
  }

  /** Whether bytes were appended since `unjournaled` last handed them out. */
  hasUnjournaled(): boolean {
    return this.pos > this.journaled || this.sealedTails.length > 0;
  }

  /**
   * Hands the bytes appended since its last call to `write` (the crash journal), oldest first: in
   * one call when they are all in the current chunk.
   */
  unjournaled(write: (data: Buffer, offset: number, length: number) => void): void {
    if (this.sealedTails.length > 0) {
      for (const t of this.sealedTails) write(t, 0, t.length);
      this.sealedTails = [];
    }
    if (this.pos > this.journaled) write(this.chunk, this.journaled, this.pos - this.journaled);
    this.journaled = this.pos;
  }

  /**
   * Takes everything queued, split into batches of whole chunks of about `maxBytes` each
   * (a batch exceeds it by less than one chunk), oldest first, and empties the queue.
   */
  take(maxBytes: number): Batch[] {
    this.seal();
    // Journaled by the caller beforehand, or not journaled at all.
    this.sealedTails = [];
    const chunks = this.sealed;
    this.sealed = [];
    this.records = 0;
    this.bytes = 0;
    const batches: Batch[] = [];
    let cur: LineChunk[] = [];
    let records = 0;
    let bytes = 0;
    for (const c of chunks) {
      if (bytes > 0 && bytes + c.data.length > maxBytes) {
        batches.push({ chunks: cur, records, bytes });
        cur = [];
        records = 0;
        bytes = 0;
      }
      cur.push(c);
      records += c.records;
      bytes += c.data.length;
    }
    if (bytes > 0) batches.push({ chunks: cur, records, bytes });
    return batches;
  }

  private seal(): void {
    if (this.pos === 0) return;
    this.sealed.push({ data: this.chunk.subarray(0, this.pos), records: this.chunkRecords });
    if (this.pos > this.journaled) this.sealedTails.push(this.chunk.subarray(this.journaled, this.pos));
    this.journaled = 0;
    // The next append allocates a fresh chunk: the sealed one belongs to the compressor now.
    this.chunk = EMPTY;
    this.pos = 0;
    this.chunkRecords = 0;
  }

  private nextChunk(need: number): void {
    this.seal();
    this.chunk = need <= this.chunkSize ? (this.free.pop() ?? Buffer.allocUnsafeSlow(this.chunkSize)) : Buffer.allocUnsafeSlow(need);
  }
}
