'use strict';
// Brings up (and down) what the load test measures: Redis, the bidder's PM2 cluster (through
// scripts/start.js) and the bare-Fastify baseline's PM2 cluster (tools/bench/baseline/).
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { pm2, pm2DaemonPid } = require('./loadtest-proc');
const redisLib = require('../../scripts/lib/redis');

const ROOT = path.resolve(__dirname, '..', '..');
const START_JS = path.join(ROOT, 'scripts', 'start.js');

/** Runs `node scripts/start.js <cmd>` on the project's Node; resolves {code, stdout, stderr}. */
function startJs(cmd, env) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [START_JS, cmd], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Resolves true once `url` answers an HTTP status below 500. */
function answers(url, timeoutMs = 1000) {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode < 500);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
  });
}

async function waitHttp(url, timeoutMs, what) {
  await redisLib.waitFor(() => answers(url), timeoutMs, what);
}

/**
 * Redis for the bid log: $REDIS_URL when set (it must answer), else a private redis-server on a
 * free loopback port, a child of this process. With `cluster` (--redis-cluster), or
 * REDIS_CLUSTER_NODES set, a Redis Cluster instead: those nodes (one must answer), else a local
 * one of 3 masters with a replica each (scripts/lib/redis-cluster.js), children of this process.
 * Returns {url, nodes (the cluster's `host:port,…`, or null), started, pids, stop()}.
 */
async function ensureRedis({ log, dir, cluster = false }) {
  const nodesEnv = (process.env.REDIS_CLUSTER_NODES || '').trim();
  if (nodesEnv || cluster) {
    const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
    if (nodesEnv) {
      const seeds = nodesEnv.split(',').map((n) => n.trim());
      let up = false;
      for (const n of seeds) if (await redisLib.ping(`redis://${n}`, 1000)) up = true;
      if (!up) throw new Error(`REDIS_CLUSTER_NODES=${nodesEnv}: no node answers`);
      log(`loadtest: using the Redis Cluster at ${nodesEnv}`);
      return { url, nodes: seeds.join(','), started: false, pids: [], stop: async () => {} };
    }
    fs.mkdirSync(dir, { recursive: true });
    const { startRedisCluster } = require('../../scripts/lib/redis-cluster');
    const c = await startRedisCluster({ dir: path.join(dir, 'cluster'), log });
    log(`loadtest: started a local Redis Cluster at ${c.nodesEnv}`);
    return { url, nodes: c.nodesEnv, started: true, pids: c.nodes.map((n) => n.pid), stop: () => c.stop() };
  }
  const fromEnv = process.env.REDIS_URL;
  if (fromEnv) {
    if (!(await redisLib.ping(fromEnv, 1000))) throw new Error(`REDIS_URL=${fromEnv} does not answer`);
    log(`loadtest: using Redis at ${fromEnv}`);
    return { url: fromEnv, nodes: null, started: false, pids: [], stop: async () => {} };
  }
  fs.mkdirSync(dir, { recursive: true });
  const r = await redisLib.startRedis({ dir, log });
  log(`loadtest: started a private Redis at ${r.url} (pid ${r.pid})`);
  return { url: r.url, nodes: null, started: true, pids: [r.pid], stop: () => r.stop() };
}

/**
 * The bidder's cluster through `scripts/start.js start` (idempotent: a cluster already running is
 * used as it is). Returns {url, redisUrl, logKey, pm2Home, shipDir, startedPm2, startedRedis, stop()};
 * shipDir is where the bid log shipper that start.js runs beside the workers writes its Parquet files
 * (ecosystem.config.js: $SHIP_DIR, else $BIDDER_RUN_DIR/bidlog).
 */
