'use strict';
// `npm run loadtest`: the one-command benchmark (docs/loadtest.md).
//
// Finds (or builds) k6, brings up Redis and the bidder's PM2 cluster when they are not running
// (scripts/start.js, which also builds dist/ when src/ is newer), runs a k6 scenario (k6/bid.js) against it while sampling the server's
// CPU and memory from /proc, checks that every request left its records in the bid log, then runs
// the same load against a bare Fastify baseline (bench/baseline/) with as many workers, stops what
// it started, and writes a report (JSON, Markdown, SVG plots, HTML) to k6/results/<timestamp>/.
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { findK6 } = require('./lib/loadtest-k6');
const { cpuSeconds, memory, machineCpu, machine, pm2Processes, pm2DaemonPid } = require('./lib/loadtest-proc');
const cluster = require('./lib/loadtest-cluster');
const { LogCounter } = require('./lib/loadtest-logs');
const report = require('./lib/loadtest-report');
const { freePort } = require('./lib/redis');

const ROOT = path.resolve(__dirname, '..');
const K6_SCRIPT = path.join(ROOT, 'k6', 'bid.js');
const GOGC = '400';
const IDLE_SAMPLE_MS = 2000;
// Stop k6, then clean up what the run started, on any of these.
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

const HELP = `usage: npm run loadtest -- [options]

  --scenario reference|ramp   reference: 100/s for 5 s, then 1300/s for 3 min (default)
                              ramp: raise the rate step by step until p99, drops or errors fail
  --duration <d>              reference: length of the 1300/s phase (e.g. 30s, 3m);
                              ramp: length of each step (default 10s)
  --rate <n>                  reference: rate of the measured phase (default 1300)
  --warmup <d>                warm-up length (default 5s); --warmup-rate <n> (default 100)
  --workers <n>               PM2 workers for the bidder and the baseline (default 2)
  --p99 <ms> --avg <ms>       reference thresholds of the measured phase (default 3 and 1.2)
  --ramp-start <n> --ramp-step <n> --ramp-max <n> --ramp-p99 <ms>
                              ramp settings (defaults 500, 500, 20000, 10 ms)
  --notices <share>           share of bid requests followed by a win notice and an impression (default 0.1)
  --target both|bidder|baseline
                              what to load (default both: the bidder, then the baseline)
  --cpu-rounds <n>            reference, both targets: after the two main runs, n rounds of short
                              runs alternating bidder and baseline (both clusters up) for a CPU
                              ratio that machine noise moves less (default 4 for a full-length
                              run, else 0)
  --cpu-round-duration <d>    measured length of each of those runs (default 20s, at --rate)
  --out <dir>                 report directory (default k6/results/<timestamp>-<scenario>)
  --results-md | --no-results-md
                              update bench/RESULTS.md (default: only for full-length runs)
  --keep-logs                 keep the run's log list in Redis (a list the load test created)
  --log-wait <s>              how long to wait for log records from a cluster it did not start (default 40)

Environment passed on: PORT (bidder port when it starts the cluster), PM2_HOME, REDIS_URL
(else a private Redis is started), LOG_REDIS_KEY, K6 (path of a k6 binary).
Exit status: 0 when the bidder met the scenario's thresholds and no log record was lost,
1 when not, 2 when the run could not be made.`;

