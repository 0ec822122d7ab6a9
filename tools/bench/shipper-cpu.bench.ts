/**
 * CPU per record of the shipper's batch path (not a test), in-process so that a change can be
 * measured in a minute: realistic frames on a real local Redis, then per round the shipper's own
 * code — claim (src/shipper/shipper-redis.ts), toBatch, ParquetStore.store (stage, DuckDB load,
 * Parquet COPY, fsync) and remove — with its default settings (SHIP_BATCH_FRAMES 256,
 * SHIP_BATCH_BYTES 8 MiB, SHIP_DUCKDB_THREADS 1, SHIP_DUCKDB_MEMORY_MB 256).
 *
 *   npm run build:test && node_modules/.bin/node --expose-gc .test-build/tools/bench/shipper-cpu.bench.js [--rounds 6] [--records 26000] [--frames 10]
 *
 *   … .test-build/tools/bench/shipper-cpu.bench.js --process [--seconds 60] [--root DIR]
 *
 * With --process it measures the whole shipper process instead (DIR/dist/shipper/main.js, default
 * this checkout, built with `npm run build`; its defaults but SHIP_INTERVAL_MS as set in the
 * environment), fed as the bidder feeds it at the reference load: two workers, each pushing a frame
 * of its last second's 1,300 records every second, for --seconds; CPU is every thread of the
 * process from /proc/<pid>/stat, from the first push until the list is drained.
 *
 * A round is what a shipper at SHIP_INTERVAL_MS 10000 finds at the reference load (1300 bid
 * requests/s = 2600 records/s): 26,000 records in 10 frames of 2,600 (the bidder flushes once a
 * second per worker). CPU is utime + stime of this process (getrusage: every thread,
 * DuckDB's included) around the batch only; the first round warms up and is not counted. The
 * corpus (tools/bench/ship-corpus.ts) is made once and kept in .run/ship-corpus.ndjson.
 */
import { execSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Redis from 'ioredis';
import { DuckDBInstance } from '@duckdb/node-api';
import { toBatch } from '../../src/shipper/batch';
import { ParquetStore } from '../../src/shipper/parquet-store';
import { ShipperRedis } from '../../src/shipper/shipper-redis';
import { corpus, frames, freshLines } from './ship-corpus';
import { count, readCommandLine } from './cli';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisLib = require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as {
  startRedis(o: object): Promise<{ url: string; stop(): Promise<void> }>;
};

const USAGE = `usage: node .test-build/tools/bench/shipper-cpu.bench.js [--rounds 6] [--records 26000] [--frames 10]
       node .test-build/tools/bench/shipper-cpu.bench.js --process [--seconds 60] [--root <checkout>]`;
const args = readCommandLine({
  name: 'shipper-cpu.bench',
  usage: USAGE,
  options: { rounds: { type: 'string' }, records: { type: 'string' }, frames: { type: 'string' }, process: { type: 'boolean' }, seconds: { type: 'string' }, root: { type: 'string' } },
}).values;
const ROUNDS = count('shipper-cpu.bench', USAGE, args.rounds, 6);
const RECORDS = count('shipper-cpu.bench', USAGE, args.records, 26_000);
const FRAMES = count('shipper-cpu.bench', USAGE, args.frames, 10);
const CORPUS = path.join(ROOT, '.run', 'ship-corpus.ndjson');
const PROCESS = args.process === true;
const SECONDS = count('shipper-cpu.bench', USAGE, args.seconds, 60);
const SHIPPER_ROOT = typeof args.root === 'string' ? path.resolve(args.root) : ROOT;

const TICK = Number(execSync('getconf CLK_TCK').toString().trim()) || 100;
/** CPU seconds of a process (this one by default: getrusage, microseconds), all threads. */
function cpu(pid: number | 'self' = 'self'): number {
  if (pid === 'self') {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  }
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / TICK;
}

/** Peak resident memory of a process (VmHWM), MiB. */
function peakRssMiB(pid: number | 'self' = 'self'): number {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
}

const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function loadCorpus(redisUrl: string): Promise<string[]> {
  if (fs.existsSync(CORPUS)) return fs.readFileSync(CORPUS, 'utf8').split('\n').filter(Boolean);
  const { lines } = await corpus(redisUrl, 4000);
  fs.mkdirSync(path.dirname(CORPUS), { recursive: true });
  fs.writeFileSync(CORPUS, `${lines.join('\n')}\n`);
  return lines;
}

/** Records in the Parquet files under `dir` (read back by a separate DuckDB) and their bytes. */
async function parquetOf(dir: string): Promise<{ files: number; bytes: number; rows: number; distinct: number }> {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && !e.name.startsWith('.')) walk(p);
      else if (e.name.endsWith('.parquet')) files.push(p);
    }
  };
  walk(dir);
  const bytes = files.reduce((n, f) => n + fs.statSync(f).size, 0);
  if (files.length === 0) return { files: 0, bytes: 0, rows: 0, distinct: 0 };
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const conn = await db.connect();
  const list = files.map((f) => `'${f}'`).join(', ');
  const row = (await conn.runAndReadAll(`SELECT count(*) AS n, count(DISTINCT (type, id)) AS d FROM read_parquet([${list}])`)).getRowObjectsJS()[0] as { n: bigint; d: bigint };
  conn.closeSync();
  db.closeSync();
  return { files: files.length, bytes, rows: Number(row.n), distinct: Number(row.d) };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** The shipper process at the reference load: two workers' frames, one each a second. */
