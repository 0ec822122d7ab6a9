'use strict';
// `npm run pm2 -- <args>`: the project's PM2 (node_modules/pm2) on the project's Node 24. The PM2
// home is PM2's own default (~/.pm2) unless PM2_HOME says otherwise (or BIDDER_RUN_DIR, which tests
// and the load test set, makes it $BIDDER_RUN_DIR/pm2), so the commands of PM2's documentation
// (`pm2 scale bidder 4`, `pm2 reload bidder`, `pm2 logs`, `pm2 monit`, with a global pm2 or `npx
// pm2`) reach the cluster `npm start` started. Also the helpers scripts/start.js and the tests use.
//
// The PM2 daemon forks its workers with the Node it runs on, so it must be started from Node 24:
// this script always runs the PM2 CLI with its own process.execPath (a PM2 CLI on another Node only
// talks to the running daemon), and warns when the daemon of this PM2_HOME runs on another Node.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..');
const PM2_CLI = path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2');
const ECOSYSTEM = path.join(ROOT, 'ecosystem.config.js');
const APP = 'bidder';
/** The bid log shipper (ecosystem.config.js), one process beside the bidder's workers. */
const SHIPPER = 'shipper';
const REQUIRED_NODE_MAJOR = 24;

/** Where npm start keeps its state, the PM2 home, the private Redis and the logs. */
function runDir(env = process.env) {
  return path.resolve(env.BIDDER_RUN_DIR || path.join(ROOT, '.run'));
}

function pm2Home(env = process.env) {
  if (env.PM2_HOME) return path.resolve(env.PM2_HOME);
  return env.BIDDER_RUN_DIR ? path.join(runDir(env), 'pm2') : path.join(os.homedir(), '.pm2');
}

/** Where Debian and its derivatives (and Redis's package, which depends on it) put jemalloc. */
const JEMALLOC_PATHS = [
  '/usr/lib/x86_64-linux-gnu/libjemalloc.so.2',
  '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2',
  '/usr/lib64/libjemalloc.so.2',
  '/usr/lib/libjemalloc.so.2',
];

/**
 * The memory allocator of the PM2 daemon and so of every process it forks (workers, shipper):
 * jemalloc through LD_PRELOAD when the machine has it, unless BIDDER_MALLOC=system. glibc's malloc
 * keeps a worker's main arena at its high-water mark: a burst of requests in flight (an exchange's
 * retry storm, a stall) leaves it larger for good, while jemalloc gives unused pages back after a
 * few seconds (bench/RESULTS.md, "Soak"). It must be in the daemon's own environment: a cluster
 * worker gets the app's environment from PM2 only after Node, and its allocator, have started.
 */
function mallocEnv(env = process.env) {
  if ((env.BIDDER_MALLOC || 'jemalloc') === 'system') return {};
  const preload = env.LD_PRELOAD || '';
  if (preload.includes('jemalloc')) return {};
  const lib = JEMALLOC_PATHS.find((p) => fs.existsSync(p));
  if (lib === undefined) return {};
  return { LD_PRELOAD: preload === '' ? lib : `${lib} ${preload}` };
}

/** The environment every PM2 CLI call gets: PM2_HOME and BIDDER_RUN_DIR pinned, the allocator chosen. */
function pm2Env(extra = {}, env = process.env) {
  const merged = { ...env, ...extra };
  return { ...merged, ...mallocEnv(merged), BIDDER_RUN_DIR: runDir(merged), PM2_HOME: pm2Home(merged) };
}

function assertNode() {
  const major = Number(process.versions.node.split('.')[0]);
  if (major < REQUIRED_NODE_MAJOR) {
    process.stderr.write(
      `This needs Node ${REQUIRED_NODE_MAJOR} (this is ${process.version}, ${process.execPath}). ` +
        `Run it through npm (npm start, npm run pm2 -- ...) so that the project's node_modules/.bin/node is used.\n`,
    );
    process.exit(1);
  }
}

