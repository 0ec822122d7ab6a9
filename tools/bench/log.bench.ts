/**
 * Benchmark of the bid log pipeline (not a test): realistic records, a real local Redis.
 *
 *   npm run build:test && node_modules/.bin/node --expose-gc .test-build/tools/bench/log.bench.js [--write]
 *
 * 1. Corpus: boots the real app in-process and sends it perturbed copies of the OpenRTB sample
 *    requests (test/fixtures/samples), so the request and response records are the ones the
 *    bidder really writes; reads them back from Redis.
 * 2. log() alone: CPU per record of the synchronous part (encode + append), records/s ceiling.
 * 3. Sustained: log() as fast as possible in 1 ms slices for a few seconds while the pipeline
 *    compresses and pushes to Redis; records/s that end up in Redis, per worker (one process).
 * 4. Compression ratio of realistic batches (8 MiB), zstd levels 1, 2 (the default), 3, 6, and gzip.
 * 5. The flush of a 10 s batch at 5000 bids/s (100 000 records): queued at once, then flushed with
 *    the default settings (frames of ≤ 4 MiB). A setImmediate ticker measures the event loop's
 *    slices while the flush runs (wall gap between ticks and the main thread's CPU time in it);
 *    a second run without the ticker measures the flush's own main-thread CPU time.
 * With --write the figures go to bench/RESULTS-log.md (machine, Node version, commit).
 */
import { execSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PerformanceObserver } from 'node:perf_hooks';
import * as zlib from 'node:zlib';
import 'reflect-metadata';
import Redis from 'ioredis';
import { type Config, loadConfig } from '../../src/config/config';
import { LogService } from '../../src/log/log.service';
import type { RawJson } from '../../src/log/log-line';
import type { LogRecord } from '../../src/bidlog/records';
import { RedisService } from '../../src/redis/redis.service';
import { sampleRequests as loadSamples } from '../../test/support/samples';
import { loggedLines } from './ship-corpus';
import { readCommandLine } from './cli';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisLib = require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as {
  startRedis(o: object): Promise<{ url: string; stop(): Promise<void> }>;
};

const WRITE = readCommandLine({ name: 'log.bench', usage: 'usage: node .test-build/tools/bench/log.bench.js [--write]   (--write: bench/RESULTS-log.md)', options: { write: { type: 'boolean' } } }).values.write === true;
const MiB = 1024 * 1024;
const quiet = { LOG_LEVEL: 'error' };

// ---------------------------------------------------------------------------------------------
// Realistic requests: the samples with fresh ids, users, devices and pages.

type Json = Record<string, unknown>;

/** The OpenRTB sample requests of the test fixtures (test/support/samples.ts). */
function sampleRequests(): Json[] {
  return loadSamples().map((x) => x.request as Json);
}

const UAS = [
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36',
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36',
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15',
];
const WORDS = ['news', 'sport', 'travel', 'recipes', 'finance', 'tech', 'review', 'weather', 'music', 'cars'];
const pick = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)];

function perturb(sample: Json): string {
  const r = structuredClone(sample) as Json & { device?: Json; user?: Json; site?: Json; source?: Json; app?: Json };
  r.id = randomUUID();
  if (r.device) {
    r.device.ip = `${10 + Math.floor(Math.random() * 200)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}.${Math.floor(Math.random() * 256)}`;
    r.device.ua = pick(UAS);
    if (r.device.ifa !== undefined) r.device.ifa = randomUUID();
  }
  if (r.user) {
    r.user.id = randomBytes(16).toString('hex');
    if (r.user.buyeruid !== undefined) r.user.buyeruid = randomBytes(12).toString('base64url');
  }
  if (r.site) {
    const domain = typeof r.site.domain === 'string' ? r.site.domain : 'example.com';
    r.site.page = `https://${domain}/${pick(WORDS)}/${Math.floor(Math.random() * 1e6)}-${pick(WORDS)}-${pick(WORDS)}.html`;
  }
  if (r.source) r.source.tid = randomUUID();
  return JSON.stringify(r);
}

