import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { mkdirEachLevel } from '../config/dirs';

/** A compressed batch on disk, waiting for Redis. */
export interface SpillEntry {
  /** Name without the claim suffix: `<ts>_<seq>_<worker>_<records>_<frame id>.zst`. */
  readonly base: string;
  /** Current path (the claimed one once claimed by this process). */
  path: string;
  readonly frameId: string;
  readonly records: number;
  readonly createdAt: number;
  readonly bytes: number;
  /** Pid of the process that claimed it, or null. */
  claimedBy: number | null;
}

const NAME = /^(\d{13})_(\d{6})_([A-Za-z0-9.-]+)_(\d+)_([0-9a-f-]{36})\.zst(?:\.claim-(\d+))?$/;
/** A file set aside because its frame failed verification: `<name>.bad`. */
const BAD = /^\d{13}_\d{6}_[A-Za-z0-9.-]+_\d+_[0-9a-f-]{36}\.zst\.bad$/;
const TMP = /^\..+\.(\d+)\.tmp$/;
/** How long a drain may rely on its last directory listing before it looks for other workers' files. */
const RESCAN_EVERY_MS = 30_000;

/** Parses a spill file name; null for anything else in the directory. */
export function parseSpillName(name: string): Omit<SpillEntry, 'path' | 'bytes'> | null {
  const m = NAME.exec(name);
  if (!m) return null;
  return {
    base: m[6] === undefined ? name : name.slice(0, name.lastIndexOf('.claim-')),
    createdAt: Number(m[1]),
    records: Number(m[4]),
    frameId: m[5],
    claimedBy: m[6] === undefined ? null : Number(m[6]),
  };
}

/** Is that process alive (on this machine)? */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The spill directory: compressed batches that could not reach Redis, one zstd frame per file,
 * exactly the bytes that would have been RPUSHed. Shared safely by the workers of a machine:
 * - names sort oldest first (creation time, then a per-process sequence) and carry the worker id,
 *   record count and frame id (the push is idempotent per frame id, see log-sink.ts);
 * - a file appears atomically (written and fsynced as a dot-file, then renamed);
 * - a worker claims a file before draining it by renaming it to `<name>.claim-<pid>` (rename is
 *   atomic, so two workers never push the same file); a claim whose process is gone is taken over.
 * - a file whose frame fails verification is renamed `<name>.bad` (quarantined): never pushed, kept
 *   for a person to look at, and counted in the size bound like any other file.
 * The size bound covers the whole directory as last listed plus this process's own writes.
 */
export class SpillStore {
  private entries: SpillEntry[] = [];
  private sorted = true;
  private scannedAt = 0;
  private seq = 0;
  private ready = false;
  /** Files written while a listing was under way (the listing may have missed them). */
  private writtenDuringScan: SpillEntry[] | null = null;
  /** Bytes of spill files in the directory, as far as this process knows (gauge). */
  knownBytes = 0;
  /** Bytes of writes under way (counted in knownBytes once done), and their file names. */
  private reserved = 0;
  private readonly writing = new Set<string>();
  /** Writes completed while a listing ran (see counting()). */
  private completions: Array<{ base: string; bytes: number }> = [];
  private activeCounts = 0;

  constructor(
    readonly dir: string,
    private readonly maxBytes: number,
    private readonly worker: string,
    private readonly pid: number = process.pid,
  ) {}

  /** Creates the directory and lists what earlier processes left. False if unusable. */
  async init(): Promise<boolean> {
    try {
      // Not Node's recursive mkdir: under /proc it never returns, and every later write would start another.
      await mkdirEachLevel(this.dir);
      this.ready = true;
      await this.scan();
    } catch {
      this.ready = false;
    }
    return this.ready;
  }

  /** Files waiting to be drained that this process may take (as of the last listing). */
  get count(): number {
    return this.entries.length;
  }

