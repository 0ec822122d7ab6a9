import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { compressFrame } from './frame';
import { newFrameId, pidAlive, type SpillStore } from './spill';

/**
 * The crash journal of one worker: every record, as the NDJSON line queued for Redis, written to
 * a file before the answer it belongs to is written to the client (one write(2) per event-loop turn
 * for all the answers of that turn, no fsync: the page cache outlives the process, not the machine).
 * Each write is framed, `#b <token> <length>\n` + the lines + `#e <token>\n` (the token names the
 * segment): a write the process died in has no footer and is cut off, with whatever followed it.
 * The file is a *segment*: each take
 * of the queue (each flush) seals the current segment with a trailer line naming its frames
 * (`#frames <bytes>:<records>,…`) and opens the next one; a sealed segment is deleted once each of
 * its frames is in Redis or in a spill file: up to two such files are kept (`….jnl.free`) and written
 * over by the next segments instead, because writing into pages a file already has costs a fraction
 * of growing one (`node .test-build/tools/bench/journal.bench.js`). Frame ids are derived from the segment's id and the
 * frame's index, so a segment recovered after a crash yields the very frame ids the dead worker
 * pushed, and PUSH_ONCE makes a frame it had already pushed a no-op: each record once.
 *
 * Files: `<dir>/<pid>-<process start>_<seq>_<uuid>.jnl`; a recoverer claims one by renaming it to
 * `….jnl.claim-<pid>-<start>`. The owner is identified by pid and start time (from /proc), so a pid
 * reused by a later process (pid 1 in a restarted container) is not taken for the owner.
 */

const SEGMENT = /^(\d+)-(\d+)_(\d{6})_([0-9a-f-]{36})\.jnl(?:\.claim-(\d+)-(\d+))?$/;
/** A finished segment kept to be written over: `<pid>-<start>_<seq>_<uuid>.jnl.free`. */
const FREE = /^(\d+)-(\d+)_\d{6}_[0-9a-f-]{36}\.jnl\.free$/;
/** Finished segments kept for reuse, per process; a larger one is deleted instead. */
const KEEP_FREE = 2;
const KEEP_FREE_MAX_BYTES = 128 << 20;
/** Frames cut from a segment that was never sealed (nothing of it reached Redis): at most this much NDJSON each. */
const RECOVER_FRAME_BYTES = 4 << 20;

export interface JournalLogger {
  warn(message: string): void;
}

/** A sealed segment: its frames' ids, and how many of them are not yet safe (in Redis or on disk). */
export interface Segment {
  readonly file: string;
  readonly frameIds: readonly string[];
  open: number;
  readonly bytes: number;
  /** The file's size: `bytes`, or more when it was a reused file that had held a larger segment. */
  readonly size: number;
}

/** The token of segment `uuid` in its frames' header and footer. */
function frameToken(uuid: string): string {
  return uuid.slice(0, 8) + uuid.slice(9, 13) + uuid.slice(14, 18);
}

/** This process's start time in clock ticks since boot (/proc/self/stat), '0' where there is no /proc. */
export function processStart(pid: number | 'self' = 'self'): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'latin1');
    // Fields after the command name (which may hold spaces and parentheses): state is field 3, starttime 22.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[19] ?? null;
  } catch {
    return pid === 'self' ? '0' : null;
  }
}

/** Is the process `pid` that started at `start` still running? */
export function ownerAlive(pid: number, start: string): boolean {
  if (!pidAlive(pid)) return false;
  if (start === '0') return true;
  const now = processStart(pid);
  return now === null ? !fs.existsSync('/proc/self/stat') : now === start;
}

/** The id of frame `index` of the segment `uuid` (a UUID-shaped string, as spill file names want). */
export function segmentFrameId(uuid: string, index: number): string {
  return uuid.slice(0, 28) + index.toString(16).padStart(8, '0');
}

/** Frames up to this size (a loop turn's records, usually a few KiB) are written from one buffer. */
const STAGING_BYTES = 256 * 1024;