function parseArgs(argv) {
  const o = {
    scenario: 'reference',
    duration: null,
    rate: null,
    warmup: null,
    warmupRate: null,
    workers: 2,
    p99: null,
    avg: null,
    rampStart: null,
    rampStep: null,
    rampMax: null,
    rampP99: null,
    notices: null,
    target: 'both',
    out: null,
    resultsMd: null,
    keepLogs: false,
    logWait: 40,
    cpuRounds: null,
    cpuRoundDuration: '20s',
  };
  const valued = {
    '--scenario': 'scenario',
    '--duration': 'duration',
    '--rate': 'rate',
    '--warmup': 'warmup',
    '--warmup-rate': 'warmupRate',
    '--workers': 'workers',
    '--p99': 'p99',
    '--avg': 'avg',
    '--ramp-start': 'rampStart',
    '--ramp-step': 'rampStep',
    '--ramp-max': 'rampMax',
    '--ramp-p99': 'rampP99',
    '--notices': 'notices',
    '--target': 'target',
    '--out': 'out',
    '--log-wait': 'logWait',
    '--cpu-rounds': 'cpuRounds',
    '--cpu-round-duration': 'cpuRoundDuration',
  };
  for (let i = 0; i < argv.length; i++) {
    let a = argv[i];
    let v;
    const eq = a.indexOf('=');
    if (a.startsWith('--') && eq > 0) {
      v = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (a === '-h' || a === '--help') {
      console.log(HELP);
      process.exit(0);
    } else if (a === '--results-md') o.resultsMd = true;
    else if (a === '--no-results-md') o.resultsMd = false;
    else if (a === '--keep-logs') o.keepLogs = true;
    else if (valued[a]) {
      if (v === undefined) v = argv[++i];
      if (v === undefined) throw new Error(`${a} needs a value`);
      o[valued[a]] = v;
    } else throw new Error(`unknown option ${argv[i]} (see --help)`);
  }
  if (!['reference', 'ramp'].includes(o.scenario)) throw new Error(`--scenario must be reference or ramp`);
  if (!['both', 'bidder', 'baseline'].includes(o.target)) throw new Error(`--target must be both, bidder or baseline`);
  for (const k of ['workers', 'rate', 'warmupRate', 'p99', 'avg', 'rampStart', 'rampStep', 'rampMax', 'rampP99', 'logWait', 'notices', 'cpuRounds']) {
    if (o[k] === null) continue;
    const n = Number(o[k]);
    if (!(n >= 0) || (k === 'workers' && !(Number.isInteger(n) && n >= 1)) || (k === 'cpuRounds' && !Number.isInteger(n))) throw new Error(`bad value for --${k}: ${o[k]}`);
    o[k] = n;
  }
  if (o.cpuRounds > 0 && (o.scenario !== 'reference' || o.target !== 'both')) throw new Error('--cpu-rounds needs the reference scenario and both targets');
  return o;
}

/** The k6 environment of the scenario; the plan is rebuilt from the same values by k6/lib/plan.js. */
function k6Env(o) {
  const e = { SCENARIO: o.scenario };
  if (o.scenario === 'reference' && o.duration) e.DURATION = o.duration;
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
  const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'package.json', 'package-lock.json', 'k6', 'bench/baseline']) !== '';
  return { commit: commit || 'unknown', short: commit.slice(0, 10), dirty, subject: git(['log', '-1', '--format=%s']) };
}

/** Redis's own CPU seconds (INFO cpu), or null. */
async function redisCpu(conn) {
  if (!conn) return null;
  try {
    const info = await conn.info('cpu');
    const num = (k) => Number((new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info) || [])[1] || 0);
    return num('used_cpu_user') + num('used_cpu_sys');
  } catch {
    return null;
  }
}

/**
 * Runs k6 against `url` while sampling the server's processes. `server.pm2Home` gives the PM2
 * daemon and workers; `server.redisUrl` (bidder only) adds Redis's CPU.
 */
