// ecosystem.config.js as PM2 reads it, under different environments.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { DRAIN_MAX_MS } from '../../src/health/lifecycle';
import { loadShipperConfig } from '../../src/shipper/shipper.config';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const FILE = path.join(ROOT, 'ecosystem.config.js');

interface App {
  name: string;
  script: string;
  exec_mode: string;
  instances: number;
  env: Record<string, string>;
  wait_ready: boolean;
  listen_timeout: number;
  kill_timeout: number;
  max_memory_restart: string;
  merge_logs: boolean;
  time: boolean;
  out_file: string;
  error_file: string;
  node_args?: string[];
}

/** No cgroup CPU quota (v2 or v1), whatever the machine running the tests has. */
const NO_CPU_MAX = path.join(os.tmpdir(), 'no-such-dir', 'cpu.max');
const NO_CPU_V1 = path.join(os.tmpdir(), 'no-such-dir', 'cpu');

/** Evaluates the file as the PM2 CLI does, with `env` as the CLI's environment; returns the app `name`. */
function load(env: Record<string, string | undefined>, name = 'bidder'): App {
  const saved = { ...process.env };
  for (const k of ['WORKERS', 'PORT', 'HOST', 'HOST_ID', 'REDIS_URL', 'SHUTDOWN_TIMEOUT_MS', 'CAMPAIGNS_FILE', 'TRACKING_BASE_URL', 'BIDDER_RUN_DIR', 'LOG_SPILL_DIR', 'LOG_REDIS_KEY', 'SHIP_DIR', 'SHIP_ID', 'SHIP_STOP_TIMEOUT_MS']) delete process.env[k];
  process.env.BIDDER_CPU_MAX_FILE = NO_CPU_MAX;
  process.env.BIDDER_CPU_CGROUP_V1_DIR = NO_CPU_V1;
  for (const [k, v] of Object.entries(env)) if (v !== undefined) process.env[k] = v;
  try {
    delete require.cache[require.resolve(FILE)];
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const cfg = require(FILE) as { apps: App[] };
    assert.deepEqual(
      cfg.apps.map((a) => a.name),
      ['bidder', 'shipper'],
    );
    const app = cfg.apps.find((a) => a.name === name);
    assert.ok(app, name);
    return app;
  } finally {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k];
    Object.assign(process.env, saved);
  }
}