/** How many decimal digits a positive integer has. */
function decimalDigits(n: number): number {
  let d = 1;
  for (let v = n; v >= 10; v = Math.floor(v / 10)) d++;
  return d;
}

export class Journal {
  private fd = -1;
  private file = '';
  private uuid = '';
  private seq = 0;
  private broken = false;
  private closed = false;
  private dirty = false;
  private fsyncTimer: NodeJS.Timeout | null = null;
  private readonly owner: string;
  /** Bytes written to the current segment (the offset of the next write). */
  private bytes = 0;
  /** The current file's size (a reused file may be larger than what this segment wrote). */
  private size = 0;
  /** Bytes of this process's files on disk besides the current one (sealed segments not yet safe, kept files). */
  private sealedBytes = 0;
  /** Finished segments kept to be written over (`….jnl.free`), with their sizes. */
  private readonly free: Array<{ file: string; size: number }> = [];
  /** The current segment's frame header (`#b <token> `, the length follows) and footer. */
  private head = '';
  private headBytes: Buffer = Buffer.alloc(0);
  private foot: Buffer = Buffer.alloc(0);
  private readonly iov: Buffer[] = [Buffer.alloc(0), Buffer.alloc(0), Buffer.alloc(0)];
  /** A turn's frame is copied here and written with one pwrite(2) (a memcpy is cheaper than a pwritev's three pieces); a larger one is written from where it lies. */
  private readonly staging = Buffer.allocUnsafe(STAGING_BYTES);

  constructor(
    readonly dir: string,
    private readonly logger: JournalLogger,
    private readonly fsyncMs = 0,
    /** Past this many bytes on disk the pipeline spills waiting frames early (their segments go). */
    readonly maxBytes = Number.MAX_SAFE_INTEGER,
    pid = process.pid,
    start = processStart() ?? '0',
  ) {
    this.owner = `${pid}-${start}`;
  }

  get diskBytes(): number {
    return this.sealedBytes + this.size;
  }

  /** Creates the directory and the first segment; false (and a warning) when it cannot. */
  open(): boolean {
    try {
      fs.mkdirSync(this.dir, { recursive: true });
    } catch (e) {
      this.logger.warn(`bid log journal ${this.dir} not usable (${(e as Error).message}): a crash loses what is not yet in Redis`);
      this.broken = true;
      return false;
    }
    this.next();
    if (this.fsyncMs > 0) {
      this.fsyncTimer = setInterval(() => this.sync(), this.fsyncMs);
      this.fsyncTimer.unref();
    }
    return this.fd !== -1;
  }

  /**
   * Appends bytes to the current segment as one framed write (synchronously: the caller answers
   * clients right after). One pwrite(2) of header, bytes and footer copied together (pwritev(2) of
   * the three for a frame over STAGING_BYTES).
   */
  write(data: Buffer, offset: number, length: number): void {
    if (this.fd === -1 || length === 0) return;
    try {
      const foot = this.foot;
      const headBytes = this.headBytes;
      const lengthDigits = decimalDigits(length);
      const headerLength = headBytes.length + lengthDigits + 1;
      const total = headerLength + length + foot.length;
      let done: number;
      let whole: Buffer;
      if (total <= STAGING_BYTES) {
        // The header written in place (no string made): the head, the length's digits, a line feed.
        whole = this.staging;
        let p = headBytes.copy(whole, 0);
        for (let v = length, i = p + lengthDigits - 1; i >= p; i--, v = Math.floor(v / 10)) whole[i] = 0x30 + (v % 10);
        p += lengthDigits;
        whole[p++] = 0x0a;
        p += data.copy(whole, p, offset, offset + length);
        foot.copy(whole, p);
        done = fs.writeSync(this.fd, whole, 0, total, this.bytes);
      } else {
        const iov = this.iov;
        iov[0] = Buffer.from(`${this.head}${length}\n`, 'latin1');
        iov[1] = data.subarray(offset, offset + length);
        iov[2] = foot;
        done = fs.writevSync(this.fd, iov, this.bytes);
        whole = done < total ? Buffer.concat(iov) : foot;
      }
      // A short write (rare: a signal, a full disk): the rest.
      while (done < total) done += fs.writeSync(this.fd, whole, done, total - done, this.bytes + done);
      this.bytes += total;
      if (this.bytes > this.size) this.size = this.bytes;
      this.dirty = true;
    } catch (e) {
      this.fail(e);
    }
  }