async function runLoad({ name, k6, url, strict, server, env, outDir, runId, interrupted }) {
  const procs = (await pm2Processes(server.pm2Home)).filter((p) => p.status === 'online' && p.name === server.app);
  const daemon = pm2DaemonPid(server.pm2Home);
  if (!procs.length || !daemon) log(`loadtest: ${name}: no PM2 processes found under ${server.pm2Home}: server CPU will not be measured`);
  const pids = procs.map((p) => p.pid);
  if (daemon) pids.push(daemon);
  let redisConn = null;
  if (server.redisUrl) {
    const Redis = require(path.join(ROOT, 'node_modules', 'ioredis'));
    redisConn = new Redis(server.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await redisConn.connect().catch(() => (redisConn = null));
  }

  const summaryPath = path.join(outDir, `k6-${name}.json`);
  const k6Env = { ...process.env, GOGC, K6_NO_USAGE_REPORT: 'true' };
  // Settings go in as -e flags and k6 sees no other environment variables in __ENV, so the plan
  // k6 builds is the one rebuilt here from the same values.
  const vars = { ...env, TARGET_URL: `${url}/openrtb2/bid`, STRICT: strict ? '1' : '0', RUN_ID: runId, SUMMARY_JSON: summaryPath };
  const args = ['run', '--quiet', '--no-color', '--no-usage-report', '--address', '127.0.0.1:0', '--include-system-env-vars=false'];
  for (const [k, v] of Object.entries(vars)) args.push('-e', `${k}=${v}`);
  args.push(K6_SCRIPT);
  const shown = Object.entries(vars).map(([k, v]) => `-e ${k}=${k === 'SUMMARY_JSON' ? path.relative(ROOT, v) : v}`);
  log(`loadtest: ${name}: GOGC=${GOGC} k6 run ${shown.join(' ')} k6/bid.js`);
  // The server's CPU at rest, for reading per-request figures at low rates.
  const idleA = pids.map(cpuSeconds);
  const idleT = Date.now();
  await new Promise((r) => setTimeout(r, IDLE_SAMPLE_MS));
  const idleB = pids.map(cpuSeconds);
  const idleCores = idleA.reduce((acc, v, i) => acc + (idleB[i] ?? NaN) - (v ?? NaN), 0) / ((Date.now() - idleT) / 1000);

  // k6 runs in its own process group: a Ctrl-C reaches it once, forwarded from here (a second one
  // would make k6 quit without its summary).
  const child = spawn(k6.bin, args, { cwd: ROOT, env: k6Env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const stdoutFile = fs.createWriteStream(path.join(outDir, `k6-${name}.stdout.txt`));
  const stderrFile = fs.createWriteStream(path.join(outDir, `k6-${name}.stderr.txt`));
  let stdout = '';
  child.stdout.on('data', (d) => {
    stdout += d;
    stdoutFile.write(d);
  });

  const snaps = new Map(); // seconds since t0 -> snapshot
  const take = async () => {
    const cpu = {};
    for (const pid of pids) cpu[pid] = cpuSeconds(pid);
    return { t: Date.now(), cpu, k6: cpuSeconds(child.pid), machine: machineCpu(), redis: await redisCpu(redisConn) };
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

  // Peak memory per worker (VmRSS sampled each second; VmHWM read at the end).
  const maxRss = {};
  let k6Last = null; // k6's CPU seconds, sampled each second: it cannot be read once k6 exits
  const rssTimer = setInterval(() => {
    const c = cpuSeconds(child.pid);
    if (c !== null) k6Last = { t: Date.now(), cpu: c };
    for (const p of procs) {
      const m = memory(p.pid);
      if (m && m.rssMB !== null) maxRss[p.pid] = Math.max(maxRss[p.pid] || 0, m.rssMB);
    }
  }, 1000);
  const started = Date.now();
  const progress = setInterval(() => {
    const el = Math.round((Date.now() - (t0 || started)) / 1000);
    log(`loadtest: ${name}: ${el} s of ${plan.scenario === 'ramp' ? 'at most ' : ''}${Math.round(plan.total)} s`);
  }, 15_000);

  const stopK6 = () => child.kill('SIGINT');
  for (const sig of SIGNALS) process.on(sig, stopK6);
  const exitCode = await new Promise((resolve) => child.once('exit', (code) => resolve(code === null ? -1 : code)));
  for (const sig of SIGNALS) process.removeListener(sig, stopK6);
  clearInterval(rssTimer);
  clearInterval(progress);
  for (const t of timers) clearTimeout(t);
  // After k6's exit: its own CPU reads null here, phaseCpu() falls back on k6Last.
  const final = await take();
  await new Promise((r) => stdoutFile.end(r));
  await new Promise((r) => stderrFile.end(r));
  if (redisConn) redisConn.disconnect();
  if (interrupted()) log(`loadtest: ${name}: interrupted`);

  const memoryByWorker = procs.map((p) => {
    const m = memory(p.pid);
    return { pmId: p.pmId, pid: p.pid, peakRssMB: m && m.hwmMB !== null ? m.hwmMB : maxRss[p.pid] || null, maxSampledRssMB: maxRss[p.pid] || null };
  });
  const after = await pm2Processes(server.pm2Home).catch(() => []);
  const restarts = after.filter((p) => procs.some((q) => q.pmId === p.pmId && (q.pid !== p.pid || q.restarts !== p.restarts))).length;

  let data = null;
  try {
    data = JSON.parse(fs.readFileSync(summaryPath, 'utf8'));
    plan = data.loadtest.plan;
  } catch {
    /* k6 failed before its summary */
  }
  process.stdout.write(stdout.trim() ? `${stdout.trim()}\n` : '');
  return {
    name, url, exitCode, data, plan, t0, snaps, final, pids, workers: procs, daemonPid: daemon, memoryByWorker, restarts,
    idleCores: Number.isFinite(idleCores) ? idleCores : null,
    k6Last,
  };
}

/** CPU of each phase from the snapshots: the server (workers + daemon), Redis, k6, the machine. */
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
    const server = sum(b) - sum(a);
    const delta = (pid) => (a.cpu[pid] === null || b.cpu[pid] === null ? null : b.cpu[pid] - a.cpu[pid]);
    const k6End = b.k6 !== null ? b.k6 : k6Final;
    const seconds = (b.t - a.t) / 1000;
    out[p.name] = {
      seconds,
      serverCpu: Number.isFinite(server) ? server : null,
      daemonCpu: run.daemonPid ? delta(run.daemonPid) : null,
      workersCpu: run.workers.map((w) => delta(w.pid)),
      redisCpu: a.redis !== null && b.redis !== null ? b.redis - a.redis : null,
      k6Cpu: a.k6 !== null && k6End !== null ? k6End - a.k6 : null,
      machineBusy: b.machine.busy - a.machine.busy,
      machineTotal: b.machine.total - a.machine.total,
      steal: b.machine.steal - a.machine.steal,
    };
  }
  return out;
}

async function countLogs({ bidder, runId, from, expected, graceful }) {
  const counter = new LogCounter({ redisUrl: bidder.redisUrl, key: bidder.logKey, runId, from, shipDir: bidder.shipDir || null });
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
 * buffer, INTERFACE.md; a cluster it did not start is waited for instead), then checks that every
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
    const Redis = require(path.join(ROOT, 'node_modules', 'ioredis'));
    const r = new Redis(bidder.redisUrl, { maxRetriesPerRequest: 1 });
    await r.del(bidder.logKey).catch(() => {});
    r.disconnect();
  }
  if (!side.stopped && bidder.startedPm2) {
    await bidder.stop();
    side.stopped = true;
  }
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
  const env = k6Env(o);
  const planLib = await import(path.join(ROOT, 'k6', 'lib', 'plan.js'));
  let plan;
  try {
    plan = planLib.makePlan(planLib.settings(env));
  } catch (e) {
    log(`loadtest: ${e.message}`);
    return 2;
  }
  const fullLength =
    o.duration === null && o.rate === null && o.warmup === null && o.warmupRate === null && o.rampStart === null && o.rampStep === null && o.rampMax === null;
  const writeResultsMd = o.resultsMd === null ? fullLength && o.target === 'both' : o.resultsMd;
  if (o.cpuRounds === null) o.cpuRounds = fullLength && o.target === 'both' && o.scenario === 'reference' ? 4 : 0;
  try {
    planLib.seconds(o.cpuRoundDuration);
  } catch (e) {
    log(`loadtest: --cpu-round-duration: ${e.message}`);
    return 2;
  }
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const runId = `lt${startedAt.getTime().toString(36)}${Math.floor(Math.random() * 1296).toString(36).padStart(2, '0')}`;
  const outDir = path.resolve(o.out || path.join(ROOT, 'k6', 'results', `${stamp}-${o.scenario}`));
  fs.mkdirSync(outDir, { recursive: true });
  const runDir = path.join(ROOT, '.run', 'loadtest', runId);

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

  const ctx = { runId, outDir, options: o, argv: process.argv.slice(2), plan, planLib, fullLength, startedAt, k6: null, git: gitInfo(), machine: machine(), node: process.version, gogc: GOGC, targets: {} };
  try {
    ctx.k6 = await findK6({ log });
    log(`loadtest: run ${runId}, ${o.scenario}, report in ${path.relative(ROOT, outDir) || outDir}`);

    // The bidder stays up through the CPU rounds; its log is counted once it is stopped.
    let bidderSide = null;
    if (o.target !== 'baseline') {
      const redis = await cluster.ensureRedis({ log, dir: path.join(runDir, 'redis') });
      cleanups.push(() => redis.stop());
      const logKey = redis.started ? process.env.LOG_REDIS_KEY || 'bidlog' : `loadtest:${runId}:bidlog`;
      const port = process.env.PORT ? Number(process.env.PORT) : await freePort();
      const bidder = await cluster.startBidder({ workers: o.workers, port, redisUrl: redis.url, logKey, log });
      bidder.logWait = o.logWait;
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
      if (bidder.redisUrl !== redis.url && redis.started) {
        // The cluster was already running with its own Redis: ours is not needed.
        await redis.stop();
      }
      if (interrupted) throw new Error('interrupted');
      side.from = await LogCounter.listLength(bidder.redisUrl, bidder.logKey);
      const run = await runLoad({ name: 'bidder', k6: ctx.k6, url: bidder.url, strict: true, server: bidder, env, outDir, runId, interrupted: () => interrupted });
      run.cpu = phaseCpu(run);
      side.run = run;
      side.sent += bidRequests(run);
      run.server = { startedPm2: bidder.startedPm2, pm2Home: bidder.pm2Home, redisUrl: bidder.redisUrl, logKey: bidder.logKey, workers: run.workers.length };
      ctx.targets.bidder = run;
      if (o.cpuRounds === 0) await finishBidder(side, { runId, o, interrupted });
    }

    let baseline = null;
    if (o.target !== 'bidder' && !interrupted) {
      const workers = ctx.targets.bidder && ctx.targets.bidder.workers.length ? ctx.targets.bidder.workers.length : o.workers;
      const port = await freePort();
      baseline = await cluster.startBaseline({ workers, port, home: path.join(runDir, 'pm2-baseline'), log });
      cleanups.push(() => baseline.stop());
      if (interrupted) throw new Error('interrupted');
      const run = await runLoad({ name: 'baseline', k6: ctx.k6, url: baseline.url, strict: false, server: baseline, env, outDir, runId: `${runId}b`, interrupted: () => interrupted });
      run.cpu = phaseCpu(run);
      run.server = { startedPm2: true, pm2Home: baseline.pm2Home, workers: run.workers.length };
      ctx.targets.baseline = run;
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
          const run = await runLoad({ name: `${name}-round${i}`, k6: ctx.k6, url: server.url, strict, server, env: roundEnv, outDir, runId: id, interrupted: () => interrupted });
          run.cpu = phaseCpu(run);
          if (name === 'bidder') bidderSide.sent += bidRequests(run);
          pair[name] = run;
        }
        ctx.rounds.push(pair);
      }
    }
    if (bidderSide && !bidderSide.logsCounted) await finishBidder(bidderSide, { runId, o, interrupted });
    if (baseline) {
      await baseline.stop();
      cleanups.pop();
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
  if (writeResultsMd) {
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