  /** Lists the directory again when the last listing is stale (or `force`). */
  async refresh(force = false): Promise<void> {
    if (!this.ready) return;
    if (force || Date.now() - this.scannedAt >= RESCAN_EVERY_MS) await this.scan();
  }

  /** The oldest file to drain, or null. */
  next(): SpillEntry | null {
    if (!this.sorted) {
      this.entries.sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
      this.sorted = true;
    }
    return this.entries.length > 0 ? this.entries[0] : null;
  }

  /**
   * Writes one frame. False when the directory would pass its bound (or cannot be written):
   * the caller then drops the batch and counts it.
   */
  async write(frame: Buffer, frameId: string, records: number, createdAt: number): Promise<boolean> {
    if (!this.ready && !(await this.init())) return false;
    if (this.knownBytes + this.reserved + frame.length > this.maxBytes) {
      await this.recount().catch(() => undefined);
      if (this.knownBytes + this.reserved + frame.length > this.maxBytes) return false;
    }
    this.seq = (this.seq + 1) % 1_000_000;
    const base = this.name(createdAt, records, frameId);
    // Reserved until written, so that concurrent writes cannot pass the bound together (and a
    // listing meanwhile does not count the file twice).
    this.reserved += frame.length;
    this.writing.add(base);
    const tmp = path.join(this.dir, `.${base}.${this.pid}.tmp`);
    const final = path.join(this.dir, base);
    try {
      const fh = await fsp.open(tmp, 'wx', 0o600);
      try {
        await fh.writeFile(frame);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, final);
    } catch {
      await fsp.unlink(tmp).catch(() => undefined);
      return false;
    } finally {
      this.reserved -= frame.length;
      this.writing.delete(base);
    }
    this.knownBytes += frame.length;
    if (this.activeCounts > 0) this.completions.push({ base, bytes: frame.length });
    const e: SpillEntry = { base, path: final, frameId, records, createdAt, bytes: frame.length, claimedBy: null };
    this.entries.push(e);
    this.writtenDuringScan?.push(e);
    this.sorted = false;
    return true;
  }

