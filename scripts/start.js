'use strict';
// `npm start` / `npm stop` / `node scripts/start.js status`: the whole bidder on this machine.
//
//   start   build if dist/ is missing or older than src/; use the Redis at REDIS_URL if it answers,
//           else start a private redis-server (files in .run/redis: an append-only file fsynced
//           every second, at most REDIS_MAXMEMORY (1gb), never evicting); in cluster mode
//           (REDIS_CLUSTER_NODES, or REDIS_MODE=cluster) a node of that cluster must answer (it
//           is never started here: `npm run redis-cluster -- start` makes a local one); start the PM2 cluster
//           (ecosystem.config.js, in PM2's own home ~/.pm2, daemon on this Node 24) and the bid log
//           shipper beside it; wait until every worker is ready and the shipper online; print
//           where it listens and how to stop it. Idempotent: when the
//           bidder already runs it says so and exits 0. The last line is machine-readable:
//           BIDDER_READY {"url":...,"redisUrl":...,["redisClusterNodes":...,]"startedRedis":bool,"startedPm2":bool,"workers":n}
//   stop    stop the workers gracefully (their logs are flushed), then the shipper (it finishes its
//           batch), then the PM2 daemon unless it runs other apps, then the Redis that `start`
//           started (by its PID, after a SAVE so the log survives to the next start)
//   status  workers, Redis, health; exit 0 when running, 3 when not
//
// Without EXCHANGES_FILE (and EXCHANGES_OPEN=1) the workers get a generated exchanges file that
// admits loopback callers only ($BIDDER_RUN_DIR/exchanges.json, scripts/lib/local-exchanges.js).
//
// Environment: PORT (8080), HOST, WORKERS (default one per core), REDIS_URL, BIDDER_RUN_DIR
// (default <project>/.run), PM2_HOME (default ~/.pm2, or $BIDDER_RUN_DIR/pm2 when that is set),
// and every bidder variable (docs/operations.md), passed on to the workers.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const redisLib = require('./lib/redis');
const secretsLib = require('./lib/secrets');
const { localExchanges } = require('./lib/local-exchanges');
const { ROOT, ECOSYSTEM, APP, SHIPPER, runDir, pm2Home, assertNode, alive, daemonInfo, pm2, appProcesses, appNames } = require('./pm2');
const { readCommandLine, usageError } = require('./lib/cli');

const READY_TIMEOUT_MS = 90_000;

// `node scripts/start.js status | head` must not end in an EPIPE stack trace.
process.stdout.on('error', (e) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode || 0);
  throw e;
});

function say(msg) {
  process.stdout.write(`${msg}\n`);
}

function fail(msg, code = 1) {
  process.stderr.write(`bidder: ${msg}\n`);
  process.exit(code);
}

function intEnv(name, def) {
  const v = process.env[name];
  if (v === undefined || v.trim() === '') return def;
  if (!/^\d+$/.test(v.trim())) fail(`${name}=${JSON.stringify(v)}: expected a whole number`, 2);
  return Number(v);
}

function stateFile() {
  return path.join(runDir(), 'state.json');
}

function readState() {
  try {
    return JSON.parse(fs.readFileSync(stateFile(), 'utf8'));
  } catch {
    return null;
  }
}

function writeState(state) {
  fs.mkdirSync(runDir(), { recursive: true, mode: 0o700 });
  const tmp = `${stateFile()}.${process.pid}`;
  // It holds the private Redis's URL, password included: the owner's only.
  fs.writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, stateFile());
}

/** A Redis URL as it may be printed: the password replaced by ***. */
const shown = redisLib.maskedUrl;

// ---------------------------------------------------------------------------------------- build

function newestMtime(dir, filter) {
  let newest = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) newest = Math.max(newest, newestMtime(p, filter));
    else if (filter(e.name)) newest = Math.max(newest, fs.statSync(p).mtimeMs);
  }
  return newest;
}

function mtime(p) {
  try {
    return fs.statSync(p).mtimeMs;
  } catch {
    return 0;
  }
}

