// The bidder under PM2 as operators run it: `node scripts/start.js start` with 2 workers under a
// test PM2_HOME, scale to 3, reload and scale down under a steady stream of requests, metrics per
// worker and for the machine, then `pm2 stop` and the bid log (in Redis, and in the Parquet files the
// shipper beside the workers wrote meanwhile) checked record by record.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { addShipped, incomplete, readBidLog } from './support/bidlog';
import { postBid, request, SteadyLoad, type LoadResult } from './support/http';
import { parseProm, sum } from '../support/prom';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Pm2Process {
  pmId: number;
  pid: number;
  status: string;
  instance: number;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const pm2lib = require(path.join(ROOT, 'scripts', 'pm2.js')) as {
  appProcesses(home: string): Pm2Process[];
  daemonInfo(home: string): { pid: number; exe: string | null } | null;
};

/** The bidder's Node options as ecosystem.config.js gives them to PM2 (the young generation's bound, docs/operations.md). */
const BIDDER_NODE_ARGS = (
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require(path.join(ROOT, 'ecosystem.config.js')) as { apps: { name: string; node_args?: string[] }[] }).apps.find((a) => a.name === 'bidder')?.node_args ?? []
);

/**
 * The Node options a worker said it runs with in its 'listening' log line (PM2 sets the process
 * title: /proc/<pid>/cmdline does not show them), waiting up to 10 s for PM2 to write the line.
 */
