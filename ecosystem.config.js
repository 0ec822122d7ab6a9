'use strict';
// PM2 process file: `npm start` (scripts/start.js), `npm run pm2 -- start ecosystem.config.js`,
// and `pm2-runtime ecosystem.config.js` in the Docker image. See docs/operations.md.
//
// Evaluated by the PM2 CLI when an app is started; the env below is stored with the app, so later
// `pm2 scale` / `pm2 reload` reuse it (`pm2 reload bidder --update-env` takes a new environment).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const env = process.env;

/** A whole number from the environment, or the default. */
function int(name, def) {
  const v = env[name];
  if (v === undefined || v.trim() === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`ecosystem.config.js: ${name}=${JSON.stringify(v)}: expected a whole number`);
  return n;
}

/**
 * CPUs this process may use. os.availableParallelism() (libuv 1.52 in Node 24) reads a cgroup v2
 * quota too, but rounds it down (a container of 1.5 CPUs would get 1 worker) and under nested cgroups
 * takes the outermost limit, not the tightest. So: the container's CPU quota rounded up, bounded by
 * the CPUs the scheduler lets this process run on; without a quota, availableParallelism(). The
 * quota is cgroup v2's cpu.max (the container's own under a cgroup namespace, as Docker, podman and
 * Kubernetes set up on cgroup v2) or, on a cgroup v1 host, cpu.cfs_quota_us / cpu.cfs_period_us of
 * the cpu controller, which runc mounts at /sys/fs/cgroup/cpu as the container's own directory.
 */
function containerCpus() {
  const quota = cgroupV2Quota() ?? cgroupV1Quota();
  if (quota === null) return os.availableParallelism();
  return Math.max(1, Math.min(Math.ceil(quota), allowedCpus()));
}