async function startBidder({ workers, port, redisUrl, redisNodes = null, logKey, log, env: baseEnv = process.env, volatileRedis = false }) {
  if (!fs.existsSync(START_JS)) throw new Error('scripts/start.js is missing: the load test starts the bidder through it');
  const env = { ...baseEnv, WORKERS: String(workers), REDIS_URL: redisUrl, LOG_REDIS_KEY: logKey };
  // A Redis this run started holds nothing to keep (no append-only file): production workers refuse
  // such a Redis unless told (src/health/redis-durability.ts).
  if (volatileRedis) env.REDIS_ALLOW_VOLATILE = '1';
  if (redisNodes) Object.assign(env, { REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: redisNodes });
  if (port) env.PORT = String(port);
  const r = await startJs('start', env);
  const line = r.stdout.split('\n').find((l) => l.startsWith('BIDDER_READY '));
  if (r.code !== 0 || !line) {
    throw new Error(`scripts/start.js start failed (exit ${r.code}):\n${r.stdout}${r.stderr}`);
  }
  const ready = JSON.parse(line.slice('BIDDER_READY '.length));
  // The PM2_HOME start.js used (scripts/pm2.js: $PM2_HOME, else $BIDDER_RUN_DIR/pm2, else PM2's ~/.pm2).
  const pm2lib = require(path.join(ROOT, 'scripts', 'pm2.js'));
  const pm2Home = ready.pm2Home || pm2lib.pm2Home(env);
  const shipDir = env.SHIP_DIR ? path.resolve(env.SHIP_DIR) : path.join(pm2lib.runDir(env), 'bidlog');
  const base = String(ready.url).replace(/\/+$/, '');
  // A cluster that was already running keeps its own log key (we cannot know another one).
  const key = ready.startedPm2 ? logKey : ready.logRedisKey || process.env.LOG_REDIS_KEY || 'bidlog';
  log(
    `loadtest: bidder at ${base} (${ready.startedPm2 ? 'started now' : 'already running'}), Redis ${ready.redisClusterNodes ? `Cluster ${ready.redisClusterNodes}` : ready.redisUrl}, ` +
      `PM2_HOME ${pm2Home}, log key ${key}`,
  );
  return {
    app: 'bidder',
    url: base,
    redisUrl: usableRedisUrl(ready.redisUrl, pm2lib.runDir(env), env) || redisUrl,
    redisNodes: ready.redisClusterNodes || null,
    logKey: key,
    pm2Home,
    shipDir,
    startedPm2: Boolean(ready.startedPm2),
    startedRedis: Boolean(ready.startedRedis),
    async stop() {
      const s = await startJs('stop', { ...env, PM2_HOME: pm2Home });
      if (s.code !== 0) log(`loadtest: scripts/start.js stop failed (exit ${s.code}):\n${s.stdout}${s.stderr}`);
    },
  };
}

/**
 * The Redis URL to count the bid log with. start.js prints it with the password masked
 * (`redis://:***@host:port`, the private Redis `npm start` made); the real one is in its state file
 * (BIDDER_RUN_DIR/state.json, the owner's only) or in REDIS_URL. Throws when neither matches.
 */
function usableRedisUrl(printed, runDir, env) {
  if (!printed || !printed.includes('***')) return printed;
  const candidates = [];
  try {
    candidates.push(JSON.parse(fs.readFileSync(path.join(runDir, 'state.json'), 'utf8')).redis.url);
  } catch {
    // no state file: not started by start.js from this run directory
  }
  if (env.REDIS_URL) candidates.push(env.REDIS_URL);
  const real = candidates.find((u) => typeof u === 'string' && redisLib.maskedUrl(u) === printed);
  if (real) return real;
  throw new Error(`the running bidder's Redis (${printed}) needs a password this run cannot find: set REDIS_URL with it, or BIDDER_RUN_DIR to the directory the bidder was started with`);
}

/** The baseline under its own PM2 daemon (PM2_HOME `home`). Returns {url, pm2Home, stop()}. */
async function startBaseline({ workers, port, home, log }) {
  fs.mkdirSync(home, { recursive: true });
  const eco = path.join(ROOT, 'tools', 'bench', 'baseline', 'ecosystem.config.js');
  // The same allocator as the bidder's daemon (scripts/pm2.js).
  const env = { WORKERS: String(workers), PORT: String(port), HOST: '127.0.0.1', ...require(path.join(ROOT, 'scripts', 'pm2.js')).mallocEnv() };
  const stop = async () => {
    if (pm2DaemonPid(home)) await pm2(['kill'], { home }).catch((e) => log(`loadtest: pm2 kill (baseline) failed: ${e.message}`));
    fs.rmSync(home, { recursive: true, force: true });
  };
  try {
    await pm2(['start', eco, '--update-env'], { home, env });
    const url = `http://127.0.0.1:${port}`;
    await waitHttp(`${url}/health/ready`, 20_000, `the baseline on port ${port}`);
    log(`loadtest: baseline (bare Fastify, ${workers} workers) at ${url}, PM2_HOME ${home}`);
    return { app: 'baseline', url, pm2Home: home, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

module.exports = { ensureRedis, startBidder, startBaseline, answers, waitHttp, START_JS };