async function processRun(redisUrl: string, base: string[]): Promise<void> {
  const key = 'bench:shipproc';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shipcpu-proc-'));
  const admin = new Redis(redisUrl);
  const proc = spawn(process.execPath, [path.join(SHIPPER_ROOT, 'dist', 'shipper', 'main.js')], {
    cwd: SHIPPER_ROOT,
    env: { ...process.env, REDIS_URL: redisUrl, LOG_REDIS_KEY: key, SHIP_DIR: dir, SHIP_ADMIN_PORT: '0', SHIP_ID: 'benchproc', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    for (let i = 0; i < 200 && (await admin.exists(`${key}:hb:benchproc`)) === 0; i++) await sleep(50);
    const perWorker = 1300;
    const lines = freshLines(base, 2 * perWorker * SECONDS, Date.now(), 2600);
    const fr = frames(lines, perWorker);
    const pid = proc.pid;
    if (pid === undefined) throw new Error('the shipper did not start');
    const c0 = cpu(pid);
    const t0 = performance.now();
    for (let i = 0; i < fr.length; i += 2) {
      await admin.rpush(key, fr[i]);
      await sleep(500);
      if (i + 1 < fr.length) await admin.rpush(key, fr[i + 1]);
      const wait = t0 + (i / 2 + 1) * 1000 - performance.now();
      if (wait > 0) await sleep(wait);
    }
    while ((await admin.llen(key)) > 0 || (await admin.keys(`${key}:proc:*`)).length > 0) await sleep(20);
    const wall = (performance.now() - t0) / 1000;
    const used = cpu(pid) - c0;
    const rss = peakRssMiB(pid);
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
    const pq = await parquetOf(dir);
    process.stdout.write(
      `shipper process (${path.relative(process.cwd(), SHIPPER_ROOT) || '.'}, SHIP_INTERVAL_MS ${process.env.SHIP_INTERVAL_MS ?? 'default'}): ${fmt(lines.length)} records as 2 frames a second for ${SECONDS} s: ` +
        `CPU ${fmt(used, 2)} s over ${fmt(wall, 1)} s = ${fmt((used * 1e6) / lines.length, 1)} µs per record (${fmt((2e6 * used) / lines.length, 1)} µs per bid request); ` +
        `peak RSS ${fmt(rss)} MiB; ${pq.files} files, ${fmt(pq.bytes / pq.rows, 1)} B per record; rows ${fmt(pq.rows)}, distinct (type, id) ${fmt(pq.distinct)} of ${fmt(lines.length)}\n`,
    );
  } finally {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    admin.disconnect();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (PROCESS) {
    const srv = await redisLib.startRedis({});
    try {
      await processRun(srv.url, await loadCorpus(srv.url));
    } finally {
      await srv.stop();
    }
    return;
  }
  const srv = await redisLib.startRedis({});
  const admin = new Redis(srv.url);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shipcpu-'));
  const key = 'bench:shipcpu';
  const shipperId = 'bench';
  const store = new ParquetStore({ dir, shipperId, threads: 1, memoryMb: 256 });
  const redis = new ShipperRedis({ mode: 'single', url: srv.url, nodes: [] }, shipperId, 'bench-token');
  const gc = (globalThis as { gc?: () => void }).gc;
  try {
    const base = await loadCorpus(srv.url);
    await store.open();
    await redis.connect();
    await redis.heartbeat(key, 600_000);
    const per: number[] = [];
    const phases = { claim: [] as number[], store: [] as number[], remove: [] as number[] };
    let t = Date.now() - (ROUNDS + 1) * (RECORDS / 2.6);
    let counted = 0;
    for (let round = 0; round <= ROUNDS; round++) {
      const lines = freshLines(base, RECORDS, t, 2600);
      t += RECORDS / 2.6;
      await admin.rpush(key, ...frames(lines, Math.ceil(RECORDS / FRAMES)));
      gc?.();
      const c0 = cpu();
      const claimed = await redis.claim(key, 256, 8 * 1024 * 1024);
      if (!claimed || claimed.length === 0) throw new Error('nothing claimed');
      const c1 = cpu();
      const stored = await store.store(toBatch(claimed));
      const c2 = cpu();
      await redis.remove(key);
      const c3 = cpu();
      if (stored.records !== RECORDS) throw new Error(`stored ${stored.records} of ${RECORDS} records`);
      if (round === 0) continue;
      counted += RECORDS;
      per.push(((c3 - c0) * 1e6) / RECORDS);
      phases.claim.push(((c1 - c0) * 1e6) / RECORDS);
      phases.store.push(((c2 - c1) * 1e6) / RECORDS);
      phases.remove.push(((c3 - c2) * 1e6) / RECORDS);
    }
    const pq = await parquetOf(dir);
    const bytesPerRecord = pq.bytes / pq.rows;
    process.stdout.write(
      `shipper batch path: ${ROUNDS} rounds of ${fmt(RECORDS)} records in ${FRAMES} frames (after 1 warm-up): ` +
        `CPU per record median ${fmt(median(per), 1)} µs (rounds: ${per.map((x) => fmt(x, 1)).join(', ')}; medians of claim ${fmt(median(phases.claim), 1)}, toBatch + store ${fmt(median(phases.store), 1)}, remove ${fmt(median(phases.remove), 1)}); ` +
        `Parquet ${fmt(bytesPerRecord, 1)} B per record (${pq.files} files); rows ${fmt(pq.rows)}, distinct (type, id) ${fmt(pq.distinct)} of ${fmt(counted + RECORDS)} written\n`,
    );
  } finally {
    store.close();
    await redis.close();
    admin.disconnect();
    await srv.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