interface Entry {
  record: LogRecord;
  raw: { key: string; json: string } | undefined;
}

/** What log() is called with: the raw body as UTF-8 bytes, as the bid path hands it over (src/bidding/bidding.service.ts). */
interface Call {
  record: LogRecord;
  raw: RawJson | undefined;
}

/** Sends `n` perturbed sample requests through the real app; returns the records it logged. */
function corpus(redisUrl: string, n: number): Promise<{ lines: string[]; statuses: Record<number, number> }> {
  const samples = sampleRequests();
  return loggedLines(redisUrl, n, () => perturb(pick(samples)), { ...quiet, ADMIN_PORT: '0', CAMPAIGNS_FILE: path.join(ROOT, 'data', 'campaigns.demo.json') });
}

/** Turns logged lines back into log() calls (request body / response body as raw JSON, like the bid path). */
function toEntries(lines: string[]): Entry[] {
  return lines.map((l) => {
    const { ts: _ts, worker: _w, req, res, ...rest } = JSON.parse(l) as Json;
    const record = rest as unknown as LogRecord;
    if (req !== undefined) return { record, raw: { key: 'req', json: JSON.stringify(req) } };
    if (res !== undefined) return { record, raw: { key: 'res', json: JSON.stringify(res) } };
    return { record, raw: undefined };
  });
}

/**
 * `n` calls cycling through the corpus, each with a fresh request id (also inside the raw body).
 * The bodies are bytes made beforehand: the bid path already holds them (the request as received,
 * the response as sent), so encoding them is not the log's cost.
 */
function freshEntries(base: Entry[], n: number): Call[] {
  const out: Call[] = new Array<Call>(n);
  const ids = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const e = base[i % base.length];
    if (i % base.length === 0) ids.clear();
    let id = ids.get(e.record.id);
    if (id === undefined) {
      id = randomUUID();
      ids.set(e.record.id, id);
    }
    out[i] = {
      record: { ...e.record, id },
      raw: e.raw ? { key: e.raw.key, bytes: Buffer.from(e.raw.json.replace(JSON.stringify(e.record.id), JSON.stringify(id))), singleLine: true } : undefined,
    };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// The service outside Nest (same classes, same wiring).

interface Service {
  log: LogService;
  redis: RedisService;
  close(): Promise<void>;
}

/** What the flusher's synchronous steps are seen by (one observer for the run, set per measurement). */
const stepObserver: { fn: ((ms: number, what: string) => void) | null } = { fn: null };

async function service(config: Config): Promise<Service> {
  const redis = new RedisService(config);
  redis.onModuleInit();
  const log = new LogService(config, redis, (ms, what) => stepObserver.fn?.(ms, what));
  log.onModuleInit();
  const until = Date.now() + 5000;
  while (!redis.isReady() && Date.now() < until) await sleep(10);
  return {
    log,
    redis,
    async close() {
      log.beforeApplicationShutdown();
      await log.onApplicationShutdown();
      await redis.onApplicationShutdown();
    },
  };
}

const spillDirs: string[] = [];
function benchConfig(redisUrl: string, key: string, env: Record<string, string> = {}): Config {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'logbench-spill-'));
  spillDirs.push(dir);
  return loadConfig({ ...quiet, REDIS_URL: redisUrl, LOG_REDIS_KEY: key, LOG_SPILL_DIR: dir, WORKER_ID: '0', ...env });
}

const gc = (globalThis as { gc?: () => void }).gc;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const cpuMs = (): number => {
  const u = process.threadCpuUsage();
  return (u.user + u.system) / 1000;
};
const fmt = (n: number, d = 0): string => n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

// ---------------------------------------------------------------------------------------------

interface FlushRun {
  fillMs: number;
  queuedBytes: number;
  wallMs: number;
  cpuMs: number;
  frames: number;
  compressedBytes: number;
  ratio: number;
  ticks: number;
  slices: GapStats;
  longestStepMs: number;
  steps: Map<string, number[]>;
  gcCount: number;
  gcMax: number;
}