  /**
   * Seals the current segment: its trailer names the frames the queue was just cut into (bytes and
   * records of each, in order), and a new segment takes what is logged next. Returns the sealed
   * segment, whose frames take the ids it gives, or null when the journal is not in use.
   */
  seal(frames: ReadonlyArray<{ bytes: number; records: number }>): Segment | null {
    if (this.fd === -1) {
      // After a failed write: try a new segment for what comes next.
      if (this.broken && !this.closed) this.next();
      return null;
    }
    const trailer = `#frames ${frames.map((f) => `${f.bytes}:${f.records}`).join(',')}\n`;
    this.write(Buffer.from(trailer, 'latin1'), 0, trailer.length);
    const ok = this.fd !== -1;
    const sealed: Segment = { file: this.file, frameIds: frames.map((_, i) => segmentFrameId(this.uuid, i)), open: frames.length, bytes: this.bytes, size: this.size };
    this.closeFd();
    if (ok) this.sealedBytes += sealed.size;
    this.next();
    if (!ok) {
      fs.unlink(sealed.file, () => undefined);
      return null;
    }
    return sealed;
  }

  /**
   * One frame of `seg` is safe (in Redis, or in a spill file): the segment goes once all are, kept
   * to be written over by a later segment when fewer than two are kept, deleted otherwise.
   */
  done(seg: Segment | null, sync = false): void {
    if (seg === null || --seg.open > 0) return;
    if (!sync && !this.closed && this.free.length < KEEP_FREE && seg.size <= KEEP_FREE_MAX_BYTES && this.diskBytes <= this.maxBytes) {
      try {
        fs.renameSync(seg.file, `${seg.file}.free`);
        this.free.push({ file: `${seg.file}.free`, size: seg.size });
        return;
      } catch {
        // gone or not renameable: deleted below
      }
    }
    this.sealedBytes -= seg.size;
    if (sync) {
      try {
        fs.unlinkSync(seg.file);
      } catch {
        // already gone
      }
    } else {
      fs.unlink(seg.file, () => undefined);
    }
  }

  /** Stops writing; the current segment is removed when empty (a non-empty one waits for recovery). */
  close(): void {
    if (this.fsyncTimer !== null) clearInterval(this.fsyncTimer);
    this.fsyncTimer = null;
    const empty = this.bytes === 0;
    const file = this.file;
    this.closeFd();
    this.closed = true;
    const gone = this.free.splice(0).map((f) => f.file);
    if (empty && file !== '') gone.push(file);
    for (const f of gone) {
      try {
        fs.unlinkSync(f);
      } catch {
        // already gone
      }
    }
  }

  private next(): void {
    if (this.closed) return;
    this.uuid = randomUUID();
    this.seq = (this.seq + 1) % 1_000_000;
    this.file = path.join(this.dir, `${this.owner}_${String(this.seq).padStart(6, '0')}_${this.uuid}.jnl`);
    this.bytes = 0;
    this.size = 0;
    const token = frameToken(this.uuid);
    this.head = `#b ${token} `;
    this.headBytes = Buffer.from(this.head, 'latin1');
    this.foot = Buffer.from(`#e ${token}\n`, 'latin1');
    try {
      const reuse = this.free.shift();
      if (reuse !== undefined) {
        // Written over from the start; what lies past the last write is an older segment's, whose
        // frames carry another token.
        this.sealedBytes -= reuse.size;
        try {
          fs.renameSync(reuse.file, this.file);
          this.fd = fs.openSync(this.file, 'r+');
          this.size = reuse.size;
        } catch {
          fs.rm(reuse.file, { force: true }, () => undefined);
        }
      }
      if (this.fd === -1) this.fd = fs.openSync(this.file, 'wx', 0o600);
      if (this.broken) {
        this.broken = false;
        this.logger.warn(`bid log journal ${this.dir} writable again`);
      }
    } catch (e) {
      this.fail(e);
    }
  }