function readFile(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** cgroup v2: "<quota> <period>" in microseconds, or "max <period>" for none. */
function cgroupV2Quota() {
  const m = /^(\d+) (\d+)\s*$/.exec(readFile(env.BIDDER_CPU_MAX_FILE || '/sys/fs/cgroup/cpu.max') ?? '');
  return m && Number(m[2]) > 0 ? Number(m[1]) / Number(m[2]) : null;
}

/** cgroup v1: cpu.cfs_quota_us (-1 for none) over cpu.cfs_period_us. */
function cgroupV1Quota() {
  const dir = env.BIDDER_CPU_CGROUP_V1_DIR || '/sys/fs/cgroup/cpu';
  const quota = /^(-?\d+)\s*$/.exec(readFile(path.join(dir, 'cpu.cfs_quota_us')) ?? '');
  const period = /^(\d+)\s*$/.exec(readFile(path.join(dir, 'cpu.cfs_period_us')) ?? '');
  if (!quota || !period || Number(quota[1]) <= 0 || Number(period[1]) === 0) return null;
  return Number(quota[1]) / Number(period[1]);
}

/** CPUs in this process's affinity mask ("0-3,8" in /proc/self/status): what taskset and cpusets allow. */
function allowedCpus() {
  let n = 0;
  try {
    const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(fs.readFileSync('/proc/self/status', 'utf8'))[1];
    for (const range of list.split(',')) {
      const [first, last = first] = range.split('-').map(Number);
      n += last - first + 1;
    }
  } catch {
    /* not Linux */
  }
  return n > 0 ? n : os.cpus().length;
}

/**
 * The project's Node (the npm `node` package, which `npm ci` installs: node_modules/.bin/node), else
 * the Node running this file. Realpath: PM2 starts the binary itself, not the link.
 */
function projectNode() {
  try {
    return fs.realpathSync(path.join(__dirname, 'node_modules', '.bin', 'node'));
  } catch {
    return process.execPath;
  }
}

// One worker per CPU unless WORKERS says otherwise (0 or unset: one per CPU).
const instances = int('WORKERS', 0) || containerCpus();

// The bidder's graceful stop: drain HTTP (at most ~4.5 s, src/health/lifecycle.ts), then the final
// log flush bounded by SHUTDOWN_TIMEOUT_MS, then exit (its own watchdog fires 1 s after both).
// PM2 must not SIGKILL before that, or buffered log records would be lost.
const shutdownTimeoutMs = int('SHUTDOWN_TIMEOUT_MS', 8000);
const killTimeoutMs = shutdownTimeoutMs + 8000;

const port = int('PORT', 8080);
const runDir = path.resolve(env.BIDDER_RUN_DIR || path.join(__dirname, '.run'));
const logDir = path.resolve(env.BIDDER_LOG_DIR || path.join(runDir, 'logs'));

/**
 * The documented variables with their defaults (README, Configuration); every other variable passes
 * through. TRACKING_BASE_URL and EXCHANGES_FILE have no default here: in production the bidder
 * refuses to start without them (a loopback address reaches no exchange; without an exchanges file
 * anyone may bid and bill, unless EXCHANGES_OPEN=1 says so); `npm start` sets both for a trial on
 * this machine (an exchanges file that admits loopback callers only).
 */
const appEnv = {
  NODE_ENV: env.NODE_ENV || 'production',
  PORT: String(port),
  HOST: env.HOST || '0.0.0.0',
  REDIS_URL: env.REDIS_URL || 'redis://127.0.0.1:6379',
  LOG_REDIS_KEY: env.LOG_REDIS_KEY || 'bidlog',
  LOG_FLUSH_INTERVAL_MS: env.LOG_FLUSH_INTERVAL_MS || '10000',
  SHUTDOWN_TIMEOUT_MS: String(shutdownTimeoutMs),
  LOG_SPILL_DIR: env.LOG_SPILL_DIR || path.join(runDir, 'spill'),
};
// Unset means the bundled demo campaigns (src/config/config.ts).
if (env.CAMPAIGNS_FILE) appEnv.CAMPAIGNS_FILE = path.resolve(env.CAMPAIGNS_FILE);

// The bid log shipper (src/shipper/, docs/log-pipeline.md): one process, Redis list → Parquet. A
// fixed SHIP_ID per host lets a restarted shipper resume its own batch; its graceful stop finishes
// the batch under way within SHIP_STOP_TIMEOUT_MS. It lowers itself at start (every thread at nice
// SHIP_NICE, 19, in the idle scheduling and I/O classes), so that on a shared host it runs on the CPU the workers
// leave idle; in production run it on its own host or container (`--only shipper`).
const shipStopMs = int('SHIP_STOP_TIMEOUT_MS', 20000);
const shipperEnv = {
  NODE_ENV: appEnv.NODE_ENV,
  REDIS_URL: appEnv.REDIS_URL,
  LOG_REDIS_KEY: appEnv.LOG_REDIS_KEY,
  SHIP_DIR: path.resolve(env.SHIP_DIR || path.join(runDir, 'bidlog')),
  // HOST_ID when set: two hosts tried on one machine (docs/operations.md, "Several hosts") get two ids.
  SHIP_ID: env.SHIP_ID || `${env.HOST_ID || os.hostname()}-shipper`.replace(/[^A-Za-z0-9_.:-]/g, '_'),
  SHIP_STOP_TIMEOUT_MS: String(shipStopMs),
};

module.exports = {
  apps: [
    {
      name: 'bidder',
      script: path.join(__dirname, 'dist', 'main.js'),
      cwd: __dirname,
      exec_mode: 'cluster',
      instances,
      env: appEnv,
      // PM2 loads its agent (@pm2/io) into every process unless the process's env has pmx=false,
      // which this option sets: the agent wraps http.Server.prototype.emit to time every request
      // (~7.6 µs a request, issue 22) for figures /metrics already has. Checked on a running worker
      // (docs/operations.md, "PM2's agent").
      pmx: false,
      // --max-semi-space-size=8 and --heap-growing-percent=100: V8's young generation at most
      // 2 x 8 MiB, and after a mark-compact the old generation may grow to 2x what it left before
      // V8 marks it again. Between two mark-compacts a worker keeps its garbage: what was promoted,
      // and the dead Buffers it held (external memory, freed only by a mark-compact). With 2 x 16 MiB
      // and 3x a worker at 650 bid requests/s grew to ~237 MB resident in 90 s and to 271 MB in the
      // load test's 3 minutes (V8 heap 110 MB committed for 80 MB used, 78 MB external for ~24 MB
      // live); with these it stayed at ~172-195 MB. Side by side (`npm run ab -- --against .
      // --mix loadtest --node-args=<2 x 16 MiB, 3x> --node-args-b=<these>`, 8 rounds of 10 s at 650/s,
      // PSS read every 2 s): 1.028x the CPU per bid request (median and pooled; rounds 0.98-1.06),
      // PSS at most 157 against 191 MB, 149 against 173 MB on average after the first minute.
      // Left to V8 the young generation doubles up to 2 x 64 MiB within minutes under load (a worker
      // ended 14-minute runs at 348-364 MB). V8 starts marking as soon as the room left below the old
      // generation's limit is smaller than the young generation (deps/v8/src/heap/heap.cc,
      // IncrementalMarkingLimitReached): a factor of 2 leaves the live heap as room, more than
      // 16 MiB for any worker (its live heap stays above ~20 MB), where V8's own factor (~1.6 at
      // ~36 MB live) with 2 x 16 MiB started each mark-compact within seconds of the last (one every
      // 3.5-6.5 s at 650/s; 469 µs of CPU per bid request against 432 with a factor of 3, `npm run
      // memory`, 6 minutes at 450/s). 1.5x (--heap-growing-percent=50) kept a worker at ~172-176 MB
      // (one unpaired run, about the same CPU), but leaves less room than the young generation once
      // the live heap is under ~32 MB. Where a worker's
      // memory goes at 650/s (a heap snapshot, after a full GC, at 45 s): ~58 MB of the Node binary's
      // code, shared with every other Node process of the host (the load test's PSS column counts it
      // once); 59 MB live in V8's heap: bytecode and code 11, strings 11 (8.5 of them the modules'
      // sources), ArrayBuffers 23.5 (bid shading's per-segment histograms ~14 MB at ~2,000
      // segments, ~17 MB with their objects; the bid log's 1 MiB chunks, 7 MB; ioredis's parser
      // pool, 1.8 MB). PM2 passes node_args to cluster workers (execArgv), after a reload too (each
      // worker logs its execArgv at start). Tried and not kept (bench/README.md):
      // --single-threaded-gc (no less CPU, longer scavenges); --minor-ms (no second semi-space)
      // 1.19x the CPU per bid request. jemalloc's MALLOC_CONF=dirty_decay_ms:1000 kept no less
      // (`npm run memory`, 2 minutes at 400/s: 237 against 232 MB at the end).
      //
      // --v8-pool-size=1: one V8 helper thread per worker (Node's default is 4) for the concurrent
      // GC marking, parallel scavenges and background compiles, since there is one worker per core.
      // With 4 each, 2 workers' 8 helpers took the cores from the main threads in bursts. At
      // 1000/s on 2 cores, 4 alternating rounds: p99 median 168 → 68 ms, shed 0.66 → 0.04 %, CPU
      // per bid request 824 → 779 µs (`npm run ab` with `--node-args-b`).
      //
      // --no-memory-reducer: once a worker's allocation rate drops (a lull in traffic), V8's memory
      // reducer runs full GCs that shrink its heap, and the first seconds after traffic resumes
      // cost more CPU. Two builds side by side, idle 60 s before each 10 s round at 650/s
      // (`npm run ab -- --against . --idle 60 --node-args-b=<these, and this flag>`): 0.957 and
      // 0.949 of the default's CPU per bid request pooled (8 and 12 rounds); 0.989 under steady load
      // (16 rounds, no idle: the reducer acts only in lulls). A worker's RSS moved by ~3 MB
      // (237-240 against 241-243 MB while idle): the young generation is bounded above and jemalloc
      // holds most of the rest (measured with `npm run ab` and `npm run memory`).
      node_args: ['--max-semi-space-size=8', '--v8-pool-size=1', '--heap-growing-percent=100', '--no-memory-reducer'],
      // A worker takes traffic only after main.ts sent process.send('ready') (after listen);
      // `pm2 reload` stops an old worker only once its replacement is ready.
      wait_ready: true,
      listen_timeout: int('LISTEN_TIMEOUT_MS', 30000),
      kill_timeout: killTimeoutMs,
      // Restart a worker whose memory passes this (the log pipeline is bounded by
      // LOG_MAX_MEMORY_BYTES, 256 MiB by default, within it).
      max_memory_restart: env.MAX_MEMORY_RESTART || '1G',
      autorestart: true,
      // A configuration error (src/main.ts, exit code 2, the reason in the error log) is not
      // restarted: every restart would fail the same way. No restart delay: with one PM2 lists a
      // process it will not restart as "waiting restart" forever; min_uptime and max_restarts bound
      // a crash loop.
      stop_exit_codes: [2],
      min_uptime: 5000,
      max_restarts: 15,
      // Application logs are JSON lines (pino); PM2 must not prefix them. One file for all workers
      // (each line carries `worker` and `pid`). Rotate with logrotate (copytruncate) or `pm2 flush`.
      merge_logs: true,
      time: false,
      out_file: env.BIDDER_OUT_FILE || path.join(logDir, 'bidder.out.log'),
      error_file: env.BIDDER_ERR_FILE || path.join(logDir, 'bidder.err.log'),
    },
    {
      name: 'shipper',
      script: path.join(__dirname, 'dist', 'shipper', 'main.js'),
      cwd: __dirname,
      exec_mode: 'fork',
      // PM2 runs a fork-mode app with the `node` first on PATH (the workers, in cluster mode, run on
      // the daemon's Node): the project's Node 24 instead, wherever PM2 is started from.
      interpreter: projectNode(),
      instances: 1,
      env: shipperEnv,
      pmx: false,
      wait_ready: true,
      listen_timeout: 30000,
      kill_timeout: shipStopMs + 10000,
      max_memory_restart: env.SHIP_MAX_MEMORY_RESTART || '2G',
      autorestart: true,
      stop_exit_codes: [2],
      min_uptime: 5000,
      max_restarts: 15,
      merge_logs: true,
      time: false,
      out_file: env.SHIPPER_OUT_FILE || path.join(logDir, 'shipper.out.log'),
      error_file: env.SHIPPER_ERR_FILE || path.join(logDir, 'shipper.err.log'),
    },
  ],
};
