/**
 * What a Redis Cluster costs off the bid path (not a test): a local redis-server and a local
 * 3-master cluster with a replica each (scripts/lib/redis-cluster.js), the real code.
 *
 *   npm run build:test && node_modules/.bin/node .test-build/tools/bench/cluster.bench.js [--write]
 *
 * 1. The spend refresh (SpendService.refresh, every BUDGET_REFRESH_MS on every worker) with 40 and
 *    1000 budgeted campaigns: the heartbeat and one MGET on one server; on a cluster the heartbeat
 *    and one READ_MANY script per master (src/redis/scripts.ts: the keys of different campaigns
 *    are in different slots, which one MGET cannot span). Wall time and this process's CPU per
 *    refresh, and the commands it sends.
 * 2. A bid log push (RedisService.pushOnce, one per frame) of a 64 KiB and a 448 KiB frame (the
 *    largest, ~4 MiB of NDJSON at ~9x): on one server; on the cluster through the cluster client;
 *    on the cluster confirmed by WAIT 1 on the list's master (LOG_REDIS_WAIT_REPLICAS=1, the
 *    cluster default). Wall time and CPU per push.
 * With --write the figures go to bench/RESULTS-cluster.md (machine, Node version, commit).
 */
import { execSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import 'reflect-metadata';
import { Cluster } from 'ioredis';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { SpendService } from '../../src/delivery/spend.service';
import { ackKey } from '../../src/bidlog/keys';
import { RedisFrameSink } from '../../src/log/log-sink';
import { RedisService } from '../../src/redis/redis.service';
import { readCommandLine } from './cli';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisLib = require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as {
  startRedis(o: object): Promise<{ url: string; stop(): Promise<void> }>;
};
// eslint-disable-next-line @typescript-eslint/no-require-imports
const clusterLib = require(path.join(ROOT, 'scripts', 'lib', 'redis-cluster.js')) as {
  startRedisCluster(o: object): Promise<{ nodesEnv: string; stop(): Promise<void> }>;
};

const WRITE = readCommandLine({ name: 'cluster.bench', usage: 'usage: node .test-build/tools/bench/cluster.bench.js [--write]   (--write: bench/RESULTS-cluster.md)', options: { write: { type: 'boolean' } } }).values.write === true;
const REFRESHES = 300;
const PUSHES = 150;

function campaignsFile(dir: string, n: number): string {
  const campaigns = [];
  for (let i = 0; i < n; i++) {
    campaigns.push({
      id: `bench-${i}`,
      adomain: [`c${i}.example`],
      cat: ['IAB3'],
      landingUrl: `https://c${i}.example/`,
      budget: { total: 1000, daily: 100 },
      creatives: [{ id: `bench-${i}-cr`, type: 'banner', price: 1 + (i % 50) / 10, banner: { w: 300, h: 250, imageUrl: `https://cdn.c${i}.example/a.png` } }],
    });
  }
  const file = path.join(dir, `campaigns-${n}.json`);
  fs.writeFileSync(file, JSON.stringify({ version: 1, currency: 'USD', campaigns }));
  return file;
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function fmt(n: number, digits = 2): string {
  return n.toFixed(digits);
}

async function refreshCost(env: Record<string, string>, file: string, dir: string): Promise<{ wallMs: number; p90Ms: number; cpuUs: number; commands: number }> {
  const config = loadConfig({
    ...env,
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    CAMPAIGNS_FILE: file,
    CAMPAIGNS_WATCH_MS: '0',
    BUDGET_REFRESH_MS: '60000',
    LOG_LEVEL: 'error',
    LOG_SPILL_DIR: fs.mkdtempSync(path.join(dir, 'spill-')),
  });
  const app = await createApp(config);
  await app.init();
  try {
    const spend = app.get(SpendService);
    const redis = app.get(RedisService);
    let commands = 0;
    const count = (): void => {
      commands++;
    };
    for (let i = 0; i < 20; i++) await spend.refresh();
    const before = spend.stats.refreshErrors;
    const walls: number[] = [];
    const c0 = cpuMs();
    for (let i = 0; i < REFRESHES; i++) {
      const t0 = performance.now();
      await spend.refresh();
      walls.push(performance.now() - t0);
    }
    const cpu = cpuMs() - c0;
    if (spend.stats.refreshErrors !== before) throw new Error(`${spend.stats.refreshErrors - before} refreshes failed`);
    // Commands of one refresh, counted on the connections that send them (a cluster's own
    // commands and those sent to a node directly both end on a node connection).
    const c = redis.connection();
    const conns = (c instanceof Cluster ? c.nodes('all') : [c]) as unknown as Array<{ sendCommand(...a: unknown[]): unknown }>;
    const originals = conns.map((conn) => conn.sendCommand.bind(conn));
    conns.forEach((conn, i) => {
      conn.sendCommand = (...a: unknown[]) => {
        count();
        return originals[i](...a);
      };
    });
    await spend.refresh();
    conns.forEach((conn, i) => (conn.sendCommand = originals[i]));
    const sorted = [...walls].sort((a, b) => a - b);
    return { wallMs: median(walls), p90Ms: sorted[Math.floor(sorted.length * 0.9)], cpuUs: (cpu / REFRESHES) * 1000, commands };
  } finally {
    await app.close();
  }
}

async function pushCost(config: Config, frameBytes: number): Promise<{ wallMs: number; p90Ms: number; cpuUs: number }> {
  const redis = new RedisService(config);
  redis.onModuleInit();
  const end = Date.now() + 10_000;
  while (!(redis.isReady() && redis.isLogReady())) {
    if (Date.now() > end) throw new Error('Redis not ready');
    await new Promise((r) => setTimeout(r, 10));
  }
  try {
    const frame = randomBytes(frameBytes);
    const list = config.redis.mode === 'cluster' ? 'bench:push:{0}' : 'bench:push';
    const sink = new RedisFrameSink(redis, [list], config.logWaitReplicas, config.logWaitTimeoutMs);
    let n = 0;
    const push = async (): Promise<void> => {
      const id = `f-${n++}`;
      const r = await sink.pushOnce(list, ackKey(list, id), frame, 60);
      if (r.replicas !== null && r.replicas < config.logWaitReplicas) throw new Error(`not confirmed: ${r.replicas}`);
      await redis.connection().ltrim(list, -1, -1);
    };
    for (let i = 0; i < 10; i++) await push();
    const walls: number[] = [];
    const c0 = cpuMs();
    for (let i = 0; i < PUSHES; i++) {
      const t0 = performance.now();
      await push();
      walls.push(performance.now() - t0);
    }
    const cpu = cpuMs() - c0;
    await redis.connection().del(list);
    const sorted = [...walls].sort((a, b) => a - b);
    return { wallMs: median(walls), p90Ms: sorted[Math.floor(sorted.length * 0.9)], cpuUs: (cpu / PUSHES) * 1000 };
  } finally {
    await redis.onApplicationShutdown();
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cluster-'));
  const single = await redisLib.startRedis({ dir: path.join(dir, 'single'), log: () => undefined });
  const cluster = await clusterLib.startRedisCluster({ dir: path.join(dir, 'cluster'), log: () => undefined });
  const out: string[] = [];
  const say = (s: string): void => {
    out.push(s);
    process.stdout.write(`${s}\n`);
  };
  try {
    const singleEnv = { REDIS_URL: single.url };
    const clusterEnv = { REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: cluster.nodesEnv };
    say('## Spend refresh (one worker, every BUDGET_REFRESH_MS, default 250 ms)');
    say('');
    say(`| budgeted campaigns | Redis | commands per refresh | wall, median (p90) | CPU per refresh | CPU per second at 4 refreshes/s |`);
    say('|---:|---|---:|---|---:|---:|');
    for (const n of [40, 1000]) {
      const file = campaignsFile(dir, n);
      for (const [name, env] of [
        ['one server', singleEnv],
        ['3-master cluster', clusterEnv],
      ] as const) {
        const r = await refreshCost(env, file, dir);
        say(`| ${n} | ${name} | ${r.commands} | ${fmt(r.wallMs)} ms (${fmt(r.p90Ms)}) | ${fmt(r.cpuUs, 0)} µs | ${fmt((r.cpuUs * 4) / 1000, 1)} ms (${fmt((r.cpuUs * 4) / 10_000, 2)} % of a core) |`);
      }
    }
    say('');
    say('## Bid log push, per frame (one push at a time, as the flusher sends them)');
    say('');
    say('| frame | Redis | wall, median (p90) | CPU per push |');
    say('|---:|---|---|---:|');
    const base = { LOG_LEVEL: 'error', HOST_ID: 'bench', WORKER_ID: 'b' };
    for (const kib of [64, 448]) {
      for (const [name, env] of [
        ['one server', { ...base, ...singleEnv }],
        ['cluster, master\u2019s reply (LOG_REDIS_WAIT_REPLICAS=0)', { ...base, ...clusterEnv, LOG_REDIS_WAIT_REPLICAS: '0' }],
        ['cluster, WAIT 1 on the list\u2019s master (the default)', { ...base, ...clusterEnv }],
      ] as const) {
        const r = await pushCost(loadConfig(env), kib * 1024);
        say(`| ${kib} KiB | ${name} | ${fmt(r.wallMs)} ms (${fmt(r.p90Ms)}) | ${fmt(r.cpuUs, 0)} µs |`);
      }
    }
  } finally {
    await cluster.stop();
    await single.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  if (WRITE) {
    const commit = execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
    const cpus = os.cpus();
    const file = path.join(ROOT, 'bench', 'RESULTS-cluster.md');
    fs.writeFileSync(
      file,
      `# Redis Cluster: measured figures

Written by \`node_modules/.bin/node .test-build/tools/bench/cluster.bench.js --write\` (tools/bench/cluster.bench.ts; build
first with \`npm run build:test\`). Machine: ${cpus.length} × ${cpus[0]?.model ?? '?'}, ${fmt(os.totalmem() / 1024 ** 3, 1)} GiB,
${os.platform()} ${os.release()}; Node ${process.version}; commit ${commit}; ${new Date().toISOString()}. Load average when it ran:
${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')} (shared with other work: wall times are noisy, CPU times steadier). Redis: a local redis-server, and a
local cluster of 3 masters with a replica each, all on loopback on the same machine. CPU is this Node process's
(user + system), not Redis's.

${out.join('\n')}

## How to read these figures

- **Spend refresh.** On one server a refresh is the heartbeat and one MGET whatever the number of
  campaigns. On a cluster the keys of different campaigns are in different hash slots, and an MGET
  may only span one: one MGET per slot (a campaign's total and daily keys share its slot) cost,
  with 1000 campaigns, 1001 commands and 7.8–9.4 ms of CPU per refresh here (3–4 % of a core per
  worker at 4 refreshes/s). A script per master that reads the keys that master serves
  (READ_MANY) makes it one command per master, the figures above; one MGET per slot remains the
  fallback for a master whose script fails (a slot that just moved, a Redis older than 7). It runs
  off the bid path, every BUDGET_REFRESH_MS on every worker.
- **Push.** A frame is pushed once, then forgotten; WAIT adds one round trip to the master and its
  replica's acknowledgement before that. A worker pushes a frame every LOG_FLUSH_INTERVAL_MS (10 s)
  or every LOG_FLUSH_BYTES (8 MiB of NDJSON, ~0.5 s at 5000 bids/s), so even at the worst the
  extra time is spent a few times a second, off the bid path.
`,
    );
    process.stdout.write(`written to ${path.relative(ROOT, file)}\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