/** Compiles src/ into dist/ when dist/main.js is missing or older than a source or tsconfig. */
function ensureBuilt() {
  const dist = path.join(ROOT, 'dist');
  // tsc rewrites only outputs that change, but always its .tsbuildinfo.
  const built = mtime(path.join(dist, '.tsbuildinfo'));
  const sources = Math.max(
    newestMtime(path.join(ROOT, 'src'), (n) => n.endsWith('.ts') && !n.endsWith('.spec.ts')),
    mtime(path.join(ROOT, 'tsconfig.json')),
    mtime(path.join(ROOT, 'tsconfig.build.json')),
  );
  if (mtime(path.join(dist, 'main.js')) > 0 && built >= sources) return false;
  say(mtime(path.join(dist, 'main.js')) > 0 ? 'bidder: dist/ is older than src/, building' : 'bidder: building dist/');
  const tsc = path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
  if (r.status !== 0) fail('the build failed (npm run build); not starting');
  const now = new Date();
  fs.utimesSync(path.join(dist, '.tsbuildinfo'), now, now);
  return true;
}

// ---------------------------------------------------------------------------------------- redis

function portFree(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

/** The seed nodes (`host:port`) when the bidder runs on a Redis Cluster, else null. */
function clusterSeeds() {
  const nodes = (process.env.REDIS_CLUSTER_NODES || '').trim();
  if (nodes !== '') return nodes.split(',').map((n) => n.trim()).filter(Boolean);
  if ((process.env.REDIS_MODE || '').trim() !== 'cluster') return null;
  const u = new URL((process.env.REDIS_URL || '').trim() || 'redis://127.0.0.1:6379');
  return [`${u.hostname}:${u.port || 6379}`];
}

/**
 * Uses REDIS_URL (default redis://127.0.0.1:6379) if it answers, else starts a private redis-server.
 * On a Redis Cluster: one of its seed nodes must answer.
 */
async function ensureRedis() {
  const seeds = clusterSeeds();
  if (seeds !== null) {
    for (const s of seeds) {
      if (await redisLib.ping(`redis://${s}`)) return { url: (process.env.REDIS_URL || '').trim() || 'redis://127.0.0.1:6379', cluster: seeds.join(','), started: false, pid: null, dir: null };
    }
    fail(`no node of the Redis Cluster answers (${seeds.join(',')}); start it, or a local one with \`npm run redis-cluster -- start\` and its REDIS_CLUSTER_NODES`);
  }
  const explicit = process.env.REDIS_URL && process.env.REDIS_URL.trim();
  const url = explicit || 'redis://127.0.0.1:6379';
  const u = new URL(url);
  if (await redisLib.ping(url)) {
    const answer = await redisLib.command(url, 'PING', 5_000);
    if (answer === '+PONG') return { url, started: false, pid: null, dir: null };
    return (await ownRedisAgain(u, answer)) || fail(`${shown(url)} answers ${answer || 'nothing'} to PING: not usable; give its password in REDIS_URL (redis://:<password>@host:port), or stop it`);
  }
  if (explicit && !LOOPBACK.has(u.hostname)) {
    fail(`REDIS_URL=${shown(url)} does not answer; start that Redis, or unset REDIS_URL to let npm start run a private one`);
  }
  const wanted = Number(u.port || 6379);
  const port = (await portFree(wanted)) ? wanted : await redisLib.freePort();
  const dir = path.join(runDir(), 'redis');
  say(`bidder: no Redis answers at ${shown(url)}; starting a private redis-server on 127.0.0.1:${port} (files in ${dir.startsWith(ROOT + path.sep) ? path.relative(ROOT, dir) : dir}), with a password kept in ${path.join(runDir(), 'secrets.json')}`);
  // Any local user could otherwise reset spend or read the bid log on loopback: a generated password (requirepass).
  const password = localSecretsOrFail(() => secretsLib.redisPassword(runDir(), say));
  // Spend and billing markers are money: an append-only file (fsync every second), and no eviction.
  const maxmemory = (process.env.REDIS_MAXMEMORY || '').trim() || '1gb';
  if (!/^\d+(kb|mb|gb)?$/i.test(maxmemory)) fail(`REDIS_MAXMEMORY=${JSON.stringify(maxmemory)}: expected a size such as 512mb or 2gb`, 2);
  const r = await redisLib.startRedis({ port, dir, daemonize: true, log: (m) => say(`bidder: ${m}`), password, persist: true, maxmemory });
  say(`bidder: the private Redis keeps its data in an append-only file (fsync every second) and holds at most ${maxmemory} (REDIS_MAXMEMORY), never evicting a key`);
  return { url: r.url, started: true, pid: r.pid, dir: r.dir };
}

/**
 * A Redis on loopback that wants a password (-NOAUTH) and takes the one in secrets.json is the
 * private redis-server an earlier `npm start` made, started again by hand (from its config file,
 * which holds the password) or by a reboot's service: used with that password and recorded as ours,
 * so that `npm stop` saves and stops it. Null when it is not.
 */
async function ownRedisAgain(u, answer) {
  if (!LOOPBACK.has(u.hostname) || u.password || !/^-NOAUTH/.test(answer || '')) return null;
  const password = secretsLib.savedRedisPassword(runDir());
  if (!password) return null;
  const withPassword = new URL(u.href);
  withPassword.password = encodeURIComponent(password);
  const url = withPassword.href.replace(/\/$/, '');
  if ((await redisLib.command(url, 'PING', 5_000)) !== '+PONG') return null;
  const pid = await redisLib.serverPid(url);
  const dir = path.join(runDir(), 'redis');
  say(`bidder: the redis-server on ${u.hostname}:${u.port || 6379} takes the password in ${path.join(runDir(), 'secrets.json')}: the private one, started again by hand (pid ${pid}); using it, and \`npm stop\` stops it`);
  return { url, started: pid !== null && isRedisServer(pid), pid, dir };
}

function isRedisServer(pid) {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return alive(pid); // no /proc: trust the PID we recorded
  }
}