interface GapStats {
  maxGap: number;
  p999: number;
  over2: number;
}

function gapStats(gaps: number[]): GapStats {
  const sorted = [...gaps].sort((a, b) => a - b);
  return {
    maxGap: sorted[sorted.length - 1] ?? 0,
    p999: sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.999))] ?? 0,
    over2: gaps.filter((g) => g > 2).length,
  };
}

/**
 * Gaps between setImmediate callbacks: each is one slice of other work on the event loop (or time
 * the main thread was preempted: on a shared machine run this with a higher priority, see below).
 * (Per-thread CPU clocks readable from Node — getrusage, /proc schedstat — tick at the scheduler's
 * 4 ms here, too coarse for 2 ms slices, so the wall clock it is.)
 */
function startTicker(): { stop(): number[] } {
  const gaps: number[] = [];
  let last = performance.now();
  let on = true;
  const tick = (): void => {
    const now = performance.now();
    gaps.push(now - last);
    last = now;
    if (on) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop() {
      on = false;
      return gaps;
    },
  };
}

async function idleTicker(ms: number): Promise<GapStats> {
  const t = startTicker();
  await sleep(ms);
  return gapStats(t.stop());
}

/** Queues `n` records at once, then measures their flush with the default settings (frames of ≤ 4 MiB). */
async function flushRun(redisUrl: string, base: Entry[], n: number, withTicker: boolean): Promise<FlushRun> {
  const s = await service(benchConfig(redisUrl, 'bench:flush', { LOG_MAX_MEMORY_BYTES: String(1024 * MiB) }));
  await sleep(100);
  // One synchronous run: the flush (compression) starts on the next loop turn. Records are made
  // on the fly (fresh ids), as short-lived as a request's, so the heap stays as small as a worker's.
  const f0 = performance.now();
  for (let i = 0; i < n; i++) {
    const e = base[i % base.length];
    const id = randomUUID();
    s.log.log({ ...e.record, id }, e.raw ? { key: e.raw.key, json: e.raw.json.replace(JSON.stringify(e.record.id), JSON.stringify(id)) } : undefined);
  }
  const fillMs = performance.now() - f0;
  const queuedBytes = s.log.stats().bytesQueued;
  // Collect the garbage of the fill (run with --expose-gc): what follows is the flush's own work.
  gc?.();
  const gcs: number[] = [];
  const obs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) gcs.push(e.duration);
  });
  obs.observe({ entryTypes: ['gc'] });
  const steps = new Map<string, number[]>();
  stepObserver.fn = (ms, what) => {
    let a = steps.get(what);
    if (a === undefined) steps.set(what, (a = []));
    a.push(ms);
  };
  const ticker = withTicker ? startTicker() : null;
  const c0 = cpuMs();
  const t0 = performance.now();
  while (s.log.stats().recordsFlushed < n) await sleep(withTicker ? 1 : 5);
  const wallMs = performance.now() - t0;
  const cpu = cpuMs() - c0;
  const gaps = ticker ? ticker.stop() : [];
  stepObserver.fn = null;
  await sleep(0);
  obs.disconnect();
  const st = s.log.stats();
  await s.close();
  const c = new Redis(redisUrl);
  await c.del('bench:flush');
  c.disconnect();
  return {
    fillMs,
    queuedBytes,
    wallMs,
    cpuMs: cpu,
    frames: st.batchesFlushed,
    compressedBytes: st.bytesFlushedCompressed,
    ratio: st.compressionRatio,
    ticks: gaps.length,
    longestStepMs: st.longestStepMs,
    steps,
    slices: gapStats(gaps),
    gcCount: gcs.length,
    gcMax: gcs.length > 0 ? Math.max(...gcs) : 0,
  };
}