async function nodeArgsOf(runDir: string, pid: number): Promise<string[] | undefined> {
  for (let i = 0; i < 40; i++) {
    for (const l of fs.readFileSync(path.join(runDir, 'logs', 'bidder.out.log'), 'utf8').split('\n')) {
      if (!l.includes('"msg":"listening"')) continue;
      const r = JSON.parse(l) as { pid?: number; execArgv?: string[] };
      if (r.pid === pid) return r.execArgv;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  return undefined;
}

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a project script on this (the project's) Node, without blocking the event loop that drives the load. */
function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ status: code ?? 1, stdout, stderr });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function readyInfo(r: Run): Record<string, unknown> {
  const line = r.stdout
    .trim()
    .split('\n')
    .filter((l) => l.startsWith('BIDDER_READY '))
    .pop();
  assert.ok(line, `no BIDDER_READY line in:\n${r.stdout}\n${r.stderr}`);
  return JSON.parse(line.slice('BIDDER_READY '.length)) as Record<string, unknown>;
}

function realpath(p: string): string {
  return fs.realpathSync(p);
}

describe('PM2 cluster (npm start, scale, reload, stop)', { timeout: 240_000 }, () => {
  let redis: TestRedis;
  let runDir: string;
  let pm2Home: string;
  let env: NodeJS.ProcessEnv;
  let url = '';
  let admin = '';
  /** Every bid request answered 200/204; each must appear in the log exactly once as request and response. */
  const answered: string[] = [];
  const seenWorkerPids = new Set<number>();

  const online = () => pm2lib.appProcesses(pm2Home).filter((p) => p.status === 'online');

  async function waitOnline(n: number, timeoutMs = 60_000): Promise<Pm2Process[]> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const procs = online();
      if (procs.length === n) return procs;
      assert.ok(Date.now() < until, `expected ${n} workers online, have ${procs.length}`);
      await sleep(250);
    }
  }

  /** Pids that answer on fresh connections (PM2's cluster master hands them out round-robin). */
  async function servingPids(expected: number): Promise<Set<number>> {
    const pids = new Set<number>();
    for (let i = 0; i < 20 * expected && pids.size < expected; i++) {
      const a = await request(`${url}/health/ready`);
      assert.equal(a.status, 200, a.body);
      pids.add((JSON.parse(a.body) as { pid: number }).pid);
    }
    return pids;
  }

  async function underLoad(prefix: string, action: () => Promise<Run>): Promise<{ run: Run; load: LoadResult }> {
    const load = new SteadyLoad(url, { connections: 8, pauseMs: 2, prefix });
    load.start();
    await sleep(500);
    const r = await action();
    await sleep(500);
    const result = await load.stop();
    answered.push(...result.okIds);
    return { run: r, load: result };
  }

  before(async () => {
    // As production needs it (the workers refuse a Redis that loses spend and billing markers): AOF, noeviction.
    redis = await startTestRedis({ persist: true, maxmemory: '512mb' });
    runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-ops-'));
    pm2Home = path.join(runDir, 'pm2');
    const port = await freePort();
    const adminPort = await freePort();
    admin = `http://127.0.0.1:${adminPort}`;
    env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('NODE_TEST') || k === 'PM2_HOME' || k.startsWith('pm_') || k === 'NODE_APP_INSTANCE') delete env[k];
    // As an operator's shell has it: no NODE_ENV, so the workers run as production (ecosystem.config.js).
    delete env.NODE_ENV;
    Object.assign(env, {
      BIDDER_RUN_DIR: runDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      WORKERS: '2',
      REDIS_URL: redis.url,
      LOG_FLUSH_INTERVAL_MS: '1000',
      LOG_LEVEL: 'info',
      SHIP_ADMIN_PORT: '0',
      SHIP_INTERVAL_MS: '500',
    });
  });

  after(async () => {
    const procs = pm2lib.appProcesses(pm2Home);
    await run([path.join('scripts', 'start.js'), 'stop'], env).catch(() => undefined);
    // If the stop failed, end what this test started, by PID.
    const daemon = pm2lib.daemonInfo(pm2Home);
    for (const pid of [...procs.map((p) => p.pid), ...(daemon ? [daemon.pid] : [])]) {
      // A stopped PM2 process reports pid 0: kill(0) would signal this whole process group.
      if (!(pid > 0) || pid === process.pid) continue;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await redis.stop();
    fs.rmSync(runDir, { recursive: true, force: true });
  });

  it('npm start brings up 2 workers on the project\'s Node 24, ready, and says so again when run twice', async () => {
    const r = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const info = readyInfo(r);
    assert.equal(info.startedPm2, true);
    assert.equal(info.startedRedis, false, 'REDIS_URL answered, so no private Redis');
    assert.equal(info.redisUrl, redis.url);
    assert.equal(info.workers, 2);
    // Production refuses to start without EXCHANGES_FILE: npm start gives a file of its own, loopback only, and says so.
    assert.match(r.stdout, /EXCHANGES_FILE not set: the bid endpoint admits callers on this machine only \(127\.0\.0\.0\/8, ::1;/);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(runDir, 'exchanges.json'), 'utf8')), { exchanges: [{ name: 'local', addresses: ['127.0.0.0/8', '::1'] }] });
    url = String(info.url);
    const procs = await waitOnline(2);
    for (const p of procs) assert.equal(realpath(`/proc/${p.pid}/exe`), realpath(process.execPath), `worker ${p.pid} runs on the project's Node`);
    // PM2 loads its agent (@pm2/io, which wraps http.Server.prototype.emit) into a process unless
    // its environment says pmx=false (node_modules/pm2/lib/ProcessUtils.js): ecosystem.config.js's
    // `pmx: false`. A cluster worker gets its environment as the JSON of `pm2_env`, which
    // ProcessContainer.js copies into process.env before it loads anything.
    for (const p of procs) {
      const entry = fs.readFileSync(`/proc/${p.pid}/environ`, 'utf8').split('\0').find((e) => e.startsWith('pm2_env='));
      assert.ok(entry, `worker ${p.pid} has no pm2_env`);
      assert.equal((JSON.parse(entry.slice('pm2_env='.length)) as { pmx?: unknown }).pmx, false, `worker ${p.pid} runs without PM2's agent`);
    }
    // ecosystem.config.js's node_args (the young generation's bound) reach each worker's command line.
    for (const p of procs) assert.deepEqual(await nodeArgsOf(runDir, p.pid), BIDDER_NODE_ARGS, `worker ${p.pid} runs with ecosystem.config.js's node_args`);
    const daemon = pm2lib.daemonInfo(pm2Home);
    assert.ok(daemon && daemon.exe && realpath(daemon.exe) === realpath(process.execPath), 'the PM2 daemon runs on the project\'s Node');

    const again = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(again.status, 0, again.stdout + again.stderr);
    assert.match(again.stdout, /already running/);
    const info2 = readyInfo(again);
    assert.equal(info2.startedPm2, false);
    assert.equal(info2.url, url);
  });

  it('both workers serve', async () => {
    const procs = online();
    const pids = await servingPids(2);
    assert.deepEqual([...pids].sort(), procs.map((p) => p.pid).sort());
    for (let i = 0; i < 10; i++) {
      const a = await postBid(url, `both-${i}`);
      assert.ok(a.status === 200 || a.status === 204, `status ${a.status}`);
      answered.push(`both-${i}`);
    }
  });

  it('pm2 scale bidder 3, typed as PM2 documents it (its own CLI, not the project wrapper), gives 3 workers, all serving', async () => {
    // The plain PM2 CLI, in the same PM2_HOME: it reaches the daemon npm start started.
    const r = await run([path.join('node_modules', 'pm2', 'bin', 'pm2'), 'scale', 'bidder', '3'], { ...env, PM2_HOME: pm2Home });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const procs = await waitOnline(3);
    const pids = await servingPids(3);
    assert.deepEqual([...pids].sort(), procs.map((p) => p.pid).sort());
  });

  it('pm2 reload bidder under a steady stream of requests fails none and replaces every worker', async () => {
    const before = online().map((p) => p.pid);
    for (const p of before) seenWorkerPids.add(p);
    const { run: r, load } = await underLoad('reload', () => run([path.join('scripts', 'pm2.js'), 'reload', 'bidder'], env));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.ok(load.okIds.length > 200, `only ${load.okIds.length} requests answered`);
    assert.equal(load.failed, 0, `failed: ${JSON.stringify(load.failures)}`);
    const afterPids = (await waitOnline(3)).map((p) => p.pid);
    for (const p of afterPids) assert.ok(!before.includes(p), `worker ${p} was not replaced`);
    // Does PM2 keep node_args with the app on a reload? (It did not for issue 4059's `pm2 restart`.)
    for (const p of afterPids) assert.deepEqual(await nodeArgsOf(runDir, p), BIDDER_NODE_ARGS, `reloaded worker ${p} runs with ecosystem.config.js's node_args`);
  });

  it('pm2 scale bidder 2 under a steady stream of requests fails none', async () => {
    const { run: r, load } = await underLoad('scaledown', () => run([path.join('scripts', 'pm2.js'), 'scale', 'bidder', '2'], env));
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.ok(load.okIds.length > 100, `only ${load.okIds.length} requests answered`);
    assert.equal(load.failed, 0, `failed: ${JSON.stringify(load.failures)}`);
    await waitOnline(2);
  });

  it('GET /metrics (admin port): each worker its own figures with a worker label; /metrics/cluster: the machine', async () => {
    const scrape = async (p: string) => {
      const res = await request(`${admin}${p}`);
      assert.equal(res.status, 200, res.body);
      return parseProm(res.body);
    };
    /** Each worker's own /metrics, by worker label (fresh connections: PM2's master hands them out in turn). */
    const perWorker = async (): Promise<Map<string, ReturnType<typeof parseProm>>> => {
      const seen = new Map<string, ReturnType<typeof parseProm>>();
      for (let i = 0; i < 40 && seen.size < 2; i++) {
        const f = await scrape('/metrics');
        const worker = f.get('bidder_bid_requests_total')?.samples[0]?.labels.worker;
        assert.ok(worker !== undefined, 'samples carry a worker label');
        if (!seen.has(worker)) seen.set(worker, f);
      }
      assert.equal(seen.size, 2, 'both workers answer /metrics');
      return seen;
    };
    // The public port serves no metrics.
    assert.equal((await request(`${url}/metrics`)).status, 404);
    const w0 = await perWorker();
    // A worker that just left (scale down) is in the view until its graceful stop removes it.
    let m0 = await scrape('/metrics/cluster');
    for (let i = 0; i < 60 && sum(m0, 'bidder_cluster_workers') !== 2; i++) {
      await sleep(250);
      m0 = await scrape('/metrics/cluster');
    }
    assert.equal(sum(m0, 'bidder_cluster_workers'), 2);
    assert.equal(sum(m0, 'bidder_ready'), 2);

    for (let i = 0; i < 20; i++) {
      const a = await postBid(url, `metrics-ka-${i}`);
      assert.ok(a.status === 200 || a.status === 204);
      answered.push(`metrics-ka-${i}`);
    }
    const w1 = await perWorker();
    let delta = 0;
    for (const [worker, f] of w1) delta += sum(f, 'bidder_bid_requests_total') - sum(w0.get(worker)!, 'bidder_bid_requests_total');
    assert.equal(delta, 20, 'the two workers\' own figures add up to the requests sent');

    for (let i = 0; i < 30; i++) {
      const a = await postBid(url, `metrics-${i}`);
      assert.ok(a.status === 200 || a.status === 204);
      answered.push(`metrics-${i}`);
    }
    // Every worker publishes its snapshot at least every 5 s (WINDOW_MS).
    await sleep(5_500);
    const m1 = await scrape('/metrics/cluster');
    assert.equal(sum(m1, 'bidder_cluster_workers'), 2);
    assert.ok(sum(m1, 'bidder_bid_requests_total') - sum(m0, 'bidder_bid_requests_total') >= 50, 'the machine view counts every worker\'s requests');
    for (const fam of m1.values()) for (const s of fam.samples) assert.equal(s.labels.worker, undefined);
    const byWorker = await scrape('/metrics/cluster?by=worker');
    const workers = new Set(byWorker.get('bidder_bid_requests_total')?.samples.map((s) => s.labels.worker));
    assert.equal(workers.size, 2, `series of workers ${[...workers].join(', ')}`);
  });

  it('after pm2 stop, the bid log (Redis and the shipped Parquet files) holds one request and one response record for every answered request', async () => {
    const r = await run([path.join('scripts', 'pm2.js'), 'stop', 'bidder'], env);
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(online().length, 0);
    // The shipper finishes its batch and stops; what it did not take is still in Redis.
    const s = await run([path.join('scripts', 'pm2.js'), 'stop', 'shipper'], env);
    assert.equal(s.status, 0, s.stdout + s.stderr);
    const log = await readBidLog(redis.url, 'bidlog');
    const shipped = await addShipped(log, path.join(runDir, 'bidlog'));
    assert.ok(shipped > 0, 'the shipper ran beside the workers and shipped records');
    assert.equal(log.malformed, 0);
    const missing = incomplete(log, answered);
    assert.equal(
      missing.length,
      0,
      `${missing.length} of ${answered.length} answered requests lack exactly one request+response record, e.g. ${missing.slice(0, 5).join(', ')}`,
    );
  });

  it('application logs are JSON lines, one per event, with no per-request lines', () => {
    const file = path.join(runDir, 'logs', 'bidder.out.log');
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '');
    assert.ok(lines.length > 0, 'workers logged their start');
    for (const l of lines) {
      const r = JSON.parse(l) as Record<string, unknown>;
      for (const k of ['level', 'time', 'pid', 'worker', 'msg']) assert.ok(k in r, `${k} missing in ${l}`);
    }
    assert.ok(lines.some((l) => l.includes('"msg":"listening"')));
    assert.ok(lines.length < answered.length / 10, `${lines.length} log lines for ${answered.length} requests`);
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisCommand = (require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as { command(url: string, cmd: string): Promise<string | null> }).command;
// eslint-disable-next-line @typescript-eslint/no-require-imports
const loadtestCluster = require(path.join(ROOT, 'tools', 'lib', 'loadtest-cluster.js')) as {
  startBidder(o: { workers: number; port: number; redisUrl?: string; logKey: string; log: (m: string) => void; env?: NodeJS.ProcessEnv }): Promise<{ redisUrl: string; startedPm2: boolean }>;
};
const secretsOf = (runDir: string) => JSON.parse(fs.readFileSync(path.join(runDir, 'secrets.json'), 'utf8')) as Record<string, string>;

describe('npm start on a machine without a Redis, then npm stop', { timeout: 120_000 }, () => {
  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-ops-fresh-'));
  const pm2Home = path.join(runDir, 'pm2');
  // Also when the test times out inside a step (its own finally then never runs): the Redis and the
  // PM2 daemon that start.js launched are found from its state file and the daemon's pid file.
  after(() => {
    let redis = 0;
    try {
      redis = (JSON.parse(fs.readFileSync(path.join(runDir, 'state.json'), 'utf8')) as { redis?: { pid?: number } }).redis?.pid ?? 0;
    } catch {
      // never written
    }
    for (const pid of [pm2lib.daemonInfo(pm2Home)?.pid ?? 0, redis]) {
      if (pid > 0) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    fs.rmSync(runDir, { recursive: true, force: true });
  });

  it('starts a private redis-server with the cluster, and stops both (the Redis by its PID, its data saved)', async () => {
    const redisPort = await freePort();
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('NODE_TEST') || k === 'PM2_HOME' || k.startsWith('pm_') || k === 'NODE_APP_INSTANCE') delete env[k];
    Object.assign(env, {
      BIDDER_RUN_DIR: runDir,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      WORKERS: '1',
      // Nothing answers there: start.js must start its own Redis on that port.
      REDIS_URL: `redis://127.0.0.1:${redisPort}`,
      LOG_LEVEL: 'warn',
    });
    let redisPid = 0;
    try {
      const r = await run([path.join('scripts', 'start.js'), 'start'], env);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      const info = readyInfo(r);
      assert.equal(info.startedRedis, true);
      assert.equal(info.startedPm2, true);
      // Its generated password (issue 23, finding 12) is never printed; without it Redis refuses commands.
      assert.equal(info.redisUrl, `redis://:***@127.0.0.1:${redisPort}`);
      assert.ok(!r.stdout.includes(secretsOf(runDir).REDIS_PASSWORD), 'the password printed');
      assert.equal(fs.statSync(path.join(runDir, 'secrets.json')).mode & 0o777, 0o600);
      assert.equal(fs.statSync(path.join(runDir, 'state.json')).mode & 0o777, 0o600);
      assert.match((await redisCommand(`redis://127.0.0.1:${redisPort}`, 'FLUSHALL')) ?? '', /^-NOAUTH/, 'any local user could reset spend');
      const state = JSON.parse(fs.readFileSync(path.join(runDir, 'state.json'), 'utf8')) as { redis: { pid: number } };
      redisPid = state.redis.pid;
      assert.match(fs.readFileSync(`/proc/${redisPid}/cmdline`, 'utf8'), /redis-server/);
      // Spend and billing markers survive a crash of this Redis (AOF, fsync every second), and no
      // money key is ever evicted to make room: bounded memory, writes refused past it.
      const admin = new Redis({ port: redisPort, host: '127.0.0.1', password: secretsOf(runDir).REDIS_PASSWORD, lazyConnect: true, maxRetriesPerRequest: 1 });
      try {
        await admin.connect();
        const conf = async (k: string) => ((await admin.config('GET', k)) as string[])[1];
        assert.equal(await conf('appendonly'), 'yes');
        assert.equal(await conf('appendfsync'), 'everysec');
        assert.equal(await conf('maxmemory-policy'), 'noeviction');
        assert.ok(Number(await conf('maxmemory')) > 0, 'a memory bound');
      } finally {
        admin.disconnect();
      }
      const ok = await postBid(String(info.url), 'fresh-1');
      assert.ok(ok.status === 200 || ok.status === 204);

      // `npm run loadtest` beside it uses the running cluster as it is, and counts the bid log in
      // its Redis: it needs that Redis's password, which the BIDDER_READY line does not print.
      const reused = await loadtestCluster.startBidder({ workers: 1, port: Number(env.PORT), redisUrl: env.REDIS_URL, logKey: 'bidlog', log: () => undefined, env });
      assert.equal(reused.startedPm2, false);
      assert.equal(await redisCommand(reused.redisUrl, 'PING'), '+PONG', `the load test's Redis URL for the running cluster: ${reused.redisUrl.replace(/\/\/[^@]*@/, '//…@')}`);

      const status = await run([path.join('scripts', 'start.js'), 'status'], env);
      assert.equal(status.status, 0, status.stdout);
      assert.match(status.stdout, /bidder\[0\].*online/);

      const stop = await run([path.join('scripts', 'start.js'), 'stop'], env);
      assert.equal(stop.status, 0, stop.stdout + stop.stderr);
      assert.equal(pm2lib.daemonInfo(pm2Home), null, 'the PM2 daemon is gone');
      assert.throws(() => process.kill(redisPid, 0), 'the private redis-server is gone');
      assert.ok(fs.existsSync(path.join(runDir, 'redis', 'dump.rdb')), 'its data was saved');
      const after = await run([path.join('scripts', 'start.js'), 'status'], env);
      assert.equal(after.status, 3);
      const again = await run([path.join('scripts', 'start.js'), 'stop'], env);
      assert.equal(again.status, 0);
      assert.match(again.stdout, /not running/);
    } finally {
      if (redisPid > 0) {
        try {
          process.kill(redisPid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});