async function stopOurRedis(redis) {
  if (!redis || !redis.started || !redis.pid) return false;
  if (!alive(redis.pid) || !isRedisServer(redis.pid)) return false;
  // A snapshot besides the append-only file, taken before the stop.
  const saved = await redisLib.command(redis.url, 'SAVE');
  if (saved !== '+OK') say(`bidder: SAVE on ${shown(redis.url)} answered ${saved}; stopping it anyway`);
  process.kill(redis.pid, 'SIGTERM');
  const until = Date.now() + 10_000;
  while (alive(redis.pid) && Date.now() < until) await sleep(50);
  if (alive(redis.pid)) process.kill(redis.pid, 'SIGKILL');
  return true;
}

// ------------------------------------------------------------------------------------------ http

function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

function get(url, timeoutMs = 2_000) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: 0, body: '' }));
  });
}

function localUrl(port) {
  const host = process.env.HOST && !['0.0.0.0', '::', ''].includes(process.env.HOST.trim()) ? process.env.HOST.trim() : '127.0.0.1';
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/** Waits until `workers` PM2 processes are online and the port answers ready. */
async function waitReady(url, workers, timeoutMs) {
  const until = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < until) {
    const procs = appProcesses();
    const online = procs.filter((p) => p.status === 'online').length;
    const errored = procs.filter((p) => p.status === 'errored').length;
    if (errored > 0) return `${errored} worker(s) errored`;
    // A configuration error stops a worker for good (exit code 2, ecosystem.config.js stop_exit_codes).
    const stopped = procs.filter((p) => p.status === 'stopped').length;
    if (stopped > 0) return `${stopped} worker(s) stopped (a configuration error, named above)`;
    if (online >= workers) {
      const r = await get(`${url}/health/ready`);
      if (r.status === 200) return null;
      last = `health/ready answered ${r.status || 'nothing'} ${r.body}`;
    } else {
      last = `${online}/${workers} workers online`;
    }
    await sleep(250);
  }
  return `not ready after ${timeoutMs / 1000} s (${last})`;
}