const READING = `## How to read these figures

- **Request path.** log() is the only part a request pays for: the line is built by string
  concatenation (the raw request/response bodies are embedded, not re-serialized) and written as UTF-8
  into off-heap chunks. A bid costs one request and one response record.
- **Throughput.** "sustained" is what one worker's pipeline moves into Redis per second when
  log() is called as fast as the pipeline takes it; a worker serves far fewer bids than that.
- **Ratio.** zstd levels 1, 2 (the default), 3 and 6 on the corpus (NDJSON of real request/response records; ids, users,
  devices and pages vary; the bodies repeat the samples' structure).
- **Flush of a 10 s batch.** 10 s at 5000 bids/s queued at once (the worst case: normally
  LOG_FLUSH_BYTES starts a flush every ~0.5 s at that rate) and flushed with the default settings.
  Compression runs on the thread pool in 512 KiB jobs; the event loop only feeds the compressor, joins
  its output (~0.45 MB per 4 MiB frame) and sends the push (ioredis copies the frame once, the socket
  write once more). "The flusher's own
  steps" time exactly those; "event-loop slices" time everything between two turns of the loop
  (GC and callbacks included) and also count time the thread was preempted, which the last line (the
  same ticker with no flush) shows for the machine at that moment. On this shared 2-core machine,
  under heavier load from other jobs (load average 5-12) the wall-clock slices reach 10-100 ms with or
  without a flush: preemption, not work (a woken compression thread or redis-server can also take the
  event loop's core when no core is idle; shorter jobs keep those stalls short).
`;

