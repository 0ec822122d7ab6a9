'use strict';
// `npm run loadtest`: the one-command benchmark (docs/loadtest.md).
//
// Finds (or builds) k6, brings up Redis and the bidder's PM2 cluster when they are not running
// (scripts/start.js, which also builds dist/ when src/ is newer), runs a k6 scenario (k6/bid.js)
// against it while sampling the server's and k6's CPU and memory from /proc, checks that every
// request left its records in the bid log, runs the same load against a bare Fastify baseline
// (tools/bench/baseline/) with as many workers, measures the generator itself (k6/bid.js beside the
// minimal k6/minimal.js at the same rate), stops what it started, and writes a report (JSON,
// Markdown, SVG plots, HTML) to k6/results/<timestamp>/. With `--target <url>` only k6 runs,
// against a bidder deployed elsewhere.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { findK6 } = require('./lib/loadtest-k6');
const { cpuSeconds, memory, pssMB, machineCpu, machine, pm2Processes, pm2DaemonPid, cpuSplit, pin } = require('./lib/loadtest-proc');
const cluster = require('./lib/loadtest-cluster');
const { LogCounter } = require('./lib/loadtest-logs');
const report = require('./lib/loadtest-report');
const { SoakSampler } = require('./lib/loadtest-soak');
const { hostMemory, scrapeWorkers, gcRates } = require('./lib/loadtest-memory');
const { freePort } = require('../scripts/lib/redis');
const { HELP, parseArgs } = require('./lib/loadtest-args');

const ROOT = path.resolve(__dirname, '..');
const K6_SCRIPTS = { bid: path.join(ROOT, 'k6', 'bid.js'), minimal: path.join(ROOT, 'k6', 'minimal.js') };
const GOGC = '400';
const IDLE_SAMPLE_MS = 2000;
// Stop k6, then clean up what the run started, on any of these.
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** The k6 environment of the scenario; the plan is rebuilt from the same values by k6/lib/plan.js. */
function k6Env(o) {
  const e = { SCENARIO: o.scenario };
  if (o.scenario !== 'ramp' && o.duration) e.DURATION = o.duration;
  if (o.scenario === 'ramp' && o.duration) e.RAMP_STEP_DURATION = o.duration;
  const set = (k, v) => {
    if (v !== null && v !== undefined) e[k] = String(v);
  };
  set('RATE', o.rate);
  set('WARMUP_DURATION', o.warmup);
  set('WARMUP_RATE', o.warmupRate);
  set('P99_MS', o.p99);
  set('AVG_MS', o.avg);
  set('RAMP_START', o.rampStart);
  set('RAMP_STEP', o.rampStep);
  set('RAMP_MAX', o.rampMax);
  set('RAMP_P99_MS', o.rampP99);
  set('NOTICE_SHARE', o.notices);
  if (o.validate) e.VALIDATE_SHARE = '1';
  return e;
}

function log(msg) {
  process.stderr.write(`${msg}\n`);
}

/** Newest modification time of the bidder's sources (ms). */
function newestSource(dir) {
  let t = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) t = Math.max(t, newestSource(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.spec.ts')) t = Math.max(t, fs.statSync(p).mtimeMs);
  }
  return t;
}

function gitInfo() {
  const git = (args) => {
    try {
      return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    } catch {
      return '';
    }
  };
  const commit = git(['rev-parse', 'HEAD']);
  const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'package.json', 'package-lock.json', 'k6', 'tools/bench/baseline']) !== '';
  return { commit: commit || 'unknown', short: commit.slice(0, 10), dirty, subject: git(['log', '-1', '--format=%s']) };
}

/** Redis's own CPU seconds (INFO cpu; on a cluster, of every node), or null. */
async function redisCpu(conns) {
  if (!conns || conns.length === 0) return null;
  try {
    let sum = 0;
    for (const conn of conns) {
      const info = await conn.info('cpu');
      const num = (k) => Number((new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info) || [])[1] || 0);
      sum += num('used_cpu_user') + num('used_cpu_sys');
    }
    return sum;
  } catch {
    return null;
  }
}

