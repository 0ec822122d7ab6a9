import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { mkdirEachLevel } from '../config/dirs';
import type { Batch, Frame } from './batch';
import { BATCH_HOURS_SQL, copyHourSql, FILL_HOURS_SQL, INVALID_LINE_KEY, loadBatchSql, partitionOf } from '../bidlog/schema';
import { wellFormedJson } from '../bidlog/well-formed';

/** A line the store refused, kept in `dead-letters/` with why. */
export interface DeadLetter {
  /** The hash of its frame. */
  readonly frame: string;
  readonly reason: string;
  /** The line as it was in the frame (decoded as UTF-8). */
  readonly line: string;
}

/** A frame set aside (`bad-frames/`) because it could not be stored on its own. */
export interface SetAside {
  readonly hash: string;
  readonly reason: string;
}

/** What storing one batch group did. */
export interface StoreResult {
  /** Records of the group (in the files written now and in those found already there). */
  records: number;
  /** Files written now, and files of the group found already written (a resumed batch). */
  written: Array<{ file: string; records: number; bytes: number }>;
  skipped: Array<{ file: string; records: number }>;
  /** Lines that were not JSON (stored with type NULL and the line in `raw`). */
  invalidLines: number;
  /** Frames that were not zstd: kept as files in `bad-frames/`, not in the partitions. */
  badFrames: string[];
  /** Lines the store refused (an escaped lone surrogate, or what DuckDB's reader refuses): kept in `dead-letters/<group>.ndjson`. */
  deadLetters: DeadLetter[];
}

/** Where a storage step failed: a class of error for the metrics and the log. */
export class StorageError extends Error {
  constructor(
    readonly step: 'stage' | 'load' | 'write',
    cause: unknown,
  ) {
    const e = cause instanceof Error ? cause : new Error(String(cause));
    super(`${step}: ${(e as NodeJS.ErrnoException).code ? `${(e as NodeJS.ErrnoException).code} ` : ''}${e.message}`, { cause: e });
    this.name = 'StorageError';
  }
  get code(): string | undefined {
    return (this.cause as NodeJS.ErrnoException | undefined)?.code;
  }
}

export interface ParquetStoreOptions {
  dir: string;
  /** Names this process's staging directory (one per shipper id). */
  shipperId: string;
  threads: number;
  memoryMb: number;
}

/** Temporary names of files being written: `<group>.parquet.tmp-<random>`. */
const TMP = /\.tmp-[0-9a-f]{12}$/;
/** A temporary file older than this was left by a crash (a write takes seconds). */
const STALE_TMP_MS = 3_600_000;
const DATE_DIR = /^date=(\d{4}-\d{2}-\d{2})$/;
const DAY_MS = 86_400_000;
/** Files the shipper writes are its owner's only (they hold the bid log); directories it makes too. */
const FILE_MODE = 0o600;
const DIR_MODE = 0o700;

/**
 * The Parquet partitions under SHIP_DIR, written through an embedded DuckDB (in memory, its own
 * threads). One batch group becomes one file per UTC hour of its records:
 * `date=YYYY-MM-DD/hour=HH/<group>.parquet`. A file is written under a temporary name in its
 * directory, fsynced, renamed, and the directory fsynced, so a reader never sees half a file and a
 * file that exists is complete; a group whose file for an hour exists already (a resumed batch) is
 * not written again.
 */
export class ParquetStore {
  private db: DuckDBInstance | null = null;
  private conn: DuckDBConnection | null = null;
  /** Between open() and close(); the instance itself is made per batch (connect) and released after it. */
  private isOpen = false;
  readonly staging: string;

  constructor(private readonly opts: ParquetStoreOptions) {
    this.staging = path.join(opts.dir, '.staging', opts.shipperId);
  }

  get dir(): string {
    return this.opts.dir;
  }