/** Waits until the shipper's process is online (it signals PM2 once its admin server listens). */
async function waitShipper(timeoutMs) {
  const until = Date.now() + timeoutMs;
  let last = 'not started';
  while (Date.now() < until) {
    const p = appProcesses(pm2Home(), SHIPPER)[0];
    if (p && p.status === 'online') return null;
    if (p && p.status === 'errored') return 'the shipper errored';
    // A configuration error (or a Node older than 24) stops it for good (exit code 2, stop_exit_codes).
    if (p && p.status === 'stopped') return 'the shipper stopped (a configuration error, named in its error log)';
    last = p ? p.status : 'not started';
    await sleep(250);
  }
  return `the shipper is not online after ${timeoutMs / 1000} s (${last})`;
}

function tail(file, lines = 30) {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').slice(-lines - 1).join('\n');
  } catch {
    return '';
  }
}

function readyLine(info) {
  return `BIDDER_READY ${JSON.stringify(info)}`;
}

// ---------------------------------------------------------------------------------------- secrets

/**
 * The workers run with NODE_ENV=production, which refuses the development secrets. On one machine
 * `npm start` makes its own: random secrets kept in $BIDDER_RUN_DIR/secrets.json (scripts/lib/secrets.js:
 * mode 0600, made 0600 if it was not; a damaged file is refused, not replaced), the same at every
 * start, so tracking URLs and hashed user keys stay valid across restarts. Secrets set in the
 * environment win; several hosts must share theirs (set them, docs/operations.md).
 */
function localSecretsOrFail(fn) {
  try {
    return fn();
  } catch (e) {
    if (e instanceof secretsLib.DamagedSecretsError) fail(e.message, 2);
    throw e;
  }
}

function localSecrets() {
  return localSecretsOrFail(() => secretsLib.localSecrets(runDir(), process.env, say));
}

// ---------------------------------------------------------------------------------------- commands