describe('ecosystem.config.js', () => {
  it('runs the app "bidder" in cluster mode, one worker per core by default, WORKERS to override', () => {
    const app = load({});
    assert.equal(app.name, 'bidder');
    assert.equal(app.exec_mode, 'cluster');
    assert.equal(app.instances, os.availableParallelism());
    assert.equal(load({ WORKERS: '3' }).instances, 3);
    assert.equal(app.script, path.join(ROOT, 'dist', 'main.js'));
    assert.ok(fs.existsSync(app.script), 'npm test builds dist/ first');
  });

  it('counts a container\'s CPUs from its cgroup v2 quota (cpu.max) when there is one, rounded up', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecosystem-cpu-'));
    try {
      const file = (name: string, text: string) => {
        const p = path.join(dir, name);
        fs.writeFileSync(p, text);
        return p;
      };
      // No quota, or one that cannot be read: what libuv says (the affinity mask).
      for (const text of ['max 100000\n', 'garbage\n', '100000 0\n', '']) {
        assert.equal(load({ BIDDER_CPU_MAX_FILE: file('none', text) }).instances, os.availableParallelism(), JSON.stringify(text));
      }
      assert.equal(load({ BIDDER_CPU_MAX_FILE: file('half', '50000 100000\n') }).instances, 1);
      assert.equal(load({ BIDDER_CPU_MAX_FILE: file('one', '100000 100000\n') }).instances, 1);
      assert.equal(load({ BIDDER_CPU_MAX_FILE: file('one', '100000 100000\n'), WORKERS: '3' }).instances, 3, 'WORKERS wins');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('counts them from the cgroup v1 quota (cpu.cfs_quota_us / cpu.cfs_period_us) on a cgroup v1 host', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecosystem-cpu-v1-'));
    try {
      const v1 = (quota: string, period: string) => {
        const d = fs.mkdtempSync(path.join(dir, 'cg-'));
        fs.writeFileSync(path.join(d, 'cpu.cfs_quota_us'), quota);
        fs.writeFileSync(path.join(d, 'cpu.cfs_period_us'), period);
        return d;
      };
      // -1 is v1's "no quota"; an unreadable or zero period is none either.
      for (const [q, p] of [['-1\n', '100000\n'], ['garbage', '100000'], ['100000\n', '0\n'], ['', '']]) {
        assert.equal(load({ BIDDER_CPU_CGROUP_V1_DIR: v1(q, p) }).instances, os.availableParallelism(), JSON.stringify([q, p]));
      }
      assert.equal(load({ BIDDER_CPU_CGROUP_V1_DIR: v1('50000\n', '100000\n') }).instances, 1);
      assert.equal(load({ BIDDER_CPU_CGROUP_V1_DIR: v1('100000\n', '100000\n') }).instances, 1);
      assert.equal(load({ BIDDER_CPU_CGROUP_V1_DIR: v1('150000\n', '100000\n') }).instances, Math.min(2, os.availableParallelism()));
      assert.equal(load({ BIDDER_CPU_CGROUP_V1_DIR: v1('100000\n', '100000\n'), WORKERS: '3' }).instances, 3, 'WORKERS wins');
      // A v2 quota, where there is one, is read first.
      const max = path.join(dir, 'cpu.max');
      fs.writeFileSync(max, '100000 100000\n');
      assert.equal(load({ BIDDER_CPU_MAX_FILE: max, BIDDER_CPU_CGROUP_V1_DIR: v1('800000', '100000') }).instances, 1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rounds a fractional quota up and never counts more CPUs than the affinity mask allows', (t) => {
    const taskset = ['/usr/bin/taskset', '/bin/taskset'].find((p) => fs.existsSync(p));
    if (!taskset || os.cpus().length < 2) return t.skip('needs taskset and 2 CPUs');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ecosystem-cpu-'));
    try {
      const quotas = ['max 100000', '1000 100000', '100000 100000', '150000 100000', '200000 100000', '250000 100000', '800000 100000'];
      const files = quotas.map((q, i) => {
        const p = path.join(dir, `cpu.max.${i}`);
        fs.writeFileSync(p, `${q}\n`);
        return [q, p];
      });
      // Evaluated in a child whose affinity mask is set by taskset, as PM2 would evaluate it there.
      const script = `const out = {};
        for (const [q, p] of JSON.parse(process.env.CASES)) {
          process.env.BIDDER_CPU_MAX_FILE = p;
          delete require.cache[${JSON.stringify(FILE)}];
          out[q] = require(${JSON.stringify(FILE)}).apps[0].instances;
        }
        process.stdout.write(JSON.stringify(out));`;
      const counts = (cpus: string): Record<string, number> => {
        const env: Record<string, string | undefined> = { ...process.env, CASES: JSON.stringify(files), BIDDER_CPU_CGROUP_V1_DIR: NO_CPU_V1 };
        delete env.WORKERS;
        const r = spawnSync(taskset, ['-c', cpus, process.execPath, '-e', script], { env, encoding: 'utf8', timeout: 20_000 });
        assert.equal(r.status, 0, r.stderr);
        return JSON.parse(r.stdout) as Record<string, number>;
      };
      const two = counts('0,1');
      assert.ok(two['max 100000'] >= 1 && two['max 100000'] <= 2, 'no quota: libuv\'s count, within the mask');
      delete two['max 100000'];
      assert.deepEqual(two, {
        '1000 100000': 1,
        '100000 100000': 1,
        '150000 100000': 2,
        '200000 100000': 2,
        '250000 100000': 2,
        '800000 100000': 2,
      });
      for (const [q, n] of Object.entries(counts('1'))) assert.equal(n, 1, q);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sends traffic to a worker only once it is ready, and gives a stopping worker time to flush its log', () => {
    for (const shutdown of [undefined, '8000', '20000']) {
      const app = load({ SHUTDOWN_TIMEOUT_MS: shutdown });
      assert.equal(app.wait_ready, true);
      assert.ok(app.listen_timeout >= 10_000);
      const flushDeadline = Number(shutdown ?? 8000);
      // drain, then the final flush (bounded by SHUTDOWN_TIMEOUT_MS), then the worker's own watchdog.
      assert.ok(app.kill_timeout > DRAIN_MAX_MS + flushDeadline + 1_000, `kill_timeout ${app.kill_timeout} for SHUTDOWN_TIMEOUT_MS ${flushDeadline}`);
      assert.equal(app.env.SHUTDOWN_TIMEOUT_MS, String(flushDeadline));
    }
  });

  it('bounds V8\'s young generation of a worker (16 MiB, not V8\'s 128 MiB) and its old generation to 2x what a mark-compact left (~172-195 MB a worker at 650/s, not 237-271: measured with `npm run ab` and `npm run memory`), its helper threads (one, not 4), and keeps its heap through a lull, not the shipper\'s', () => {
    assert.deepEqual(load({}).node_args, ['--max-semi-space-size=8', '--v8-pool-size=1', '--heap-growing-percent=100', '--no-memory-reducer']);
    assert.equal(load({}, 'shipper').node_args, undefined);
  });

  it('restarts on memory, keeps JSON log lines unprefixed in one file per stream', () => {
    const app = load({ BIDDER_RUN_DIR: '/tmp/x' });
    assert.match(app.max_memory_restart, /^\d+[KMG]$/);
    assert.equal(app.merge_logs, true);
    assert.equal(app.time, false);
    assert.equal(app.out_file, '/tmp/x/logs/bidder.out.log');
    assert.equal(app.error_file, '/tmp/x/logs/bidder.err.log');
  });

  it('passes the documented variables with their defaults (README, Configuration), and the bidder accepts them', () => {
    const app = load({});
    assert.deepEqual(
      { ...app.env, LOG_SPILL_DIR: undefined, NODE_ENV: undefined },
      {
        PORT: '8080',
        HOST: '0.0.0.0',
        REDIS_URL: 'redis://127.0.0.1:6379',
        LOG_REDIS_KEY: 'bidlog',
        LOG_FLUSH_INTERVAL_MS: '10000',
        SHUTDOWN_TIMEOUT_MS: '8000',
        LOG_SPILL_DIR: undefined,
        NODE_ENV: undefined,
      },
    );
    const config = loadConfig(app.env);
    assert.equal(config.port, 8080);
    assert.equal(config.logFlushIntervalMs, 10_000);

    const custom = load({ PORT: '9000', REDIS_URL: 'redis://10.0.0.5:6380', CAMPAIGNS_FILE: 'data/campaigns.demo.json' });
    assert.equal(custom.env.PORT, '9000');
    assert.equal(custom.env.REDIS_URL, 'redis://10.0.0.5:6380');
    assert.equal(custom.env.TRACKING_BASE_URL, undefined, 'no loopback default: production refuses to start without it');
    assert.ok(path.isAbsolute(custom.env.CAMPAIGNS_FILE));
  });

  it('runs one bid log shipper beside the workers, on the same Redis and list, with a stop deadline PM2 waits for', () => {
    const app = load({ BIDDER_RUN_DIR: '/tmp/x', REDIS_URL: 'redis://10.0.0.5:6380', LOG_REDIS_KEY: 'blog' }, 'shipper');
    assert.equal(app.exec_mode, 'fork');
    assert.equal(app.instances, 1);
    assert.equal(app.script, path.join(ROOT, 'dist', 'shipper', 'main.js'));
    assert.ok(fs.existsSync(app.script), 'npm test builds dist/ first');
    assert.equal(app.env.REDIS_URL, 'redis://10.0.0.5:6380');
    assert.equal(app.env.LOG_REDIS_KEY, 'blog');
    assert.equal(app.env.SHIP_DIR, '/tmp/x/bidlog');
    assert.match(app.env.SHIP_ID, /-shipper$/, 'a fixed id per host: a restart resumes its own batch');
    assert.equal(load({ HOST_ID: 'host-b' }, 'shipper').env.SHIP_ID, 'host-b-shipper', 'two hosts on one machine get two ids');
    assert.equal(app.wait_ready, true);
    assert.ok(app.kill_timeout > Number(app.env.SHIP_STOP_TIMEOUT_MS));
    assert.equal(app.out_file, '/tmp/x/logs/shipper.out.log');
    const config = loadShipperConfig(app.env);
    assert.equal(config.dir, '/tmp/x/bidlog');
    assert.equal(load({ SHIP_DIR: 'rel/dir' }, 'shipper').env.SHIP_DIR, path.resolve('rel/dir'));
  });

  it('refuses a WORKERS that is not a whole number', () => {
    assert.throws(() => load({ WORKERS: 'many' }), /WORKERS/);
  });
});