  /**
   * Ready to store (a DuckDB instance is made now, so that a setting DuckDB refuses stops the start).
   * Between two batches no instance is held: DuckDB keeps much of what it allocated while loading
   * and writing a batch (outside its buffer pool, which `duckdb_memory()` shows empty afterwards)
   * until its instance is closed, and with every batch run on another of libuv's pool threads it
   * grew to ~100 MiB more than a fresh one at the reference load. Closing it after each batch and
   * making one for the next (a few milliseconds) keeps the shipper near its size at start between
   * batches (docs/log-pipeline.md, "Figures of the shipper").
   */
  async open(): Promise<void> {
    this.isOpen = true;
    try {
      await this.connect();
    } catch (e) {
      this.isOpen = false;
      throw e;
    }
  }

  close(): void {
    this.isOpen = false;
    this.release();
  }

  /** Closes the DuckDB instance (and gives back what it holds); the next batch makes a new one. */
  private release(): void {
    this.conn?.closeSync();
    this.db?.closeSync();
    this.conn = null;
    this.db = null;
  }

  private async connect(): Promise<DuckDBConnection> {
    if (!this.isOpen) throw new Error('ParquetStore is not open');
    if (this.conn !== null) return this.conn;
    const db = await DuckDBInstance.create(':memory:', {
      threads: String(this.opts.threads),
      memory_limit: `${this.opts.memoryMb}MB`,
      temp_directory: `${this.staging}.duckdb-tmp`,
      preserve_insertion_order: 'false',
      enable_external_access: 'true',
      autoinstall_known_extensions: 'false',
      autoload_known_extensions: 'true',
    });
    try {
      this.conn = await db.connect();
    } catch (e) {
      db.closeSync();
      throw e;
    }
    this.db = db;
    return this.conn;
  }

  /** Stores a batch group; throws a StorageError (nothing half-written is visible) when it cannot. */
  async store(batch: Batch): Promise<StoreResult> {
    const result: StoreResult = { records: 0, written: [], skipped: [], invalidLines: 0, badFrames: [], deadLetters: [] };
    let conn: DuckDBConnection;
    let files: string[];
    try {
      conn = await this.connect();
    } catch (e) {
      throw new StorageError('load', e);
    }
    try {
      await fsp.rm(this.staging, { recursive: true, force: true });
      await mkdirEachLevel(this.staging, DIR_MODE);
      files = await this.stageFast(batch.frames);
    } catch (e) {
      throw new StorageError('stage', e);
    }
    try {
      if (files.length > 0) {
        try {
          await this.load(files);
        } catch {
          // Not zstd, not UTF-8, not JSON or not well-formed somewhere: sort it out line by line (rare, slow path).
          let longest: number;
          try {
            ({ files, longest } = await this.stageChecked(batch.frames, result));
          } catch (e) {
            throw new StorageError('stage', e);
          }
          if (files.length > 0) {
            try {
              await this.load(files, longest + 1024);
            } catch {
              // A line DuckDB's reader refuses that the checks above let through: find it (and only it).
              files = await this.isolateRefused(files, longest + 1024, result);
              if (files.length > 0) await this.load(files, longest + 1024);
            }
          }
        }
      }
      if (result.deadLetters.length > 0) await this.keepDeadLetters(batch.group, result.deadLetters);
    } catch (e) {
      throw e instanceof StorageError ? e : new StorageError('load', e);
    }
    try {
      if (files.length > 0) {
        type HourRow = { part_h: bigint | null; n: bigint };
        let hours = (await conn.runAndReadAll(BATCH_HOURS_SQL)).getRowObjectsJS() as HourRow[];
        if (hours.some((h) => h.part_h === null)) {
          await conn.run(FILL_HOURS_SQL);
          hours = (await conn.runAndReadAll(BATCH_HOURS_SQL)).getRowObjectsJS() as HourRow[];
        }
        for (const h of hours) {
          const records = Number(h.n);
          const hour = Number(h.part_h);
          result.records += records;
          const p = partitionOf(hour);
          const dir = await this.partitionDir(p.date, p.hour);
          const file = path.join(dir, `${batch.group}.parquet`);
          if (await exists(file)) {
            result.skipped.push({ file, records });
            continue;
          }
          const bytes = await this.writeAtomically(file, (tmp) => conn.run(copyHourSql(hour, tmp)).then(() => undefined));
          result.written.push({ file, records, bytes });
        }
      }
    } catch (e) {
      throw new StorageError('write', e);
    } finally {
      await conn.run('DROP TABLE IF EXISTS batch').catch(() => undefined);
      await fsp.rm(this.staging, { recursive: true, force: true }).catch(() => undefined);
      this.release();
    }
    return result;
  }

