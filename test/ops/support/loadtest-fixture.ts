// A small load-test result made without running k6: the plan of a short reference run (k6/lib/plan.js,
// as `npm run loadtest` makes it), k6 end-of-test summaries with the metrics that plan names (per
// phase and per time bucket), CPU samples per phase, and the rest of what tools/loadtest.js hands
// the report. tools/lib/loadtest-report.js then builds and writes the report from it as after a
// real run: summary.json, report.md, the SVG plots and index.html.
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

type Obj = Record<string, any>;

/* eslint-disable @typescript-eslint/no-require-imports */
const planLib = require(path.join(ROOT, 'k6', 'lib', 'plan.js')) as {
  settings(env: Record<string, string>): Obj;
  makePlan(s: Obj): Obj;
  answeredMetric(phase: string): string;
};
export const report = require(path.join(ROOT, 'tools', 'lib', 'loadtest-report.js')) as {
  build(ctx: Obj): Obj;
  write(dir: string, rep: Obj): { files: string[] };
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** A k6 trend's summary values around a median of `med` ms. */
function trend(count: number, med: number): Obj {
  return { count, avg: med * 1.1, min: med * 0.3, med, max: med * 9, 'p(70)': med * 1.2, 'p(80)': med * 1.35, 'p(90)': med * 1.6, 'p(95)': med * 2, 'p(99)': med * 3.2, 'p(99.9)': med * 6 };
}

/**
 * A k6 summary for `plan`: `rate` answered per second; latency rising over the run by `slope`; the
 * measured phase's first seconds (its head) `headSlowdown` times the latency at its start.
 */
function k6Summary(plan: Obj, base: number, slope: number, bidShare: number, headSlowdown = 1): Obj {
  const metrics: Obj = {};
  const counter = (name: string, count: number) => (metrics[name] = { type: 'counter', contains: 'default', values: { count, rate: count / plan.total } });
  let bids = 0;
  let all = 0;
  for (const p of plan.phases as Obj[]) {
    const n = Math.round(p.rate * p.duration);
    all += n;
    counter(`http_reqs{scenario:${p.name},kind:bid}`, n);
    counter(`http_reqs{scenario:${p.name}}`, Math.round(n * 1.02));
    counter(`dropped_iterations{scenario:${p.name}}`, 0);
    metrics[`http_req_duration{scenario:${p.name},kind:bid}`] = { type: 'trend', contains: 'time', values: trend(n, base + slope * (p.start + p.duration)) };
    metrics[planLib.answeredMetric(p.name)] = { type: 'trend', contains: 'time', values: trend(n, base + slope * (p.start + p.duration)) };
    for (const b of p.buckets as Obj[]) {
      const c = Math.round(p.rate * b.length);
      // A little wave so the lines are not flat.
      const med = base + slope * b.t + 0.05 * Math.sin(b.index);
      metrics[`${planLib.answeredMetric(p.name)}{tb:${b.index}}`] = { type: 'trend', contains: 'time', values: trend(c, med), thresholds: { 'max>=0': { ok: true } } };
      metrics[`bid_shed{tb:${b.index}}`] = { type: 'counter', contains: 'default', values: { count: 0, rate: 0 }, thresholds: { 'count>=0': { ok: true } } };
    }
    if (p.head) {
      // The first seconds at the rate slower than the rest by `headSlowdown`.
      const rest = Math.round(p.rate * (p.duration - p.head));
      metrics[`${planLib.answeredMetric(p.name)}{part:head}`] = { type: 'trend', contains: 'time', values: trend(n - rest, (base + slope * p.start) * headSlowdown), thresholds: { 'max>=0': { ok: true } } };
      metrics[`${planLib.answeredMetric(p.name)}{part:rest}`] = { type: 'trend', contains: 'time', values: trend(rest, base + slope * (p.start + p.duration)), thresholds: { 'max>=0': { ok: true } } };
      metrics[`bid_shed{scenario:${p.name},part:head}`] = { type: 'counter', contains: 'default', values: { count: 0, rate: 0 }, thresholds: { 'count>=0': { ok: true } } };
      metrics[`bid_shed{scenario:${p.name},part:rest}`] = { type: 'counter', contains: 'default', values: { count: 0, rate: 0 }, thresholds: { 'count>=0': { ok: true } } };
    }
    bids += Math.round(n * bidShare);
  }
  counter('http_reqs{kind:bid}', all);
  counter('http_reqs', Math.round(all * 1.02));
  counter('http_reqs{kind:bid,status:200}', bids);
  counter('dropped_iterations', 0);
  return { metrics };
}

/** CPU seconds of one phase for a server costing `usPerReq` µs per request, k6 ~300 µs. */
function cpu(plan: Obj, usPerReq: number): Obj {
  const out: Obj = {};
  for (const p of plan.phases as Obj[]) {
    const n = p.rate * p.duration;
    const server = (n * usPerReq) / 1e6;
    out[p.name] = { seconds: p.duration, serverCpu: server, redisCpu: server * 0.08, k6Cpu: (n * 300) / 1e6, daemonCpu: 0.01, workersCpu: [server / 2, server / 2], machineBusy: server * 1.1 + (n * 300) / 1e6, steal: 0 };
  }
  return out;
}

/** The memory of each phase (tools/loadtest.js, phaseMemory): the host's RSS and two workers' GC. */
function memoryPhases(plan: Obj): Obj {
  const out: Obj = {};
  for (const p of plan.phases as Obj[]) {
    const peakByProcess = [
      { name: 'worker 0', pid: 101, peakMB: 180, peakPssMB: 140 },
      { name: 'worker 1', pid: 102, peakMB: 176, peakPssMB: 136 },
      { name: 'shipper', pid: 103, peakMB: 120, peakPssMB: 90 },
      { name: 'PM2 daemon', pid: 100, peakMB: 60, peakPssMB: 30 },
    ];
    const gc = ['0', '1'].map((worker) => ({
      worker,
      minutes: p.duration / 60,
      markCompacts: 2,
      markCompactsPerMinute: 4,
      pauseMsPerMinute: 30,
      markingMsPerMinute: 42,
      markingMsPerMarkCompact: 10.5,
      scavengesPerMinute: 600,
      heap: { totalMB: 70, usedMB: 40, externalMB: 9, spacesMB: { new: 32, old: 30 } },
    }));
    out[p.name] = { host: { samples: p.duration, peakMB: 530, avgMB: 512, pss: { peakMB: 390, avgMB: 372, samples: p.duration }, peakByProcess }, gc };
  }
  return out;
}

/** The report object of a short reference run of the bidder and the baseline (5 s warm-up, 30 s at 1300/s). */
export function fixtureReport(runId: string): Obj {
  const plan = planLib.makePlan(planLib.settings({ SCENARIO: 'reference', WARMUP_DURATION: '5s', DURATION: '30s', BUCKET: '2s' }));
  const started = new Date('2026-01-15T10:00:00Z');
  const server = (workers: number) => ({ workers, pids: [101, 102] });
  const ctx = {
    runId,
    outDir: '',
    options: { validate: false },
    argv: ['--duration', '30s'],
    plan,
    planLib,
    fullLength: false,
    startedAt: started,
    finishedAt: new Date(started.getTime() + 40_000),
    k6: { version: 'v1.8.1' },
    git: { commit: '0123456789abcdef0123456789abcdef01234567', short: '0123456', subject: 'fixture', dirty: false },
    machine: { cpus: 2, cpuModel: 'test CPU', memoryGB: 24, kernel: 'Linux 6.x' },
    node: 'v24.21.0',
    gogc: 400,
    pinning: { pinned: false, reason: 'fixture' },
    targets: {
      bidder: {
        url: 'http://127.0.0.1:8080',
        script: 'bid',
        server: server(2),
        exitCode: 0,
        plan,
        data: k6Summary(plan, 0.9, 0.004, 0.62, 3),
        cpu: cpu(plan, 380),
        memoryByWorker: [{ worker: 0, peakRssMB: 121 }, { worker: 1, peakRssMB: 118 }],
        memoryPhases: memoryPhases(plan),
        idleMemory: { rssMB: 470.4, pssMB: 330.2 },
        restarts: 0,
        idleCores: 0.4,
        logs: {
          sent: 39500,
          requestRecords: 39500,
          responseRecords: 39500,
          lists: 1,
          key: 'bidlog',
          frames: 12,
          compressedMB: 3.1,
          rawMB: 41.8,
          duplicates: 0,
          badFrames: 0,
          complete: true,
          lost: 0,
          extra: 0,
        },
      },
      baseline: { url: 'http://127.0.0.1:8090', script: 'bid', server: server(2), exitCode: 0, plan, data: k6Summary(plan, 0.6, 0.002, 0), cpu: cpu(plan, 260), memoryByWorker: null, restarts: 0, idleCores: 0.6 },
    },
    overload: {},
  };
  return report.build(ctx);
}

/**
 * The report object of a short soak of the bidder (5 s warm-up, 120 s at 1300/s) with samples every
 * 2 s of what the soak sampler reads: two workers' RSS (flat after a warm-up), the PM2 daemon's and
 * the shipper's, Redis's used_memory and the bid log's backlog (filling and drained).
 */
export function soakFixtureReport(runId: string): Obj {
  const plan = planLib.makePlan(planLib.settings({ SCENARIO: 'soak', WARMUP_DURATION: '5s', DURATION: '120s', BUCKET: '5s' }));
  const started = new Date('2026-01-15T10:00:00Z');
  const t0 = started.getTime() + 3_000;
  const samples: Obj[] = [];
  for (let x = -2; x <= 126; x += 2) {
    const phase = (x % 20) / 20;
    samples.push({
      t: t0 + x * 1000,
      workers: [0, 1].map((id) => ({ pmId: id, pid: 101 + id, rssMB: 150 + id * 8 + Math.min(x, 15) + 2 * Math.sin(x / 5) })),
      daemonRssMB: 62,
      shipperRssMB: 140 + 30 * phase,
      redisUsedMB: 1.5 + 6 * phase + x / 100,
      redisKeys: 60 + 26 * (x + 2),
      redisKeysWithTtl: 26 * (x + 2),
      log: { bidder_log_bytes_queued: 2e6 * ((x % 10) / 10), bidder_log_bytes_pending: x % 10 === 0 ? 4e5 : 0, bidder_log_spill_bytes: 0, bidder_log_backlog_bytes: 5e6 * phase },
      shipper: { shipper_backlog_frames: Math.round(4 * phase) },
    });
  }
  const sent = Math.round(plan.phases.reduce((a: number, p: Obj) => a + p.rate * p.duration, 0));
  const ctx = {
    runId,
    outDir: '',
    options: { validate: false },
    argv: ['--scenario', 'soak', '--duration', '120s', '--sample-interval', '2s'],
    plan,
    planLib,
    fullLength: false,
    startedAt: started,
    finishedAt: new Date(started.getTime() + 150_000),
    k6: { version: 'v1.8.1' },
    git: { commit: '0123456789abcdef0123456789abcdef01234567', short: '0123456', subject: 'fixture', dirty: false },
    machine: { cpus: 2, cpuModel: 'test CPU', memoryGB: 24, kernel: 'Linux 6.x' },
    node: 'v24.21.0',
    gogc: 400,
    pinning: { pinned: false, reason: 'fixture' },
    targets: {
      bidder: {
        url: 'http://127.0.0.1:8080',
        script: 'bid',
        server: { workers: 2, pids: [101, 102] },
        exitCode: 0,
        plan,
        t0,
        soak: { intervalS: 2, samples },
        data: k6Summary(plan, 0.9, 0, 0.62),
        cpu: cpu(plan, 380),
        memoryByWorker: [{ worker: 0, peakRssMB: 171 }, { worker: 1, peakRssMB: 178 }],
        restarts: 0,
        idleCores: 0.4,
        logs: { sent, requestRecords: sent, responseRecords: sent, lists: 1, key: 'bidlog', frames: 0, compressedMB: 0, rawMB: 0, duplicates: 0, badFrames: 0, complete: true, lost: 0, extra: 0, shippedRecords: 2 * sent },
      },
    },
    overload: {},
  };
  return report.build(ctx);
}
