// Smoke run of `npm run loadtest`, so the load-test scripts cannot rot: a few seconds at a low rate
// of the reference scenario against the real cluster (PM2, 2 workers, Redis, the bid log) and the
// bare-Fastify baseline, then checks of the report it wrote. On a fresh machine the run first
// builds k6 from the Go module proxy (about 3 minutes).
//
// The run gets its own BIDDER_RUN_DIR (so its own PM2_HOME) and a private Redis: it never uses or
// stops a bidder a developer has running.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('npm run loadtest (smoke)', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'loadtest-smoke-'));
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'loadtest-smoke-run-'));
  after(() => {
    // Should the run have been cut short, its PM2 daemon must not outlive the directory it lives in.
    const pidFile = path.join(runDir, 'pm2', 'pm2.pid');
    const pid = fs.existsSync(pidFile) ? Number(fs.readFileSync(pidFile, 'utf8')) : 0;
    if (pid > 0) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone: what a run that stopped its cluster leaves
      }
    }
    fs.rmSync(out, { recursive: true, force: true });
    fs.rmSync(runDir, { recursive: true, force: true });
  });

  it('runs a short reference scenario against the bidder and the baseline and writes its report', { timeout: 20 * 60_000 }, () => {
    // A shared CI machine may keep a request waiting past the shed budget: the smoke run checks
    // errors and the log, so the bidder answers every request (its shed share is checked below).
    const env: NodeJS.ProcessEnv = { ...process.env, BIDDER_RUN_DIR: runDir, SHED_MAX_WAIT_MS: '0' };
    for (const k of ['PM2_HOME', 'PORT', 'REDIS_URL', 'LOG_REDIS_KEY', 'NODE_ENV']) delete env[k];
    const args = [
      path.join(ROOT, 'tools', 'loadtest.js'),
      '--scenario', 'reference',
      '--warmup', '2s',
      '--warmup-rate', '20',
      '--duration', '3s',
      '--rate', '50',
      // Latency is not what a smoke run on a shared CI machine checks; errors and the log are.
      '--p99', '2000',
      '--avg', '1000',
      '--out', out,
      '--no-results-md',
      '--cpu-rounds', '1',
      '--cpu-round-duration', '2s',
      '--generator-rounds', '1',
      '--generator-round-duration', '2s',
    ];
    const r = spawnSync(process.execPath, args, { cwd: ROOT, env, encoding: 'utf8', timeout: 19 * 60_000 });
    const output = `${r.stdout}\n${r.stderr}`;
    assert.equal(r.status, 0, output);

    for (const f of ['summary.json', 'report.md', 'index.html', 'latency-over-time.svg', 'throughput-over-time.svg', 'k6-bidder.json', 'k6-baseline.json']) {
      assert.ok(fs.existsSync(path.join(out, f)), `${f} missing\n${output}`);
    }
    const rep = JSON.parse(fs.readFileSync(path.join(out, 'summary.json'), 'utf8'));
    assert.equal(rep.scenario, 'reference');
    assert.equal(rep.environment.gogc, '400');
    assert.match(rep.environment.node, /^v24\./);
    for (const name of ['bidder', 'baseline']) {
      const t = rep.targets[name];
      assert.ok(t, `${name} missing`);
      assert.equal(t.completed, true);
      assert.equal(t.server.workers, 2, `${name} workers`);
      // 20/s for 2 s, then 50/s for 3 s, plus the setup probe.
      assert.ok(t.requests >= 180 && t.requests <= 215, `${name} requests ${t.requests}`);
      assert.equal(t.errors, 0, `${name} errors`);
      assert.equal(t.main.name, 'r50');
      for (const k of ['avg', 'p70', 'p80', 'p95', 'p99', 'p999']) assert.equal(typeof t.main.latency[k], 'number', `${name} ${k}`);
      assert.ok(t.main.cpu.serverUsPerReq > 0, `${name} CPU per request`);
      // The generator's CPU beside the server's, and whether the latencies can be read as the server's.
      assert.ok(t.main.cpu.k6UsPerReq > 0 && t.main.cpu.k6UsPerHttpReq > 0 && t.main.cpu.k6UsPerHttpReq <= t.main.cpu.k6UsPerReq, `${name} k6 CPU per request`);
      assert.ok(t.main.cpu.machineBusyShare > 0 && t.main.cpu.machineBusyShare <= 1.05, `${name} machine busy share`);
      assert.equal(t.latencyValid, t.main.cpu.latencyValid);
      const generatorHeavier = t.main.cpu.k6UsPerReq > t.main.cpu.serverUsPerReq;
      assert.equal(t.main.cpu.latencyValid, !generatorHeavier && !t.main.cpu.saturated, `${name} validity`);
      assert.equal(rep.warnings.some((w: string) => w.startsWith(`${name}, r50`)), !t.main.cpu.latencyValid, `${name} warning`);
      assert.equal(t.main.shedShare, 0, `${name} shed share`);
      assert.ok(t.memory.length === 2 && t.memory.every((w: { peakRssMB: number }) => w.peakRssMB > 10), `${name} RSS`);
      // The host's memory over the measured phase: RSS and PSS summed over the daemon and its processes.
      const host = t.main.memory && t.main.memory.host;
      assert.ok(host && host.samples >= 1 && host.peakMB > 50 && host.pss.peakMB > 20 && host.pss.peakMB <= host.peakMB, `${name} host memory ${JSON.stringify(host)}`);
      assert.ok(t.idleMemory && t.idleMemory.pssMB > 20, `${name} host memory at rest`);
      assert.ok(t.buckets.length >= 4, `${name} time buckets`);
    }
    // The bidder bids on some requests and leaves exactly one request and one response record each.
    const b = rep.targets.bidder;
    assert.ok(b.bidRate > 0, 'the bidder never bid');
    // Each worker's GC counters, read from its own /metrics at the phase's start and end.
    assert.equal(b.main.memory.gc.length, 2, JSON.stringify(b.main.memory.gc));
    for (const w of b.main.memory.gc) assert.ok(w.markCompactsPerMinute >= 0 && w.scavengesPerMinute >= 0 && w.heap.totalMB > 10, JSON.stringify(w));
    assert.equal(rep.targets.baseline.main.memory.gc, null, 'the baseline has no /metrics');
    // The log is counted after the CPU round, so the round's bid requests are in it too.
    assert.equal(rep.rounds.length, 1);
    const round = rep.rounds[0];
    for (const name of ['bidder', 'baseline']) {
      const x = round[name];
      assert.equal(x.completed, true, `round ${name} completed`);
      assert.equal(x.errors, 0, `round ${name} errors`);
      assert.ok(x.requests >= 80 && x.requests <= 140, `round ${name} requests ${x.requests}`);
      assert.ok(x.serverUsPerReq > 0, `round ${name} CPU per request`);
      assert.ok(fs.existsSync(path.join(out, `k6-${name}-round1.json`)), `k6-${name}-round1.json missing`);
    }
    assert.equal(typeof round.ratio, 'number');
    assert.equal(rep.comparison.rounds.n, 1);
    assert.equal(rep.comparison.rounds.median, round.ratio);
    assert.equal(b.logs.sent, b.requests + round.bidder.bidRequests + rep.generator[0].bid.bidRequests);
    assert.equal(b.logs.requestRecords, b.logs.sent);
    assert.equal(b.logs.responseRecords, b.logs.sent);
    assert.equal(b.logs.complete, true);
    assert.equal(typeof rep.comparison.cpuPerRequestRatio, 'number');

    // The generator round: the minimal script and k6/bid.js at the same rate against the bidder,
    // whose bid requests are in the log count above (the minimal script's one fixed id is not).
    assert.equal(rep.generator.length, 1);
    const g = rep.generator[0];
    assert.ok(g.minimal.k6UsPerHttpReq > 0 && g.bid.k6UsPerHttpReq > 0 && g.bid.k6UsPerReq > 0, 'generator CPU per request');
    assert.equal(g.minimal.rate, 50);
    assert.equal(g.bid.errors, 0);
    assert.equal(rep.comparison.generator.median, g.ratio);
    assert.ok(fs.existsSync(path.join(out, 'k6-generator1-minimal.json')) && fs.existsSync(path.join(out, 'k6-generator1-bid.json')));
    // On fewer than 4 cores k6 and the servers share them, and the report says what that means.
    const pinned = rep.environment.pinning.pinned;
    assert.equal(pinned, rep.environment.machine.cpus >= 4);
    assert.equal(rep.warnings.some((w: string) => /only the CPU figures and ratios are meaningful/.test(w)), rep.environment.machine.cpus < 4);

    const md = fs.readFileSync(path.join(out, 'report.md'), 'utf8');
    assert.match(md, /\| server \| avg \| p70 \| p80 \| p95 \| p99 \| p99\.9 \|/);
    assert.match(md, /\| bidder, 2 workers/);
    assert.match(md, /\| bare Fastify baseline, 2 workers/);
    assert.match(md, /GOGC=400/);
    assert.match(md, /Server CPU per request in alternating rounds/);
    assert.match(md, /\| 1 \| [\d.]+ µs \| [\d.]+ µs \| [\d.]+× \|/);
    assert.match(md, /## Generator cost/);
    assert.match(md, /k6\/bid\.js \/ minimal script: \*\*[\d.]+×\*\* per HTTP request/);
    assert.match(md, /## Are the latencies the server's\?/);
    for (const f of ['latency-over-time.svg', 'throughput-over-time.svg']) {
      const svg = fs.readFileSync(path.join(out, f), 'utf8');
      assert.ok(svg.startsWith('<svg') && svg.includes('<path '), `${f} has no lines`);
    }
    // Bars for the servers and k6 in the measured phase, and for the generator round.
    const bars = fs.readFileSync(path.join(out, 'cpu-per-phase.svg'), 'utf8');
    assert.ok((bars.match(/<\/title><\/rect>/g) ?? []).length >= 6, 'cpu-per-phase.svg has too few bars');
    const html = fs.readFileSync(path.join(out, 'index.html'), 'utf8');
    assert.match(html, /<table>/);
    assert.match(html, /<svg /);

    // Everything it started is gone: no PM2 daemon left in its run directory.
    assert.ok(!fs.existsSync(path.join(runDir, 'pm2', 'pm2.pid')), 'the PM2 daemon was left running');
  });
});