  /** The frames as they are (DuckDB decompresses them): `<hash>.ndjson.zst`. */
  private async stageFast(frames: readonly Frame[]): Promise<string[]> {
    const files: string[] = [];
    for (const f of frames) {
      const file = path.join(this.staging, `${f.hash}.ndjson.zst`);
      await fsp.writeFile(file, f.bytes, { mode: FILE_MODE });
      files.push(file);
    }
    return files;
  }

  /**
   * Decompresses and checks every line: a frame that is not zstd is kept apart in `bad-frames/`
   * (fsynced, named by its hash); a line that is not JSON is staged wrapped as
   * `{"__invalid_line": "<line>"}` so that it is stored, with type NULL, rather than lost.
   */
  private async stageChecked(frames: readonly Frame[], result: StoreResult): Promise<{ files: string[]; longest: number }> {
    const files: string[] = [];
    let longest = 0;
    result.invalidLines = 0;
    result.badFrames = [];
    result.deadLetters = [];
    for (const f of frames) {
      let text: string;
      try {
        text = zlib.zstdDecompressSync(f.bytes).toString('utf8');
      } catch {
        await this.keepBadFrame(f);
        result.badFrames.push(f.hash);
        continue;
      }
      const out: string[] = [];
      for (const line of text.split('\n')) {
        if (line.trim() === '') continue;
        let staged = line;
        try {
          JSON.parse(line);
        } catch {
          staged = JSON.stringify({ [INVALID_LINE_KEY]: line });
          result.invalidLines++;
        }
        if (staged === line && wellFormedJson(line) !== line) {
          // Valid JSON to JavaScript, refused by DuckDB ("no low surrogate in string"): a writer that did not make it well-formed.
          result.deadLetters.push({ frame: f.hash, reason: 'an escaped lone surrogate (\\uD800-\\uDFFF not in a pair): not well-formed UTF-8', line });
          continue;
        }
        out.push(staged);
        longest = Math.max(longest, Buffer.byteLength(staged));
      }
      if (out.length === 0) continue;
      const file = path.join(this.staging, `${f.hash}.ndjson`);
      await fsp.writeFile(file, `${out.join('\n')}\n`, { mode: FILE_MODE });
      files.push(file);
    }
    return { files, longest };
  }

  /** Creates the temporary table `batch` from staged files (loadBatchSql). */
  protected async load(files: readonly string[], maxRecordBytes?: number): Promise<void> {
    await (await this.connect()).run(loadBatchSql(files, maxRecordBytes));
  }

  /**
   * The staged files (one per frame, checked lines) without the lines DuckDB's reader refuses, each
   * of which goes to `result.deadLetters` with DuckDB's message: every file is loaded alone, and the
   * lines of one that fails are halved until the refused lines are found (a few loads per refused
   * line). Returns the files to load.
   */
  private async isolateRefused(files: readonly string[], maxRecordBytes: number, result: StoreResult): Promise<string[]> {
    const kept: string[] = [];
    for (const file of files) {
      const refusal = await this.refusal([file], maxRecordBytes);
      if (refusal === null) {
        kept.push(file);
        continue;
      }
      const frame = path.basename(file).slice(0, 32);
      const lines = (await fsp.readFile(file, 'utf8')).split('\n').filter((l) => l !== '');
      const probe = path.join(this.staging, `probe-${frame}.ndjson`);
      const refused = new Set<number>();
      const search = async (from: number, to: number, known: string | null): Promise<void> => {
        const why = known ?? (await this.refusalOfLines(probe, lines.slice(from, to), maxRecordBytes));
        if (why === null) return;
        if (to - from === 1) {
          refused.add(from);
          result.deadLetters.push({ frame, reason: why, line: lines[from] });
          return;
        }
        const mid = (from + to) >> 1;
        await search(from, mid, null);
        await search(mid, to, null);
      };
      await search(0, lines.length, refusal);
      await fsp.rm(probe, { force: true });
      const rest = lines.filter((_, i) => !refused.has(i));
      if (rest.length === 0) continue;
      await fsp.writeFile(file, `${rest.join('\n')}\n`, { mode: FILE_MODE });
      kept.push(file);
    }
    return kept;
  }