function alive(pid) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function realpath(p) {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

/** The PM2 daemon of a PM2_HOME: { pid, exe, ours } or null when none runs. */
function daemonInfo(home = pm2Home()) {
  let pid;
  try {
    pid = Number(fs.readFileSync(path.join(home, 'pm2.pid'), 'utf8').trim());
  } catch {
    return null;
  }
  if (!alive(pid)) return null;
  let exe = null;
  try {
    exe = fs.readlinkSync(`/proc/${pid}/exe`);
  } catch {
    // not Linux, or not ours to read
  }
  return { pid, exe, ours: exe === null || realpath(exe) === realpath(process.execPath) };
}

/** Runs the PM2 CLI synchronously on this Node. */
function pm2(args, { env = {}, stdio = 'pipe', timeout = 120_000 } = {}) {
  const r = spawnSync(process.execPath, [PM2_CLI, ...args], {
    cwd: ROOT,
    env: pm2Env(env),
    stdio,
    encoding: 'utf8',
    ...(timeout > 0 ? { timeout } : {}),
  });
  return { status: r.status === null ? 1 : r.status, stdout: r.stdout || '', stderr: r.stderr || '', error: r.error };
}

/**
 * The PM2 processes of an app, the bidder's by default ([] when no daemon runs: never starts one
 * just to ask). Each: { pmId, pid, status, instance, memory, cpu, restarts, uptime }.
 */
/** Names of every app in the daemon of `home` ([] when no daemon runs). */
function appNames(home = pm2Home()) {
  if (!daemonInfo(home)) return [];
  const r = pm2(['jlist'], { env: { PM2_HOME: home } });
  const start = r.stdout.indexOf('[');
  if (r.status !== 0 || start < 0) return [];
  try {
    return [...new Set(JSON.parse(r.stdout.slice(start)).map((p) => p.name))];
  } catch {
    return [];
  }
}

function appProcesses(home = pm2Home(), name = APP) {
  if (!daemonInfo(home)) return [];
  const r = pm2(['jlist'], { env: { PM2_HOME: home } });
  if (r.status !== 0) return [];
  const start = r.stdout.indexOf('[');
  if (start < 0) return [];
  let list;
  try {
    list = JSON.parse(r.stdout.slice(start));
  } catch {
    return [];
  }
  return list
    .filter((p) => p.name === name)
    .map((p) => ({
      pmId: p.pm_id,
      pid: p.pid,
      status: p.pm2_env && p.pm2_env.status,
      instance: p.pm2_env && p.pm2_env.NODE_APP_INSTANCE,
      memory: p.monit ? p.monit.memory : 0,
      cpu: p.monit ? p.monit.cpu : 0,
      restarts: p.pm2_env ? p.pm2_env.restart_time : 0,
      uptime: p.pm2_env && p.pm2_env.pm_uptime ? Date.now() - p.pm2_env.pm_uptime : 0,
    }));
}

module.exports = { refusedScale, appNames, ROOT, PM2_CLI, ECOSYSTEM, APP, SHIPPER, runDir, pm2Home, pm2Env, mallocEnv, assertNode, alive, daemonInfo, pm2, appProcesses };

/**
 * `scale bidder 0` (or a negative count) would leave the public port refusing every connection,
 * and PM2 accepts it without a word: the reason to refuse it, or null. `npm stop` stops the bidder.
 */
function refusedScale(args) {
  const i = args.indexOf('scale');
  if (i < 0 || args[i + 1] !== APP) return null;
  const n = args[i + 2];
  if (n === undefined || !/^[+-]?\d+$/.test(n) || n.startsWith('+') || Number(n) > 0) return null;
  if (n.startsWith('-')) return null; // a relative change: checked by PM2 against the running count
  return `pm2 scale ${APP} ${n}: refused: with no worker the public port refuses every connection (and the admin port every scrape). Stop the bidder with \`npm stop\`, or scale to 1 or more.`;
}

if (require.main === module) {
  assertNode();
  const refused = refusedScale(process.argv.slice(2));
  if (refused) {
    process.stderr.write(`${refused}\n`);
    process.exit(2);
  }
  const d = daemonInfo();
  if (d && !d.ours) {
    process.stderr.write(
      `warning: the PM2 daemon of ${pm2Home()} (pid ${d.pid}) runs on ${d.exe}, not on ${process.execPath}; ` +
        `its workers would run on that Node. Run \`npm stop\` (or \`npm run pm2 -- kill\`), then \`npm start\`.\n`,
    );
  }
  const r = pm2(process.argv.slice(2), { stdio: 'inherit', timeout: 0 });
  if (r.error) process.stderr.write(`pm2: ${r.error.message}\n`);
  process.exit(r.status);
}