async function main(): Promise<void> {
  const redisSrv = await redisLib.startRedis({});
  const out: string[] = [];
  const say = (s = ''): void => {
    out.push(s);
    process.stdout.write(s + '\n');
  };
  try {
    // 1. corpus
    const { lines, statuses } = await corpus(redisSrv.url, 4000);
    const reqLines = lines.filter((l) => l.includes('"type":"request"'));
    const resLines = lines.filter((l) => l.includes('"type":"response"'));
    const avg = (a: string[]) => a.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0) / Math.max(1, a.length);
    const base = toEntries(lines);
    say(`corpus: ${lines.length} records from 4000 requests through the app (answers ${JSON.stringify(statuses)}); ` + `request records ${fmt(avg(reqLines))} B, response records ${fmt(avg(resLines))} B on average`);

    // 2. log() alone (the pipeline runs, but we measure only the calls)
    {
      const s = await service(benchConfig(redisSrv.url, 'bench:calls', { LOG_MAX_MEMORY_BYTES: String(2048 * MiB) }));
      const all = freshEntries(base, 100_000);
      const kinds: Array<[string, Call[]]> = [
        ['request records (raw body embedded)', all.filter((e) => e.record.type === 'request')],
        ['response records (raw response embedded, or a no-bid reason)', all.filter((e) => e.record.type === 'response')],
        ['both', all],
      ];
      for (let i = 0; i < 20_000; i++) s.log.log(all[i].record, all[i].raw); // warm-up
      for (const [what, entries] of kinds) {
        await sleep(300);
        gc?.();
        const c0 = cpuMs();
        const t0 = performance.now();
        for (let i = 0; i < entries.length; i++) s.log.log(entries[i].record, entries[i].raw);
        const wall = performance.now() - t0;
        const cpu = cpuMs() - c0;
        say(`log() alone, ${what}: ${fmt((cpu * 1000) / entries.length, 2)} µs CPU per record (${fmt(entries.length / (wall / 1000))} records/s in one synchronous loop)`);
      }
      await s.close();
      const st = s.log.stats();
      if (st.recordsDropped + st.recordsSpilled > 0) say(`  (warning: ${st.recordsDropped} dropped, ${st.recordsSpilled} spilled)`);
      const c = new Redis(redisSrv.url);
      await c.del('bench:calls');
      c.disconnect();
    }

    // 3. sustained: log() in 1 ms slices while the pipeline compresses and pushes to Redis; the
    //    producer waits whenever the pipeline holds more than 4 batches, so what reaches Redis per
    //    second is what the log path sustains (a bid path cannot produce that much anyway).
    {
      const cfg = benchConfig(redisSrv.url, 'bench:sustained');
      const s = await service(cfg);
      const entries = freshEntries(base, 50_000);
      const seconds = 4;
      const high = 4 * cfg.logFlushBytes;
      const c0 = cpuMs();
      const t0 = performance.now();
      let n = 0;
      while (performance.now() - t0 < seconds * 1000) {
        const sliceEnd = performance.now() + 1;
        while (performance.now() < sliceEnd && s.log.stats().memoryBytes < high) {
          for (let k = 0; k < 20; k++) {
            const e = entries[n++ % entries.length];
            s.log.log(e.record, e.raw);
          }
        }
        await new Promise((r) => setImmediate(r));
      }
      const logged = n;
      await s.close();
      const wall = (performance.now() - t0) / 1000;
      const cpu = cpuMs() - c0;
      const st = s.log.stats();
      say(
        `sustained (one process; log() as fast as the pipeline takes it, in 1 ms slices, while it compresses and pushes to Redis): ` +
          `${fmt(st.recordsFlushed)} records in Redis in ${fmt(wall, 1)} s including the final flush = ${fmt(st.recordsFlushed / wall)} records/s ` +
          `(${fmt(st.bytesFlushedRaw / MiB / wall)} MiB/s of NDJSON; ${st.recordsDropped} dropped, ${st.recordsSpilled} spilled); ` +
          `main thread ${fmt((cpu * 1000) / logged, 2)} µs CPU per record, everything included`,
      );
      const c = new Redis(redisSrv.url);
      await c.del('bench:sustained');
      c.disconnect();
    }

    // 4. compression ratio on 8 MiB batches of realistic records
    {
      const entries = freshEntries(base, 20_000);
      const text = Buffer.from(
        entries
          .map((e) => {
            const { type, ...rest } = e.record;
            const rec: Json = { ts: Date.now(), type, worker: '0', ...rest };
            let l = JSON.stringify(rec);
            if (e.raw) l = `${l.slice(0, -1)},"${e.raw.key}":${e.raw.json ?? Buffer.from(e.raw.bytes).toString('utf8')}}`;
            return l;
          })
          .join('\n') + '\n',
      ).subarray(0, 8 * MiB);
      // Each level 5 times, the levels taking turns, fastest run kept: one run alone is at the
      // mercy of whatever else the shared cores do at that moment.
      const levels = [1, 2, 3, 6];
      const best = levels.map(() => Infinity);
      const ratio = levels.map(() => 0);
      for (let rep = 0; rep < 5; rep++) {
        levels.forEach((level, i) => {
          const t0 = performance.now();
          const z = zlib.zstdCompressSync(text, { params: { [zlib.constants.ZSTD_c_compressionLevel]: level } });
          best[i] = Math.min(best[i], performance.now() - t0);
          ratio[i] = text.length / z.length;
        });
      }
      const rows = levels.map((level, i) => `level ${level}: ${fmt(ratio[i], 1)}× at ${fmt(text.length / MiB / (best[i] / 1000))} MiB/s`);
      const gz = zlib.gzipSync(text);
      say(`compression of an 8 MiB batch (one thread, fastest of 5 runs): zstd ${rows.join('; ')} (the default, LOG_ZSTD_LEVEL, is 2); gzip -6 for comparison ${fmt(text.length / gz.length, 1)}×`);
    }

    // 5. the flush of a 10 s batch at 5000 bids/s
    {
      const N = 100_000;
      const runs: FlushRun[] = [];
      for (let i = 0; i < 3; i++) runs.push(await flushRun(redisSrv.url, base, N, true));
      const cpuRun = await flushRun(redisSrv.url, base, N, false);
      const idle = await idleTicker(Math.max(...runs.map((r) => r.wallMs)));
      const r0 = runs[0];
      say(
        `flush of a 10 s batch at 5000 bids/s: ${fmt(N)} records = ${fmt(r0.queuedBytes / MiB, 1)} MiB queued at once (${fmt(r0.fillMs)} ms of log() calls), ` +
          `flushed as ${r0.frames} frames of ≤ 4 MiB (${fmt(r0.compressedBytes / MiB, 1)} MiB in Redis, ${fmt(r0.ratio, 1)}×) in ${runs.map((r) => fmt(r.wallMs)).join(' / ')} ms wall (3 runs)`,
      );
      say(
        `  main-thread CPU of that flush (run without the ticker): ${fmt(cpuRun.cpuMs)} ms in total = ${fmt(cpuRun.cpuMs / (cpuRun.queuedBytes / MiB), 2)} ms per MiB; ` +
          `compression itself runs on the libuv thread pool`,
      );
      {
        const all = new Map<string, number[]>();
        for (const r of [...runs, cpuRun]) for (const [k, v] of r.steps) all.set(k, [...(all.get(k) ?? []), ...v]);
        const parts = [...all].map(([k, v]) => {
          const sorted = [...v].sort((a, b) => a - b);
          const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
          return `${k} ×${v.length}: median ${fmt(q(0.5), 3)}, p90 ${fmt(q(0.9), 3)}, max ${fmt(sorted[sorted.length - 1], 2)} ms`;
        });
        say(`  the flusher's own synchronous steps on the event loop (4 runs): ${parts.join('; ')}`);
      }
      for (const [i, r] of runs.entries()) {
        say(
          `  event-loop slices during flush run ${i + 1} (${fmt(r.ticks)} setImmediate ticks): longest ${fmt(r.slices.maxGap, 2)} ms, ` +
            `p99.9 ${fmt(r.slices.p999, 3)} ms, ${r.slices.over2} over 2 ms (GC ran ${r.gcCount} times meanwhile)`,
        );
      }
      say(
        `  the same ticker with nothing else to do for as long: longest ${fmt(idle.maxGap, 2)} ms, p99.9 ${fmt(idle.p999, 3)} ms, ` +
          `${idle.over2} over 2 ms (what the machine itself adds)`,
      );
    }
  } finally {
    await redisSrv.stop();
    for (const d of spillDirs) fs.rmSync(d, { recursive: true, force: true });
  }

  if (WRITE) {
    const commit = execSync('git rev-parse --short HEAD', { cwd: ROOT, encoding: 'utf8' }).trim();
    const dirty = execSync('git status --porcelain -- src tools/bench/log.bench.ts', { cwd: ROOT, encoding: 'utf8' }).trim() !== '';
    const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
    const file = path.join(ROOT, 'bench', 'RESULTS-log.md');
    const head =
      `# Bid log pipeline: measured figures\n\n` +
      `Written by \`node --expose-gc .test-build/tools/bench/log.bench.js --write\` (tools/bench/log.bench.ts; build first with \`npm run build:test\`).\n` +
      `Machine: ${os.cpus().length} × ${cpu}, ${fmt(os.totalmem() / 1024 ** 3)} GiB, ${os.platform()} ${os.release()}; Node ${process.version}; commit ${commit}${dirty ? ' with uncommitted changes' : ''}; ${new Date().toISOString()}.\n` +
      `Load average when it ran: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')} (${os.cpus().length} cores); process priority (nice) ${os.getPriority()}.\n` +
      `One process (one worker), a local redis-server on loopback. The machine's 2 cores are shared with other work, so wall\n` +
      `times are noisy; CPU times (process.threadCpuUsage, main thread only) are the steadier figures.\n\n`;
    const body = out.map((l) => (l.startsWith('  ') ? `  - ${l.trimStart()}` : `- ${l}`)).join('\n');
    fs.writeFileSync(file, head + body + '\n\n' + READING);
    process.stdout.write(`wrote ${path.relative(ROOT, file)}\n`);
  }
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