  /** DuckDB's message when it refuses to load `files`, else null. */
  private async refusal(files: readonly string[], maxRecordBytes?: number): Promise<string | null> {
    try {
      await this.load(files, maxRecordBytes);
      return null;
    } catch (e) {
      return (e instanceof Error ? e.message : String(e)).replace(/ in file "[^"]*"/, '').slice(0, 500);
    }
  }

  private async refusalOfLines(file: string, lines: readonly string[], maxRecordBytes: number): Promise<string | null> {
    await fsp.writeFile(file, `${lines.join('\n')}\n`, { mode: FILE_MODE });
    return this.refusal([file], maxRecordBytes);
  }

  /** The refused lines of a group, in `dead-letters/<group>.ndjson` (one JSON object per line: frame, reason, line); once per group. */
  private async keepDeadLetters(group: string, letters: readonly DeadLetter[]): Promise<void> {
    const dir = path.join(this.opts.dir, 'dead-letters');
    await mkdirEachLevel(this.opts.dir, DIR_MODE);
    await mkdirSynced(dir);
    const file = path.join(dir, `${group}.ndjson`);
    if (await exists(file)) return;
    const text = letters.map((l) => JSON.stringify({ frame: l.frame, reason: l.reason, line: l.line })).join('\n') + '\n';
    await this.writeAtomically(file, (tmp) => fsp.writeFile(tmp, text, { mode: FILE_MODE }));
  }

  /**
   * The frames of `batch` that cannot be stored even alone (a frame that kept a batch from being
   * stored, see ShipperService): each is kept in `bad-frames/<hash>.zst` with `<hash>.reason`, and
   * returned. Nothing is written to the partitions.
   */
  async setAside(batch: Batch): Promise<SetAside[]> {
    const out: SetAside[] = [];
    for (const f of batch.frames) {
      const probe: StoreResult = { records: 0, written: [], skipped: [], invalidLines: 0, badFrames: [], deadLetters: [] };
      let reason: string | null;
      try {
        await fsp.rm(this.staging, { recursive: true, force: true });
        await mkdirEachLevel(this.staging, DIR_MODE);
        const { files, longest } = await this.stageChecked([f], probe);
        if (probe.badFrames.length > 0) continue; // not zstd: stored apart by store() already
        reason = files.length === 0 ? null : await this.refusal(files, longest + 1024);
        if (reason !== null && files.length > 0) {
          const kept = await this.isolateRefused(files, longest + 1024, probe);
          reason = kept.length === 0 ? null : await this.refusal(kept, longest + 1024);
        }
      } finally {
        // A file-system error (disk full) is not the frame's fault: it propagates, nothing is set aside.
        await this.conn?.run('DROP TABLE IF EXISTS batch').catch(() => undefined);
      }
      if (reason === null) continue;
      await this.keepBadFrame(f, reason);
      out.push({ hash: f.hash, reason });
    }
    await fsp.rm(this.staging, { recursive: true, force: true }).catch(() => undefined);
    this.release();
    return out;
  }