async function start() {
  assertNode();
  const port = intEnv('PORT', 8080);
  const running = appProcesses().filter((p) => p.status === 'online');
  const state = readState();
  if (running.length === 0 && appProcesses(pm2Home(), SHIPPER).some((p) => p.status === 'online')) {
    say(`bidder: no worker runs (\`pm2 scale ${APP} 0\`, or every worker stopped) while the shipper does: starting the workers again`);
  }
  if (running.length > 0) {
    const url = (state && state.url) || localUrl(port);
    const err = await waitReady(url, running.length, 30_000);
    if (err) fail(`the bidder under ${pm2Home()} runs (${running.length} workers) but is not ready: ${err}`);
    say(`bidder: already running, ${running.length} workers on ${url} (PM2_HOME ${pm2Home()}); stop it with: npm stop`);
    say(
      readyLine({
        url,
        redisUrl: shown((state && state.redis && state.redis.url) || process.env.REDIS_URL || 'redis://127.0.0.1:6379'),
        startedRedis: false,
        startedPm2: false,
        workers: running.length,
        alreadyRunning: true,
      }),
    );
    return;
  }

  ensureBuilt();

  const daemon = daemonInfo();
  if (daemon && !daemon.ours) {
    // The daemon forks the workers with its own Node: it must be this one (24). Restart it, unless
    // it runs someone else's apps too (PM2_HOME is PM2's shared default): then say what to do.
    const others = appNames().filter((n) => n !== APP && n !== SHIPPER);
    if (others.length > 0) {
      fail(
        `the PM2 daemon of ${pm2Home()} runs on ${daemon.exe} (not Node 24) with other apps (${others.join(', ')}); ` +
          `the bidder's workers would run on that Node. Stop that daemon (pm2 kill) or start the bidder with PM2_HOME set to another directory.`,
      );
    }
    say(`bidder: the PM2 daemon of ${pm2Home()} runs on ${daemon.exe}; restarting it on ${process.execPath}`);
    pm2(['kill']);
  }

  // Keep a Redis this script started earlier (e.g. a start that failed after it) instead of a second one.
  let redis = state && state.redis && state.redis.started && alive(state.redis.pid) && (await redisLib.command(state.redis.url, 'PING', 5_000)) === '+PONG' ? state.redis : null;
  if (!redis) redis = await ensureRedis();
  const base = { startedAt: new Date().toISOString(), pm2Home: pm2Home(), redis };
  writeState(base);

  // A stopped or errored app from an earlier run would keep its old settings: start afresh.
  if (appProcesses().length > 0) pm2(['delete', APP]);
  if (appProcesses(pm2Home(), SHIPPER).length > 0) pm2(['delete', SHIPPER]);

  const workers = intEnv('WORKERS', 0);
  const url = localUrl(port);
  // On a cluster the workers take REDIS_MODE / REDIS_CLUSTER_NODES (and REDIS_URL's credentials) from this environment.
  const env = { PORT: String(port), ...(redis.cluster ? {} : { REDIS_URL: redis.url }), ...localSecrets() };
  // Production refuses to start without EXCHANGES_FILE; on this machine: loopback only, said aloud.
  Object.assign(env, localExchanges(runDir(), process.env, say));
  // Production refuses to start without TRACKING_BASE_URL; a trial on this machine gets this one, said aloud.
  if (!process.env.TRACKING_BASE_URL || process.env.TRACKING_BASE_URL.trim() === '') {
    env.TRACKING_BASE_URL = url;
    say(`bidder: TRACKING_BASE_URL not set: notice URLs point at ${url}, which only this machine reaches; set it to the public address of this bidder for real exchanges`);
  }
  if (workers > 0) env.WORKERS = String(workers);
  say(`bidder: starting ${workers || 'one per core'} worker(s) under PM2 (PM2_HOME ${pm2Home()})`);
  const r = pm2(['start', ECOSYSTEM, '--only', `${APP},${SHIPPER}`], { env, timeout: READY_TIMEOUT_MS + 30_000 });
  if (r.status !== 0) {
    process.stderr.write(r.stdout + r.stderr);
    fail('pm2 start failed; `npm stop` cleans up');
  }
  const expected = appProcesses().length;
  writeState({ ...base, url, port, workers: expected });
  // Each failure points at the error log of the app that failed (ecosystem.config.js names them).
  const logDir = process.env.BIDDER_LOG_DIR || path.join(runDir(), 'logs');
  const failed = async (wait, app, file) => {
    const err = await wait;
    if (!err) return;
    process.stderr.write(`${tail(file)}\n`);
    fail(`${err}; see ${file}, \`npm run pm2 -- logs ${app}\`; \`npm stop\` cleans up`);
  };
  await failed(waitReady(url, expected, READY_TIMEOUT_MS), APP, process.env.BIDDER_ERR_FILE || path.join(logDir, 'bidder.err.log'));
  await failed(waitShipper(READY_TIMEOUT_MS), SHIPPER, process.env.SHIPPER_ERR_FILE || path.join(logDir, 'shipper.err.log'));
  say(`bidder: ${expected} workers listening on ${url} (bid: POST ${url}/openrtb2/bid; metrics of every worker on the admin port: http://127.0.0.1:${process.env.ADMIN_PORT || 8081}/metrics/cluster)`);
  say(`bidder: bid log in ${redis.cluster ? `the Redis Cluster at ${redis.cluster}` : shown(redis.url)}${redis.started ? ` (private redis-server, pid ${redis.pid})` : ''}, shipped to Parquet by the shipper (\`npm run report\`)`);
  say('bidder: stop with `npm stop`; scale with `npm run pm2 -- scale bidder <n>`; reload with `npm run pm2 -- reload bidder`');
  say(readyLine({ url, redisUrl: shown(redis.url), ...(redis.cluster ? { redisClusterNodes: redis.cluster } : {}), startedRedis: redis.started, startedPm2: true, workers: expected }));
}