  private fail(e: unknown): void {
    // The segment now misses records: unusable for recovery. Records stay as safe as without a
    // journal (memory, then Redis) until the next flush opens a new segment.
    if (!this.broken) this.logger.warn(`bid log journal write failed (${(e as Error).message}): until the next flush, a crash loses what is not yet in Redis`);
    this.broken = true;
    const file = this.file;
    this.closeFd();
    if (file !== '') fs.unlink(file, () => undefined);
  }

  private closeFd(): void {
    if (this.fd === -1) return;
    try {
      fs.closeSync(this.fd);
    } catch {
      // nothing to do
    }
    this.fd = -1;
  }

  private sync(): void {
    if (!this.dirty || this.fd === -1) return;
    this.dirty = false;
    fs.fdatasync(this.fd, () => undefined);
  }
}

export interface Recovered {
  segments: number;
  records: number;
  frames: number;
}

/**
 * Turns the journal segments of dead processes into spill files (compressed frames with the ids
 * the dead worker gave them, fsynced), then deletes the segments; the spill drain pushes them with
 * PUSH_ONCE. A segment of a living process is left alone. A torn last line (the process died inside
 * a write) is cut off: its write never returned, so no answer followed it. A recoverer that dies
 * midway leaves its claim, which the next one takes over; frames it already spilled are spilled
 * again with the same ids, and their second push is a no-op.
 */
export async function recoverJournals(dir: string, spill: SpillStore, logger: JournalLogger, zstdLevel?: number, pid = process.pid, start = processStart() ?? '0'): Promise<Recovered> {
  const out: Recovered = { segments: 0, records: 0, frames: 0 };
  let names: string[];
  try {
    names = await fsp.readdir(dir);
  } catch {
    return out;
  }
  for (const name of names.sort()) {
    const free = FREE.exec(name);
    if (free !== null) {
      // A dead process's file kept for reuse: nothing in it to recover.
      if (!(Number(free[1]) === pid && free[2] === start) && !ownerAlive(Number(free[1]), free[2])) await fsp.unlink(path.join(dir, name)).catch(() => undefined);
      continue;
    }
    const m = SEGMENT.exec(name);
    if (!m) continue;
    const [ownerPid, ownerStart] = m[5] === undefined ? [m[1], m[2]] : [m[5], m[6]];
    const mine = Number(ownerPid) === pid && ownerStart === start;
    if (m[5] === undefined ? mine || ownerAlive(Number(ownerPid), ownerStart) : !mine && ownerAlive(Number(ownerPid), ownerStart)) continue;
    const base = m[5] === undefined ? name : name.slice(0, name.lastIndexOf('.claim-'));
    const claimed = path.join(dir, `${base}.claim-${pid}-${start}`);
    try {
      if (!mine) await fsp.rename(path.join(dir, name), claimed);
    } catch {
      continue; // taken by another process
    }
    let data: Buffer;
    let mtime: number;
    try {
      data = await fsp.readFile(claimed);
      mtime = (await fsp.stat(claimed)).mtimeMs;
    } catch {
      continue;
    }
    const frames = cutFrames(unframe(data, m[4]), m[4]);
    let ok = true;
    for (const f of frames) {
      const frame = await compressFrame([{ data: f.data, records: f.records }], f.data.length, undefined, zstdLevel);
      if (!(await spill.write(frame, f.id, f.records, Math.floor(mtime)))) {
        ok = false;
        break;
      }
      out.frames++;
      out.records += f.records;
    }
    if (!ok) {
      logger.warn(`journal segment ${claimed} not recovered yet: the spill directory ${spill.dir} is full or not writable; retrying later`);
      continue;
    }
    await fsp.unlink(claimed).catch(() => undefined);
    out.segments++;
  }
  return out;
}