  /**
   * Writes one frame synchronously (the fatal-error path, when no callback will ever run again).
   * False when the bound would be passed or the write fails.
   */
  writeSync(frame: Buffer, frameId: string, records: number, createdAt: number): boolean {
    if (!this.ready) return false;
    if (this.knownBytes + this.reserved + frame.length > this.maxBytes) return false;
    this.seq = (this.seq + 1) % 1_000_000;
    const base = this.name(createdAt, records, frameId);
    const tmp = path.join(this.dir, `.${base}.${this.pid}.tmp`);
    try {
      const fd = fs.openSync(tmp, 'wx', 0o600);
      try {
        fs.writeSync(fd, frame);
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
      fs.renameSync(tmp, path.join(this.dir, base));
    } catch {
      try {
        fs.unlinkSync(tmp);
      } catch {
        // nothing written
      }
      return false;
    }
    this.knownBytes += frame.length;
    return true;
  }

  private name(createdAt: number, records: number, frameId: string): string {
    return (
      `${String(createdAt).padStart(13, '0')}_${String(this.seq).padStart(6, '0')}_` +
      `${this.worker.replace(/[^A-Za-z0-9.-]/g, '-') || 'w'}_${records}_${frameId}.zst`
    );
  }

  /**
   * Claims `e` for this process and reads it. Null when another worker took it first (or it is
   * gone); the entry is then forgotten.
   */
  async claim(e: SpillEntry): Promise<Buffer | null> {
    if (e.claimedBy !== this.pid) {
      const claimed = path.join(this.dir, `${e.base}.claim-${this.pid}`);
      try {
        await fsp.rename(e.path, claimed);
      } catch {
        this.forget(e);
        return null;
      }
      e.path = claimed;
      e.claimedBy = this.pid;
    }
    try {
      return await fsp.readFile(e.path);
    } catch {
      this.forget(e);
      return null;
    }
  }

  /** Deletes a drained file. */
  async remove(e: SpillEntry): Promise<void> {
    await fsp.unlink(e.path).catch(() => undefined);
    this.forget(e);
    this.knownBytes = Math.max(0, this.knownBytes - e.bytes);
  }

  /** Moves a file whose frame failed verification aside (`.bad`): it stays on disk and in the bound. */
  async quarantine(e: SpillEntry): Promise<void> {
    await fsp.rename(e.path, path.join(this.dir, `${e.base}.bad`)).catch(() => undefined);
    this.forget(e);
  }

  private forget(e: SpillEntry): void {
    const i = this.entries.indexOf(e);
    if (i !== -1) this.entries.splice(i, 1);
  }

  /** Re-adds the sizes of the spill files (other workers may have drained some). */
  private async recount(): Promise<void> {
    await this.counting(async (seen) => {
      let total = 0;
      for (const name of await fsp.readdir(this.dir)) {
        if (!(NAME.test(name) || BAD.test(name)) || this.writing.has(name)) continue;
        total += await fsp.stat(path.join(this.dir, name)).then(
          (st) => (seen.add(name), st.size),
          () => 0,
        );
      }
      return total;
    });
  }

  /**
   * Runs a listing that sets `knownBytes` to the total it finds, plus the writes that completed
   * meanwhile and were not in the listing (without this, a write finishing during the listing
   * would be forgotten, and the bound passed).
   */
  private async counting(list: (seen: Set<string>) => Promise<number>): Promise<void> {
    const start = this.completions.length;
    const seen = new Set<string>();
    this.activeCounts++;
    let total: number;
    try {
      total = await list(seen);
    } finally {
      this.activeCounts--;
    }
    for (const c of this.completions.slice(start)) if (!seen.has(c.base)) total += c.bytes;
    if (this.activeCounts === 0) this.completions = [];
    this.knownBytes = total;
  }

  /** Lists the directory (only the drain calls this, so no entry is in use meanwhile). */
  private async scan(): Promise<void> {
    this.writtenDuringScan = [];
    try {
      await this.counting((seen) => this.scanDir(seen));
    } finally {
      this.writtenDuringScan = null;
    }
  }

  private async scanDir(seen: Set<string>): Promise<number> {
    const names = await fsp.readdir(this.dir);
    const entries: SpillEntry[] = [];
    let total = 0;
    for (const name of names) {
      const p = path.join(this.dir, name);
      const tmp = TMP.exec(name);
      if (tmp) {
        // A write interrupted by a crash: the batch never counted as spilled, remove the debris.
        if (!pidAlive(Number(tmp[1]))) await fsp.unlink(p).catch(() => undefined);
        continue;
      }
      if (BAD.test(name)) {
        // Quarantined: not drained, but on disk and in the bound.
        total += await fsp.stat(p).then(
          (st) => (seen.add(name), st.size),
          () => 0,
        );
        continue;
      }
      const parsed = parseSpillName(name);
      if (!parsed || this.writing.has(name)) continue;
      let bytes: number;
      try {
        bytes = (await fsp.stat(p)).size;
      } catch {
        continue; // drained by another worker meanwhile
      }
      total += bytes;
      seen.add(name);
      if (parsed.claimedBy !== null && parsed.claimedBy !== this.pid && pidAlive(parsed.claimedBy)) continue;
      entries.push({ ...parsed, path: p, bytes });
    }
    // Written meanwhile but missed by the listing: still to drain.
    for (const e of this.writtenDuringScan ?? []) {
      if (!entries.some((x) => x.base === e.base)) entries.push(e);
    }
    entries.sort((a, b) => (a.base < b.base ? -1 : a.base > b.base ? 1 : 0));
    this.entries = entries;
    this.sorted = true;
    this.scannedAt = Date.now();
    return total;
  }
}

/** A fresh frame id (also the idempotency key of its push). */
export function newFrameId(): string {
  return randomUUID();
}