/** `shipper_records_shipped_total` of the shipper whose metrics are at `url`, or null. */
function recordsShipped(url) {
  if (!url) return Promise.resolve(null);
  return new Promise((resolve) => {
    const req = http.get(`${url}/metrics`, { agent: false, timeout: 1000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => {
        const m = /^shipper_records_shipped_total (\S+)$/m.exec(body);
        resolve(res.statusCode === 200 && m ? Number(m[1]) : null);
      });
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
  });
}

/**
 * Runs k6 (`script`: bid or minimal) against the bid endpoint `target` while sampling the
 * server's processes and k6's own CPU. `server.pm2Home` gives the PM2 daemon, the workers and the
 * other apps it runs (the shipper);
 * `server.redisUrl` (bidder only) adds Redis's CPU; without `server` (a remote target) only k6
 * and the machine are measured. `k6Cpus`: the cores k6 is pinned to (taskset), or null.
 */
async function runLoad({ name, k6, target, strict, server, env, outDir, runId, interrupted, script = 'bid', k6Cpus = null }) {
  let procs = [];
  // Every other process the server's PM2 daemon runs for it (the bidder's bid log shipper): its CPU
  // is part of what a bid costs on the host, so it is counted with the workers and the daemon.
  let helpers = [];
  let daemon = null;
  if (server) {
    const all = (await pm2Processes(server.pm2Home)).filter((p) => p.status === 'online');
    procs = all.filter((p) => p.name === server.app);
    helpers = all.filter((p) => p.name !== server.app);
    daemon = pm2DaemonPid(server.pm2Home);
    if (!procs.length || !daemon) log(`loadtest: ${name}: no PM2 processes found under ${server.pm2Home}: server CPU will not be measured`);
    else log(`loadtest: ${name}: server CPU counts ${procs.length} ${server.app} workers, the PM2 daemon${helpers.map((h) => ` and ${h.name}`).join('')}`);
  }
  const pids = procs.map((p) => p.pid).concat(helpers.map((p) => p.pid));
  if (daemon) pids.push(daemon);
  let redisConn = null;
  if (server && (server.redisUrl || server.redisNodes)) {
    const Redis = require(path.join(ROOT, 'node_modules', 'ioredis'));
    const addresses = server.redisNodes ? server.redisNodes.split(',').map((hp) => `redis://${hp}`) : [server.redisUrl];
    redisConn = addresses.map((u) => new Redis(u, { lazyConnect: true, maxRetriesPerRequest: 1 }));
    await Promise.all(redisConn.map((c) => c.connect())).catch(() => {
      for (const c of redisConn) c.disconnect();
      redisConn = null;
    });
  }

  const summaryPath = path.join(outDir, `k6-${name}.json`);
  const k6Env = { ...process.env, GOGC, K6_NO_USAGE_REPORT: 'true' };
  // Settings go in as -e flags and k6 sees no other environment variables in __ENV, so the plan
  // k6 builds is the one rebuilt here from the same values.
  const vars = { ...env, TARGET_URL: target, STRICT: strict ? '1' : '0', RUN_ID: runId, SUMMARY_JSON: summaryPath };
  const args = ['run', '--quiet', '--no-color', '--no-usage-report', '--address', '127.0.0.1:0', '--include-system-env-vars=false'];
  for (const [k, v] of Object.entries(vars)) args.push('-e', `${k}=${v}`);
  args.push(K6_SCRIPTS[script]);
  const shown = Object.entries(vars).map(([k, v]) => `-e ${k}=${k === 'SUMMARY_JSON' ? path.relative(ROOT, v) : v}`);
  log(`loadtest: ${name}: ${k6Cpus ? `taskset -c ${k6Cpus} ` : ''}GOGC=${GOGC} k6 run ${shown.join(' ')} k6/${script}.js`);
  // The server's CPU at rest, for reading per-request figures at low rates.
  let idleCores = null;
  let idleMemory = null;
  if (pids.length) {
    const idleA = pids.map(cpuSeconds);
    const idleT = Date.now();
    await new Promise((r) => setTimeout(r, IDLE_SAMPLE_MS));
    const idleB = pids.map(cpuSeconds);
    idleCores = idleA.reduce((acc, v, i) => acc + (idleB[i] ?? NaN) - (v ?? NaN), 0) / ((Date.now() - idleT) / 1000);
    // The host's memory at rest, summed as in phaseMemory(): null when a process could not be read.
    const sum = (read) => pids.reduce((acc, pid) => acc + (read(pid) ?? NaN), 0);
    const rss = sum((pid) => (memory(pid) || {}).rssMB);
    const pss = sum(pssMB);
    idleMemory = { rssMB: Number.isFinite(rss) ? rss : null, pssMB: Number.isFinite(pss) ? pss : null };
  }

  // k6 runs in its own process group: a Ctrl-C reaches it once, forwarded from here (a second one
  // would make k6 quit without its summary). taskset execs k6 in its own process (same pid).
  const [cmd, cmdArgs] = k6Cpus ? ['taskset', ['-c', k6Cpus, k6.bin, ...args]] : [k6.bin, args];
  const child = spawn(cmd, cmdArgs, { cwd: ROOT, env: k6Env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const stdoutFile = fs.createWriteStream(path.join(outDir, `k6-${name}.stdout.txt`));
  const stderrFile = fs.createWriteStream(path.join(outDir, `k6-${name}.stderr.txt`));
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    stdoutFile.write(d);
  });

  const snaps = new Map(); // seconds since t0 -> snapshot
  // The shipper's records shipped so far (its metrics port), for its CPU per record shipped.
  const shipperUrl = helpers.length && server && server.shipperUrl ? server.shipperUrl : null;
  const take = async () => {
    const cpu = {};
    for (const pid of pids) cpu[pid] = cpuSeconds(pid);
    const snap = { t: Date.now(), cpu, k6: cpuSeconds(child.pid), machine: machineCpu(), redis: await redisCpu(redisConn), shipped: await recordsShipped(shipperUrl) };
    // Each worker's GC counters (its own /metrics on the admin port), after the CPU readings.
    if (server && server.adminUrl && procs.length) snap.gc = await scrapeWorkers(`${server.adminUrl}/metrics`, procs.length);
    return snap;
  };
  const timers = [];
  let t0 = null;
  const { makePlan, settings } = await import(path.join(ROOT, 'k6', 'lib', 'plan.js'));
  let plan = makePlan(settings({ ...env }));
  const boundaries = [...new Set(plan.phases.flatMap((p) => [p.start, p.start + p.duration]))].sort((a, b) => a - b);
  let warned = 0;
  let errBuf = '';
  child.stderr.on('data', (d) => {
    stderrFile.write(d);
    errBuf += d;
    let nl;
    while ((nl = errBuf.indexOf('\n')) >= 0) {
      const line = errBuf.slice(0, nl);
      errBuf = errBuf.slice(nl + 1);
      const m = /LOADTEST_T0 (\d+)/.exec(line);
      if (m && t0 === null) {
        t0 = Number(m[1]);
        for (const b of boundaries) {
          timers.push(
            setTimeout(
              () => {
                void take().then((s) => snaps.set(b, s));
              },
              Math.max(0, t0 + b * 1000 - Date.now()),
            ),
          );
        }
      } else if (/level=(warning|error)/.test(line) && warned < 12) {
        warned++;
        log(`k6 (${name}): ${line.replace(/^time="[^"]*" /, '')}`);
      }
    }
  });

  // Peak memory per worker (VmRSS sampled each second; VmHWM read at the end), and every server
  // process's VmRSS each second (the host's resident memory per phase, phaseMemory()).
  const maxRss = {};
  const rssSamples = [];
  let k6Last = null; // k6's CPU seconds, sampled each second: it cannot be read once k6 exits
  const rssTimer = setInterval(() => {
    const c = cpuSeconds(child.pid);
    if (c !== null) k6Last = { t: Date.now(), cpu: c };
    const rss = {};
    const pss = {};
    for (const pid of pids) {
      const m = memory(pid);
      if (m && m.rssMB !== null) rss[pid] = m.rssMB;
      const p = pssMB(pid);
      if (p !== null) pss[pid] = p;
    }
    rssSamples.push({ t: Date.now(), rss, pss });
    for (const p of procs) if (rss[p.pid] !== undefined) maxRss[p.pid] = Math.max(maxRss[p.pid] || 0, rss[p.pid]);
  }, 1000);
  const started = Date.now();
  const progress = setInterval(() => {
    const el = Math.round((Date.now() - (t0 || started)) / 1000);
    log(`loadtest: ${name}: ${el} s of ${plan.scenario === 'ramp' ? 'at most ' : ''}${Math.round(plan.total)} s`);
  }, 15_000);

  const stopK6 = () => child.kill('SIGINT');
  for (const sig of SIGNALS) process.on(sig, stopK6);
  const exitCode = await new Promise((resolve) => {
    child.once('error', (e) => {
      log(`loadtest: ${name}: cannot run ${cmd}: ${e.message}`);
      resolve(-1);
    });
    child.once('exit', (code) => resolve(code === null ? -1 : code));
  });
  for (const sig of SIGNALS) process.removeListener(sig, stopK6);
  clearInterval(rssTimer);
  clearInterval(progress);
  for (const t of timers) clearTimeout(t);
  // After k6's exit: its own CPU reads null here, phaseCpu() falls back on k6Last.
  const final = await take();
  await new Promise((r) => stdoutFile.end(r));
  await new Promise((r) => stderrFile.end(r));
  if (redisConn) for (const c of redisConn) c.disconnect();
  if (interrupted()) log(`loadtest: ${name}: interrupted`);

  const memoryByWorker = procs.map((p) => {
    const m = memory(p.pid);
    return { pmId: p.pmId, pid: p.pid, peakRssMB: m && m.hwmMB !== null ? m.hwmMB : maxRss[p.pid] || null, maxSampledRssMB: maxRss[p.pid] || null };
  });
  let restarts = 0;
  if (server) {
    const after = await pm2Processes(server.pm2Home).catch(() => []);
    restarts = after.filter((p) => procs.some((q) => q.pmId === p.pmId && (q.pid !== p.pid || q.restarts !== p.restarts))).length;
  }

  let data = null;
  try {
    data = JSON.parse(fs.readFileSync(summaryPath, 'utf8'));
    plan = data.loadtest.plan;
  } catch {
    /* k6 failed before its summary */
  }
  process.stdout.write(stdout.trim() ? `${stdout.trim()}\n` : '');
  return {
    name, script, url: target, exitCode, data, plan, t0, snaps, final, pids, workers: procs, helpers, daemonPid: daemon, memoryByWorker, rssSamples, restarts,
    idleCores: idleCores !== null && Number.isFinite(idleCores) ? idleCores : null,
    idleMemory,
    k6Last,
    k6Cpus,
  };
}

/** CPU of each phase from the snapshots: the server (workers + daemon + shipper), Redis, k6, the machine. */
function phaseCpu(run) {
  const out = {};
  const measured = run.plan.phases;
  // k6's own CPU at the end of the last phase: the latest reading taken while it still ran.
  const lastK6 = [...run.snaps.values()].reduce((a, s) => (s.k6 !== null && (!a || s.t > a.t) ? { t: s.t, k6: s.k6 } : a), null);
  const k6Final = run.k6Last && (!lastK6 || run.k6Last.t >= lastK6.t) ? run.k6Last.cpu : lastK6 ? lastK6.k6 : null;
  for (const p of measured) {
    const a = run.snaps.get(p.start);
    // The phase's end, or k6's exit when it stopped earlier (a ramp's failed step, Ctrl-C).
    const b = run.snaps.get(p.start + p.duration) || run.final;
    if (!a || !b) continue;
    const sum = (s) => run.pids.reduce((acc, pid) => acc + (s.cpu[pid] === null || s.cpu[pid] === undefined ? NaN : s.cpu[pid]), 0);
    const server = run.pids.length ? sum(b) - sum(a) : NaN;
    const delta = (pid) => (a.cpu[pid] === null || b.cpu[pid] === null ? null : b.cpu[pid] - a.cpu[pid]);
    const k6End = b.k6 !== null ? b.k6 : k6Final;
    const seconds = (b.t - a.t) / 1000;
    out[p.name] = {
      seconds,
      serverCpu: Number.isFinite(server) ? server : null,
      daemonCpu: run.daemonPid ? delta(run.daemonPid) : null,
      workersCpu: run.workers.map((w) => delta(w.pid)),
      // The other processes of the server's PM2 daemon (the shipper), included in serverCpu.
      helpersCpu: (run.helpers || []).length ? run.helpers.reduce((acc, h) => acc + (delta(h.pid) ?? NaN), 0) : null,
      // Records the shipper stored during the phase (it ships in batches, so the phase's edges cut them as they cut its CPU).
      shippedRecords: a.shipped !== null && a.shipped !== undefined && b.shipped !== null && b.shipped !== undefined ? b.shipped - a.shipped : null,
      redisCpu: a.redis !== null && b.redis !== null ? b.redis - a.redis : null,
      k6Cpu: a.k6 !== null && k6End !== null ? k6End - a.k6 : null,
      machineBusy: b.machine.busy - a.machine.busy,
      machineTotal: b.machine.total - a.machine.total,
      steal: b.machine.steal - a.machine.steal,
    };
  }
  return out;
}

/**
 * Memory of each phase: the host's resident memory (every process of the server's PM2 daemon and
 * the daemon, summed each second, as RSS and as PSS) at its peak and on average, each process's peak, and each
 * worker's garbage collections between the phase's two snapshots.
 */
function phaseMemory(run) {
  const out = {};
  if (!run.pids.length || !run.t0) return out;
  const names = {};
  for (const w of run.workers) names[w.pid] = `worker ${w.pmId}`;
  for (const h of run.helpers || []) names[h.pid] = h.name;
  if (run.daemonPid) names[run.daemonPid] = 'PM2 daemon';
  for (const p of run.plan.phases) {
    const a = run.snaps.get(p.start);
    const b = run.snaps.get(p.start + p.duration) || run.final;
    const from = run.t0 + p.start * 1000;
    const to = b ? b.t : from + p.duration * 1000;
    const host = hostMemory(run.rssSamples || [], run.pids, from, to);
    // The same readings' PSS: each page shared between processes counted once in the sum.
    const pss = hostMemory((run.rssSamples || []).map((x) => ({ t: x.t, rss: x.pss || {} })), run.pids, from, to);
    out[p.name] = {
      host: host && {
        ...host,
        pss: pss && { peakMB: pss.peakMB, avgMB: pss.avgMB, samples: pss.samples },
        peakByProcess: run.pids.map((pid) => ({ name: names[pid] || String(pid), pid, peakMB: host.peakByPid[pid], peakPssMB: pss ? pss.peakByPid[pid] : null })),
      },
      gc: a && b && a.gc && b.gc ? gcRates(a.gc, b.gc) : null,
    };
  }
  return out;
}

async function countLogs({ bidder, runId, from, expected, graceful }) {
  const counter = new LogCounter({ redisUrl: bidder.redisUrl, nodes: bidder.redisNodes, key: bidder.logKey, runId, from, shipDir: bidder.shipDir || null });
  if (graceful) return counter.scan();
  // A cluster we did not start flushes on its own schedule: poll until complete or out of time.
  const until = Date.now() + bidder.logWait * 1000;
  for (;;) {
    const r = await counter.scan();
    if ((r.requestRecords >= expected && r.responseRecords >= expected) || Date.now() > until) return r;
    await new Promise((res) => setTimeout(res, 2000));
  }
}

/** Bid requests k6 counted in a run (win notices and impressions apart). */
function bidRequests(run) {
  const m = run.data ? run.data.metrics['http_reqs{kind:bid}'] || run.data.metrics.http_reqs : null;
  return m ? m.values.count : 0;
}

/**
 * Stops the bidder cluster when this run started it (a graceful stop flushes every worker's log
 * buffer, docs/log-pipeline.md; a cluster it did not start is waited for instead), then checks that every
 * request k6 counted left its two records, and puts the result on the main run.
 */
async function finishBidder(side, { runId, o, interrupted }) {
  const { bidder, run, sent } = side;
  side.logsCounted = true;
  const graceful = bidder.startedPm2 && !bidder.startedRedis;
  if (graceful) {
    log('loadtest: stopping the bidder cluster (flushes the bid log)');
    await bidder.stop();
    side.stopped = true;
  } else {
    log(`loadtest: waiting up to ${o.logWait} s for the bid log to be flushed`);
  }
  run.logs = { sent, ...(await countLogs({ bidder, runId, from: side.from, expected: sent, graceful })) };
  // Every request k6 counted must have both records. When k6 stops early (the ramp's end, or
  // Ctrl-C) it cancels the requests in flight: those reached the bidder (and its log) without being counted, so more records
  // than requests is not a loss; in the reference scenario nothing is cancelled.
  const found = Math.min(run.logs.requestRecords, run.logs.responseRecords);
  run.logs.lost = Math.max(0, sent - found);
  run.logs.extra = Math.max(0, found - sent);
  const stoppedEarly = o.scenario === 'ramp' || interrupted;
  run.logs.complete = run.logs.lost === 0 && run.logs.requestRecords === run.logs.responseRecords && (stoppedEarly || run.logs.extra === 0);
  log(
    `loadtest: bid log: ${sent} requests sent, ${run.logs.requestRecords} request and ${run.logs.responseRecords} response records in ${bidder.logKey}` +
      (run.logs.shippedRecords ? ` (${run.logs.shippedRecords} of them already shipped to Parquet in ${bidder.shipDir})` : ''),
  );
  if (bidder.logKey.startsWith('loadtest:') && !o.keepLogs) {
    await LogCounter.remove({ redisUrl: bidder.redisUrl, nodes: bidder.redisNodes }, bidder.logKey).catch(() => {});
  }
  if (!side.stopped && bidder.startedPm2) {
    await bidder.stop();
    side.stopped = true;
  }
}

/**
 * The admin port (each worker's /metrics: its GC counters) and the shipper's metrics port of the
 * cluster it starts: free ones unless the environment sets them (a developer's bidder on the
 * defaults must not answer the samples, nor hold the ports the new cluster needs).
 */
async function adminPorts() {
  // Those of a cluster that was already running: its own start's (the defaults unless set).
  const running = { admin: Number(process.env.ADMIN_PORT || 8081), shipper: Number(process.env.SHIP_ADMIN_PORT || 9465) };
  if (!process.env.ADMIN_PORT) process.env.ADMIN_PORT = String(await freePort());
  if (!process.env.SHIP_ADMIN_PORT) process.env.SHIP_ADMIN_PORT = String(await freePort());
  return { admin: Number(process.env.ADMIN_PORT), shipper: Number(process.env.SHIP_ADMIN_PORT), running };
}

/** soak: samples the bidder's memory, Redis and the bid log backlog every --sample-interval until stopped. */
async function startSoakSampler(bidder, ports, o) {
  const { seconds } = await import(path.join(ROOT, 'k6', 'lib', 'plan.js'));
  const p = bidder.startedPm2 ? ports : ports.running;
  const sampler = new SoakSampler({
    pm2Home: bidder.pm2Home,
    redisUrl: bidder.redisUrl,
    redisNodes: bidder.redisNodes,
    adminUrl: `http://127.0.0.1:${p.admin}`,
    shipperUrl: `http://127.0.0.1:${p.shipper}`,
    intervalMs: seconds(o.sampleInterval) * 1000,
    log,
  });
  await sampler.start();
  log(`loadtest: soak: sampling memory, Redis and the bid log backlog every ${o.sampleInterval}`);
  return sampler;
}

/** The highest sustained rate of a ramp run, or 0. */
function sustainedOf(run, planLib) {
  return run && run.data ? planLib.rampResult(run.data, run.plan).sustained : 0;
}

/**
 * Pins a cluster this run started (PM2 daemon and workers, and the Redis it started) to `cpus`
 * (every thread: `taskset -a`). A cluster that was already running is left as it is.
 */
async function pinServer(server, cpus, redisPids) {
  const pids = (await pm2Processes(server.pm2Home)).map((p) => p.pid);
  const daemon = pm2DaemonPid(server.pm2Home);
  if (daemon) pids.push(daemon);
  pids.push(...redisPids);
  const failed = pin(pids, cpus);
  if (failed.length) log(`loadtest: could not pin pids ${failed.join(', ')} to cores ${cpus}`);
}

async function main() {
  if (Number(process.versions.node.split('.')[0]) < 24) {
    log(`npm run loadtest needs Node 24 (this is ${process.version}); run it through npm so node_modules/.bin/node is used.`);
    return 2;
  }
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    log(`loadtest: ${e.message}`);
    return 2;
  }
  if (o.help) {
    console.log(HELP);
    return 0;
  }
  const env = k6Env(o);
  const planLib = await import(path.join(ROOT, 'k6', 'lib', 'plan.js'));
  let plan;
  try {
    plan = planLib.makePlan(planLib.settings(env));
    for (const [flag, d] of [
      ['--cpu-round-duration', o.cpuRoundDuration],
      ['--generator-round-duration', o.generatorRoundDuration],
      ['--overload-duration', o.overloadDuration],
      ['--sample-interval', o.sampleInterval],
    ]) {
      try {
        planLib.seconds(d);
      } catch (e) {
        throw new Error(`${flag}: ${e.message}`);
      }
    }
  } catch (e) {
    log(`loadtest: ${e.message}`);
    return 2;
  }
  const remote = o.remote !== null;
  const fullLength =
    o.duration === null && o.rate === null && o.warmup === null && o.warmupRate === null && o.rampStart === null && o.rampStep === null && o.rampMax === null;
  const writeResultsMd = o.resultsMd === null ? fullLength && (o.target === 'both' || o.scenario === 'soak') && o.scenario !== 'overload' : o.resultsMd;
  if (o.cpuRounds === null) o.cpuRounds = fullLength && o.target === 'both' && o.scenario === 'reference' ? 4 : 0;
  if (o.generatorRounds === null) o.generatorRounds = o.scenario === 'soak' ? 0 : fullLength ? 2 : 1;
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const runId = `lt${startedAt.getTime().toString(36)}${Math.floor(Math.random() * 1296).toString(36).padStart(2, '0')}`;
  const outDir = path.resolve(o.out || path.join(ROOT, 'k6', 'results', `${stamp}-${o.scenario}`));
  fs.mkdirSync(outDir, { recursive: true });
  const runDir = path.join(ROOT, '.run', 'loadtest', runId);
  // With 4 cores or more, k6 and the servers get cores of their own; with fewer they share them.
  const split = remote ? null : cpuSplit(os.cpus().length);
  const pinning = { cpus: os.cpus().length, pinned: Boolean(split && o.pin), k6Cpus: split && o.pin ? split.k6 : null, serverCpus: split && o.pin ? split.servers : null };
  if (split && !o.pin) pinning.reason = '--no-pin';
  else if (!split && !remote) pinning.reason = os.cpus().length < 4 ? 'fewer than 4 cores' : 'taskset is not available';
  const k6Cpus = pinning.k6Cpus;

  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    log('loadtest: interrupted: finishing the current k6 run and cleaning up');
  };
  for (const sig of SIGNALS) process.on(sig, onSigint);

  const cleanups = [];
  const cleanup = async () => {
    while (cleanups.length) {
      const f = cleanups.pop();
      try {
        await f();
      } catch (e) {
        log(`loadtest: cleanup: ${e.message}`);
      }
    }
    fs.rmSync(runDir, { recursive: true, force: true });
  };

  const ctx = {
    runId, outDir, options: o, argv: process.argv.slice(2), plan, planLib, fullLength, startedAt, k6: null, git: gitInfo(), machine: machine(), node: process.version, gogc: GOGC,
    targets: {}, overload: {}, generator: [], pinning, remote: o.remote,
  };
  const common = { k6: null, outDir, interrupted: () => interrupted, k6Cpus };

  /** ramp: a run at --overload x the highest sustained rate of `run` against the same server. */
  const overload = async (name, run, { target, strict, server, id }) => {
    if (o.scenario !== 'ramp' || !(o.overload > 0) || interrupted) return;
    const sustained = sustainedOf(run, planLib);
    if (!sustained) {
      log(`loadtest: ${name}: no ramp step was sustained: no overload run`);
      return;
    }
    const rate = Math.round(sustained * o.overload);
    const oEnv = { ...env, SCENARIO: 'overload', RATE: String(rate), DURATION: o.overloadDuration, WARMUP_DURATION: '3s', WARMUP_RATE: String(sustained) };
    log(`loadtest: ${name}: overload run at ${rate}/s (${o.overload} x the highest sustained rate, ${sustained}/s)`);
    const r = await runLoad({ ...common, name: `${name}-overload`, target, strict, server, env: oEnv, runId: id });
    r.cpu = phaseCpu(r);
    r.memoryPhases = phaseMemory(r);
    r.sustained = sustained;
    ctx.overload[name] = r;
    return r;
  };

  /**
   * The generator's own cost: the minimal script and k6/bid.js at the same rate against the same
   * server, round after round, the minimal one first in odd rounds.
   */
  const generatorRounds = async ({ target, strict, server, rate, onBidRun }) => {
    if (!(o.generatorRounds > 0) || !rate) return;
    const gEnv = { SCENARIO: 'reference', RATE: String(rate), DURATION: o.generatorRoundDuration, WARMUP_DURATION: '3s', WARMUP_RATE: String(rate), P99_MS: '60000', AVG_MS: '60000' };
    for (const k of ['NOTICE_SHARE', 'VALIDATE_SHARE']) if (env[k] !== undefined) gEnv[k] = env[k];
    for (let i = 1; i <= o.generatorRounds && !interrupted; i++) {
      log(`loadtest: generator round ${i} of ${o.generatorRounds} at ${rate}/s`);
      const pair = {};
      const order = [
        ['minimal', `${runId}m${i}`],
        ['bid', `${runId}-g${i}`],
      ];
      if (i % 2 === 0) order.reverse();
      for (const [script, id] of order) {
        if (interrupted) break;
        const r = await runLoad({ ...common, name: `generator${i}-${script}`, script, target, strict, server, env: gEnv, runId: id });
        r.cpu = phaseCpu(r);
        r.memoryPhases = phaseMemory(r);
        if (script === 'bid' && onBidRun) onBidRun(r);
        pair[script] = r;
      }
      ctx.generator.push(pair);
    }
  };

  try {
    ctx.k6 = await findK6({ log });
    common.k6 = ctx.k6;
    log(`loadtest: run ${runId}, ${o.scenario}, report in ${path.relative(ROOT, outDir) || outDir}`);
    if (pinning.pinned) log(`loadtest: k6 on cores ${pinning.k6Cpus}, the servers this run starts on cores ${pinning.serverCpus}`);
    const measuredRate = (run) => (o.scenario === 'ramp' ? sustainedOf(run, planLib) || plan.settings.rampStart : plan.settings.rate);

    if (remote) {
      // Only k6 runs here: the bidder, its Redis and its log are elsewhere.
      const run = await runLoad({ ...common, name: 'remote', target: o.remote, strict: true, server: null, env, runId });
      run.cpu = phaseCpu(run);
      run.memoryPhases = phaseMemory(run);
      run.server = null;
      ctx.targets.remote = run;
      await overload('remote', run, { target: o.remote, strict: true, server: null, id: `${runId}-o` });
      await generatorRounds({ target: o.remote, strict: true, server: null, rate: measuredRate(run) });
    } else {
      // The bidder stays up through the CPU rounds; its log is counted once it is stopped.
      let bidderSide = null;
      if (o.target !== 'baseline') {
        const redis = await cluster.ensureRedis({ log, dir: path.join(runDir, 'redis'), cluster: o.redisCluster });
        cleanups.push(() => redis.stop());
        const logKey = redis.started ? process.env.LOG_REDIS_KEY || 'bidlog' : `loadtest:${runId}:bidlog`;
        const port = process.env.PORT ? Number(process.env.PORT) : await freePort();
        const ports = await adminPorts();
        const bidder = await cluster.startBidder({ workers: o.workers, port, redisUrl: redis.url, redisNodes: redis.nodes, logKey, log, volatileRedis: redis.started });
        bidder.logWait = o.logWait;
        bidder.adminUrl = `http://127.0.0.1:${bidder.startedPm2 ? ports.admin : ports.running.admin}`;
        bidder.shipperUrl = `http://127.0.0.1:${bidder.startedPm2 ? ports.shipper : ports.running.shipper}`;
        bidder.target = `${bidder.url}/openrtb2/bid`;
        if (!bidder.startedPm2) {
          let built = 0;
          try {
            built = fs.statSync(path.join(ROOT, 'dist', '.tsbuildinfo')).mtimeMs;
          } catch {
            /* never built */
          }
          if (newestSource(path.join(ROOT, 'src')) > built) log('loadtest: note: src/ changed since the last build; the running bidder may run older code (npm stop, then run again)');
        }
        bidderSide = { bidder, stopped: !bidder.startedPm2, run: null, sent: 0, from: 0, logsCounted: false };
        const side = bidderSide;
        if (bidder.startedPm2) cleanups.push(async () => {
          if (!side.stopped) await bidder.stop();
        });
        if (bidder.redisUrl !== redis.url && redis.started && !redis.nodes) {
          // The cluster was already running with its own Redis: ours is not needed.
          await redis.stop();
        }
        if (pinning.pinned) {
          if (bidder.startedPm2) await pinServer(bidder, pinning.serverCpus, bidder.redisUrl === redis.url || bidder.redisNodes ? redis.pids : []);
          else pinning.note = 'the bidder cluster was already running and was left unpinned';
        }
        if (interrupted) throw new Error('interrupted');
        side.from = await LogCounter.listLength({ redisUrl: bidder.redisUrl, nodes: bidder.redisNodes }, bidder.logKey);
        const sampler = o.scenario === 'soak' ? await startSoakSampler(bidder, ports, o) : null;
        const run = await runLoad({ ...common, name: 'bidder', target: bidder.target, strict: true, server: bidder, env, runId });
        if (sampler) run.soak = await sampler.stop();
        run.cpu = phaseCpu(run);
        run.memoryPhases = phaseMemory(run);
        side.run = run;
        side.sent += bidRequests(run);
        run.server = { startedPm2: bidder.startedPm2, pm2Home: bidder.pm2Home, redisUrl: bidder.redisUrl, redisNodes: bidder.redisNodes, logKey: bidder.logKey, workers: run.workers.length };
        ctx.targets.bidder = run;
        const counted = (r) => (side.sent += bidRequests(r));
        const over = await overload('bidder', run, { target: bidder.target, strict: true, server: bidder, id: `${runId}-o` });
        if (over) counted(over);
        if (o.cpuRounds === 0) {
          await generatorRounds({ target: bidder.target, strict: true, server: bidder, rate: measuredRate(run), onBidRun: counted });
          await finishBidder(side, { runId, o, interrupted });
        }
      }

      let baseline = null;
      if (o.target !== 'bidder' && !interrupted) {
        const workers = ctx.targets.bidder && ctx.targets.bidder.workers.length ? ctx.targets.bidder.workers.length : o.workers;
        const port = await freePort();
        baseline = await cluster.startBaseline({ workers, port, home: path.join(runDir, 'pm2-baseline'), log });
        baseline.target = `${baseline.url}/openrtb2/bid`;
        cleanups.push(() => baseline.stop());
        if (pinning.pinned) await pinServer(baseline, pinning.serverCpus, []);
        if (interrupted) throw new Error('interrupted');
        const run = await runLoad({ ...common, name: 'baseline', target: baseline.target, strict: false, server: baseline, env, runId: `${runId}b` });
        run.cpu = phaseCpu(run);
        run.memoryPhases = phaseMemory(run);
        run.server = { startedPm2: true, pm2Home: baseline.pm2Home, workers: run.workers.length };
        ctx.targets.baseline = run;
        await overload('baseline', run, { target: baseline.target, strict: false, server: baseline, id: `${runId}b-o` });
        if (!bidderSide) await generatorRounds({ target: baseline.target, strict: false, server: baseline, rate: measuredRate(run) });
      }

      if (o.cpuRounds > 0 && bidderSide && baseline) {
        // Short runs of the two servers, again and again: each pair meets about the same machine
        // noise, which the two long runs above (minutes apart) do not. The order alternates (bidder
        // first in odd rounds, baseline first in even ones), so neither always follows the other's
        // load or always comes first after a pause. Each run warms up for 3 s at the measured rate:
        // an idle V8 shrinks its young generation, and the first seconds of load would regrow it.
        const roundEnv = { ...env, DURATION: o.cpuRoundDuration, WARMUP_DURATION: '3s', WARMUP_RATE: String(plan.settings.rate) };
        ctx.rounds = [];
        for (let i = 1; i <= o.cpuRounds && !interrupted; i++) {
          log(`loadtest: CPU round ${i} of ${o.cpuRounds}`);
          const pair = {};
          const order = [
            ['bidder', bidderSide.bidder, true, `${runId}-c${i}`],
            ['baseline', baseline, false, `${runId}b-c${i}`],
          ];
          if (i % 2 === 0) order.reverse();
          for (const [name, server, strict, id] of order) {
            if (interrupted) break;
            const run = await runLoad({ ...common, name: `${name}-round${i}`, target: server.target, strict, server, env: roundEnv, runId: id });
            run.cpu = phaseCpu(run);
            run.memoryPhases = phaseMemory(run);
            if (name === 'bidder') bidderSide.sent += bidRequests(run);
            pair[name] = run;
          }
          ctx.rounds.push(pair);
        }
      }
      if (bidderSide && !bidderSide.logsCounted) {
        const side = bidderSide;
        await generatorRounds({ target: side.bidder.target, strict: true, server: side.bidder, rate: measuredRate(side.run), onBidRun: (r) => (side.sent += bidRequests(r)) });
        await finishBidder(side, { runId, o, interrupted });
      }
      if (baseline) {
        await baseline.stop();
        cleanups.pop();
      }
    }
  } catch (e) {
    log(`loadtest: ${e.message}`);
    await cleanup();
    return 2;
  } finally {
    for (const sig of SIGNALS) process.removeListener(sig, onSigint);
  }
  await cleanup();

  ctx.finishedAt = new Date();
  const rep = report.build(ctx);
  report.write(outDir, rep);
  if (writeResultsMd && !remote) {
    report.updateResultsMd(path.join(ROOT, 'bench', 'RESULTS.md'), rep, path.relative(ROOT, outDir));
    log('loadtest: bench/RESULTS.md updated');
  }
  process.stdout.write(`\n${report.markdown(rep, { brief: true })}\n`);
  log(`loadtest: report: ${path.relative(ROOT, outDir)}/report.md, index.html, summary.json`);
  return interrupted ? 130 : rep.exitCode;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    log(`loadtest: ${e.stack || e}`);
    process.exit(2);
  },
);