async function stop() {
  assertNode();
  const state = readState();
  const daemon = daemonInfo();
  let workers = 0;
  if (daemon) {
    workers = appProcesses().length;
    // delete = graceful stop of every worker (SIGINT, then their own drain and log flush, within
    // kill_timeout) and removal from PM2; then the daemon itself.
    if (workers > 0) {
      const r = pm2(['delete', APP], { timeout: 120_000 });
      if (r.status !== 0) process.stderr.write(r.stdout + r.stderr);
    }
    // After the workers, so that their final flush may still be shipped; it finishes its batch.
    if (appProcesses(pm2Home(), SHIPPER).length > 0) {
      const r = pm2(['delete', SHIPPER], { timeout: 120_000 });
      if (r.status !== 0) process.stderr.write(r.stdout + r.stderr);
    }
    // The daemon goes too, unless it runs other apps (PM2_HOME is PM2's shared default).
    if (appNames().length === 0) pm2(['kill'], { timeout: 60_000 });
  }
  const stoppedRedis = await stopOurRedis(state && state.redis);
  try {
    fs.unlinkSync(stateFile());
  } catch {
    // nothing recorded
  }
  if (!daemon && !stoppedRedis) {
    say('bidder: not running');
    return;
  }
  say(
    `bidder: stopped${workers ? ` ${workers} worker(s)` : ''}${daemon ? ` and the PM2 daemon (pid ${daemon.pid})` : ''}` +
      `${stoppedRedis ? `, and the private redis-server (pid ${state.redis.pid}; its data is saved in ${state.redis.dir})` : ''}`,
  );
}

async function status() {
  assertNode();
  const state = readState();
  const daemon = daemonInfo();
  const procs = appProcesses();
  const online = procs.filter((p) => p.status === 'online');
  say(`PM2_HOME ${pm2Home()}: ${daemon ? `daemon pid ${daemon.pid} on ${daemon.exe || 'node'}` : 'no daemon'}`);
  for (const p of procs) {
    say(
      `  ${APP}[${p.instance}] pm_id ${p.pmId} pid ${p.pid} ${p.status}, ${(p.memory / 1048576).toFixed(0)} MiB, ` +
        `cpu ${p.cpu}%, restarts ${p.restarts}, up ${Math.round(p.uptime / 1000)} s`,
    );
  }
  for (const p of appProcesses(pm2Home(), SHIPPER)) {
    say(`  ${SHIPPER} pm_id ${p.pmId} pid ${p.pid} ${p.status}, ${(p.memory / 1048576).toFixed(0)} MiB, cpu ${p.cpu}%, restarts ${p.restarts}`);
  }
  if (state && state.redis && state.redis.cluster) {
    const seeds = state.redis.cluster.split(',');
    let up = 0;
    for (const s of seeds) if (await redisLib.ping(`redis://${s}`)) up++;
    say(`Redis Cluster ${state.redis.cluster}: ${up} of ${seeds.length} seed nodes answering`);
  } else if (state && state.redis) {
    const r = state.redis;
    const up = await redisLib.ping(r.url);
    say(`Redis ${shown(r.url)}: ${up ? 'answering' : 'not answering'}${r.started ? ` (private, pid ${r.pid})` : ''}`);
  }
  if (online.length > 0) {
    const url = (state && state.url) || localUrl(intEnv('PORT', 8080));
    const h = await get(`${url}/health/ready`);
    say(`${url}/health/ready: ${h.status || 'no answer'} ${h.body}`);
  }
  if (online.length === 0) {
    // The shipper runs but no worker: `pm2 scale bidder 0` (PM2 accepts it) or every worker stopped.
    const shipping = appProcesses(pm2Home(), SHIPPER).some((p) => p.status === 'online');
    say(shipping ? `bidder: no worker runs (scaled to 0, or every worker stopped) while the shipper does: the public port refuses every connection; \`npm run pm2 -- scale ${APP} <n>\`, or \`npm start\`` : 'bidder: not running');
    process.exitCode = 3;
  }
}

const commands = { start, stop, status };
const USAGE = `usage: npm start | npm stop | npm start -- status   (node scripts/start.js [start|stop|status])
  start   build if needed, start Redis (when REDIS_URL answers nothing), the PM2 cluster and the shipper; print where it listens
  stop    stop the workers (each flushes its bid log), the shipper, and the Redis that start started
  status  what runs: workers, shipper, Redis, readiness (exit 3 when no worker runs)`;
const { positionals } = readCommandLine({ name: 'start', usage: USAGE, allowPositionals: true, maxPositionals: 1 });
const cmd = positionals[0] || 'start';
if (!commands[cmd]) usageError('start', USAGE, `unknown command '${cmd}'`);
commands[cmd]().catch((e) => fail(e && e.stack ? e.stack : String(e)));