  private async keepBadFrame(f: Frame, reason?: string): Promise<void> {
    const dir = path.join(this.opts.dir, 'bad-frames');
    await mkdirEachLevel(this.opts.dir, DIR_MODE);
    await mkdirSynced(dir);
    const file = path.join(dir, `${f.hash}.zst`);
    if (reason !== undefined) {
      const why = path.join(dir, `${f.hash}.reason`);
      if (!(await exists(why))) await this.writeAtomically(why, (tmp) => fsp.writeFile(tmp, `${reason}\n`, { mode: FILE_MODE }));
    }
    if (await exists(file)) return;
    await this.writeAtomically(file, (tmp) => fsp.writeFile(tmp, f.bytes, { mode: FILE_MODE }));
  }

  private async partitionDir(date: string, hour: string): Promise<string> {
    await mkdirEachLevel(this.opts.dir, DIR_MODE);
    const d = path.join(this.opts.dir, `date=${date}`);
    await mkdirSynced(d);
    const h = path.join(d, `hour=${hour}`);
    await mkdirSynced(h);
    return h;
  }

  /** `write(tmp)`, fsync it, rename it to `file`, fsync the directory; returns the file's size. */
  private async writeAtomically(file: string, write: (tmp: string) => Promise<void>): Promise<number> {
    const tmp = `${file}.tmp-${randomBytes(6).toString('hex')}`;
    try {
      await write(tmp);
      const h = await fsp.open(tmp, 'r+');
      let size: number;
      try {
        // DuckDB creates its files by the umask (0644 as a rule): readable by every local user.
        await h.chmod(FILE_MODE);
        await h.sync();
        size = (await h.stat()).size;
      } finally {
        await h.close();
      }
      await fsp.rename(tmp, file);
      await fsyncDir(path.dirname(file));
      return size;
    } catch (e) {
      await fsp.rm(tmp, { force: true }).catch(() => undefined);
      throw e;
    }
  }

  /**
   * Deletes whole `date=` partitions whose day ended more than `days` days before `now` (0 keeps
   * everything), and temporary files older than an hour that a crash left behind. Returns the
   * partitions deleted.
   */
  async retain(days: number, now: number = Date.now()): Promise<string[]> {
    const deleted: string[] = [];
    let names: string[];
    try {
      names = await fsp.readdir(this.opts.dir);
    } catch {
      return deleted;
    }
    for (const name of names.sort()) {
      const m = DATE_DIR.exec(name);
      if (!m) continue;
      const dayEnd = Date.parse(`${m[1]}T00:00:00Z`) + DAY_MS;
      const dir = path.join(this.opts.dir, name);
      if (days > 0 && Number.isFinite(dayEnd) && dayEnd + days * DAY_MS <= now) {
        await fsp.rm(dir, { recursive: true, force: true });
        deleted.push(name);
        continue;
      }
      await removeStaleTmp(dir, now);
    }
    if (deleted.length > 0) await fsyncDir(this.opts.dir).catch(() => undefined);
    return deleted;
  }
}

async function removeStaleTmp(dateDir: string, now: number): Promise<void> {
  let hours: string[];
  try {
    hours = await fsp.readdir(dateDir);
  } catch {
    return;
  }
  for (const h of hours) {
    const dir = path.join(dateDir, h);
    let names: string[];
    try {
      names = await fsp.readdir(dir);
    } catch {
      continue;
    }
    for (const n of names) {
      if (!TMP.test(n)) continue;
      const p = path.join(dir, n);
      const st = await fsp.stat(p).catch(() => null);
      if (st && now - st.mtimeMs > STALE_TMP_MS) await fsp.rm(p, { force: true });
    }
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.access(p);
    return true;
  } catch {
    return false;
  }
}

/** mkdir that also fsyncs the parent when it created the directory (so the new entry survives a crash). */
async function mkdirSynced(dir: string): Promise<void> {
  try {
    await fsp.mkdir(dir, { mode: DIR_MODE });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const st = await fsp.stat(dir);
    if (!st.isDirectory()) throw Object.assign(new Error(`${dir} exists and is not a directory`), { code: 'ENOTDIR' });
    return;
  }
  await fsyncDir(path.dirname(dir));
}

async function fsyncDir(dir: string): Promise<void> {
  const h = await fsp.open(dir, 'r');
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}
