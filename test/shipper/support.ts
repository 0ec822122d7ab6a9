// Helpers for the shipper tests: synthetic frames, the shipper as a real child process, and reading
// the shipped Parquet files back with DuckDB.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import Redis from 'ioredis';
import { partitionFiles } from '../../src/shipper/report-data';
import { NODE, ROOT, until } from '../log/support';

export { NODE, ROOT, until };

/** One zstd frame (checksum on, as the bidder writes them) of NDJSON lines. */
export function frameOf(lines: readonly string[]): Buffer {
  return zlib.zstdCompressSync(Buffer.from(`${lines.join('\n')}\n`), { params: { [zlib.constants.ZSTD_c_checksumFlag]: 1 } });
}

let seq = 0;
/**
 * `frames` frames of `perFrame` bid requests each (a request and a response record per id, the
 * response a 204), ts spread from `t0`; returns the frames and the ids.
 */
export function syntheticFrames(frames: number, perFrame: number, t0 = Date.now(), prefix = 's'): { frames: Buffer[]; ids: string[] } {
  const out: Buffer[] = [];
  const ids: string[] = [];
  for (let f = 0; f < frames; f++) {
    const lines: string[] = [];
    for (let i = 0; i < perFrame; i++) {
      const id = `${prefix}-${process.pid}-${seq++}`;
      ids.push(id);
      const ts = t0 + f * perFrame + i;
      lines.push(JSON.stringify({ ts, type: 'request', worker: '0', name: 'pub.example', id, req: { id, imp: [{ id: '1', banner: { w: 300, h: 250 } }] } }));
      lines.push(JSON.stringify({ ts: ts + 1, type: 'response', worker: '0', name: 'pub.example', id, status: 204, reason: 'no_candidates', ms: 0.25 }));
    }
    out.push(frameOf(lines));
  }
  return { frames: out, ids };
}

export async function redisClient(url: string): Promise<Redis> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await c.connect();
  return c;
}

/** A shipper process (`node dist/shipper/main.js`). */
export interface ShipperProc {
  proc: ChildProcess;
  /** Its admin server, once it listens. */
  adminUrl(): Promise<string>;
  output(): string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnShipper(env: Record<string, string>): ShipperProc {
  const proc = spawn(NODE, [path.join(ROOT, 'dist', 'shipper', 'main.js')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', SHIP_ADMIN_PORT: '0', SHIP_INTERVAL_MS: '100', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  return {
    proc,
    output: () => out,
    exited,
    async adminUrl() {
      let url = '';
      await until(
        'the shipper admin server',
        () => {
          const m = /"admin server listening","url":"([^"]+)"/.exec(out);
          if (m) url = m[1];
          if (!m && proc.exitCode !== null) throw new Error(`shipper exited: ${out}`);
          return m !== null;
        },
        20_000,
      );
      return url;
    },
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      const r = await exited;
      clearTimeout(t);
      return r;
    },
  };
}

export interface ShippedRow {
  type: string | null;
  id: string | null;
  frame: string;
  file: string;
}

/** Every record in the partitions under `dir`: type, id, frame hash, file. */
export async function readShipped(dir: string, columns = 'type, id, frame, filename AS file'): Promise<Array<Record<string, unknown>>> {
  const files = await partitionFiles(dir);
  if (files.length === 0) return [];
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const c = await db.connect();
  try {
    const r = await c.runAndReadAll(`SELECT ${columns} FROM read_parquet([${files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ')}], filename = true, union_by_name = true)`);
    return r.getRowObjectsJS();
  } finally {
    c.closeSync();
    db.closeSync();
  }
}

/** Asserts one request and one response record per id, nothing else of those types, and returns the rows. */
export async function assertShippedOnce(dir: string, ids: readonly string[]): Promise<ShippedRow[]> {
  const rows = (await readShipped(dir)) as unknown as ShippedRow[];
  const count = new Map<string, number>();
  for (const r of rows) {
    if (r.type !== 'request' && r.type !== 'response') continue;
    const k = `${r.type}:${r.id}`;
    count.set(k, (count.get(k) ?? 0) + 1);
  }
  const problems: string[] = [];
  for (const id of ids) {
    for (const t of ['request', 'response']) if (count.get(`${t}:${id}`) !== 1) problems.push(`${t} ${id}: ${count.get(`${t}:${id}`) ?? 0} times`);
  }
  const want = new Set(ids);
  for (const k of count.keys()) if (!want.has(k.slice(k.indexOf(':') + 1))) problems.push(`unexpected ${k}`);
  assert.deepEqual(problems.slice(0, 10), [], `${problems.length} problems`);
  return rows;
}

/** Waits until the list and every processing list of `key` are empty. */
export async function untilDrained(redis: Redis, key: string, ms = 30_000): Promise<void> {
  await until(
    `${key} and its processing lists to be empty`,
    async () => {
      if ((await redis.llen(key)) > 0) return false;
      const procs = await redis.keys(`${key}:proc:*`);
      return procs.length === 0;
    },
    ms,
  );
}

export function tmpDir(prefix: string): string {
  return fs.mkdtempSync(path.join(fs.realpathSync(os.tmpdir()), prefix));
}

/** GET a URL; resolves status and body text. */
export async function get(url: string): Promise<{ status: number; body: string }> {
  const r = await fetch(url);
  return { status: r.status, body: await r.text() };
}

/** The value of one Prometheus sample (`name{labels}` exactly as printed), or 0 when absent. */
export function metric(text: string, sample: string): number {
  for (const line of text.split('\n')) {
    if (line.startsWith(`${sample} `)) return Number(line.slice(sample.length + 1));
  }
  return 0;
}