/**
 * The lines a segment's writes hold, in order: each write is `#b <token> <length>\n`, the lines,
 * `#e <token>\n`. Reading stops at the first write that is not whole (the process died in it) or
 * not this segment's (a reused file: what lies past the last write is an older segment's). A
 * segment written before writes were framed is its bytes as they are.
 */
export function unframe(data: Buffer, uuid: string): Buffer {
  if (data.length < 3 || data[0] !== 0x23 || data[1] !== 0x62 || data[2] !== 0x20) return data;
  const token = frameToken(uuid);
  const head = Buffer.from(`#b ${token} `, 'latin1');
  const foot = Buffer.from(`#e ${token}\n`, 'latin1');
  const parts: Buffer[] = [];
  let at = 0;
  while (at + head.length < data.length && data.compare(head, 0, head.length, at, at + head.length) === 0) {
    const nl = data.indexOf(0x0a, at + head.length);
    if (nl === -1 || nl - at - head.length > 12) break;
    const len = Number(data.toString('latin1', at + head.length, nl));
    const end = nl + 1 + len;
    if (!Number.isSafeInteger(len) || len <= 0 || end + foot.length > data.length || data.compare(foot, 0, foot.length, end, end + foot.length) !== 0) break;
    parts.push(data.subarray(nl + 1, end));
    at = end + foot.length;
  }
  return Buffer.concat(parts);
}

interface CutFrame {
  id: string;
  data: Buffer;
  records: number;
}

/** A segment's frames: as its trailer names them, or (never sealed) its whole lines in frames of at most 4 MiB. */
export function cutFrames(data: Buffer, uuid: string): CutFrame[] {
  const end = data.lastIndexOf(0x0a) + 1; // a torn last write is cut off
  let body = data.subarray(0, end);
  let sizes: Array<{ bytes: number; records: number }> | null = null;
  if (end > 0) {
    const lastStart = body.lastIndexOf(0x0a, end - 2) + 1;
    if (body[lastStart] === 0x23 /* # */) {
      const m = /^#frames ((?:\d+:\d+,?)*)\n$/.exec(body.subarray(lastStart).toString('latin1'));
      body = body.subarray(0, lastStart);
      if (m) {
        sizes = m[1] === '' ? [] : m[1].split(',').map((s) => ({ bytes: Number(s.split(':')[0]), records: Number(s.split(':')[1]) }));
        if (sizes.reduce((n, s) => n + s.bytes, 0) !== body.length) sizes = null;
      }
    }
  }
  const frames: CutFrame[] = [];
  if (sizes !== null) {
    let at = 0;
    for (let i = 0; i < sizes.length; i++) {
      const part = body.subarray(at, at + sizes[i].bytes);
      at += sizes[i].bytes;
      if (lines(part) === sizes[i].records) {
        frames.push({ id: segmentFrameId(uuid, i), data: part, records: sizes[i].records });
        continue;
      }
      // Should not happen: the trailer disagrees with the lines. Keep the records (fresh id).
      frames.push({ id: newFrameId(), data: part, records: lines(part) });
    }
    return frames;
  }
  // Never sealed: no frame of it was cut, let alone pushed; any deterministic cut works.
  let at = 0;
  let i = 0;
  while (at < body.length) {
    let stop = Math.min(body.length, at + RECOVER_FRAME_BYTES);
    if (stop < body.length) {
      const nl = body.lastIndexOf(0x0a, stop - 1);
      stop = nl >= at ? nl + 1 : body.indexOf(0x0a, stop) + 1;
    }
    const part = body.subarray(at, stop);
    frames.push({ id: segmentFrameId(uuid, i++), data: part, records: lines(part) });
    at = stop;
  }
  return frames;
}

function lines(b: Buffer): number {
  let n = 0;
  for (let i = b.indexOf(0x0a); i !== -1; i = b.indexOf(0x0a, i + 1)) n++;
  return n;
}
