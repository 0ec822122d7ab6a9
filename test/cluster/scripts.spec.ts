/**
 * The scripts around a Redis Cluster: `npm run redis-cluster` starts, reports and stops a local one
 * (daemonized, by PID), and `npm start` in cluster mode uses a cluster that answers and never
 * starts one itself.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import Redis from 'ioredis';
import { ROOT, runNode, type RunResult } from '../log/support';
import { freePort } from '../support/redis';

function run(script: string, args: string[], env: Record<string, string>): Promise<RunResult> {
  return runNode(path.join(ROOT, 'scripts', script), args, env);
}

/** A process that runs (a daemon's zombie, left to whoever adopted it, does not). */
function runs(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-cluster-scripts-'));
after(async () => {
  await run('redis-cluster.js', ['stop'], { BIDDER_RUN_DIR: dir });
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('npm run redis-cluster', () => {
  it('refuses an unknown flag, a bad count or a missing value with status 2, and starts nothing', async () => {
    const env = { BIDDER_RUN_DIR: dir };
    for (const [args, reason] of [
      [['start', '--masterz', '4'], /Unknown option '--masterz'/],
      [['start', '--masters', '2'], /--masters 2: expected a whole number >= 3/],
      [['start', '--replicas'], /'--replicas <value>' argument missing/],
      [['start', 'stop'], /usage: npm run redis-cluster/],
    ] as Array<[string[], RegExp]>) {
      const r = await run('redis-cluster.js', args, env);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, reason, args.join(' '));
    }
    assert.equal(fs.existsSync(path.join(dir, 'redis-cluster')), false, 'nothing started');
  });
  it('starts a local cluster that outlives it, says so again, and stops it by PID', async () => {
    const env = { BIDDER_RUN_DIR: dir };
    const started = await run('redis-cluster.js', ['start'], env);
    assert.equal(started.code, 0, started.stderr);
    const nodes = /^REDIS_CLUSTER_NODES=(\S+)$/m.exec(started.stdout)?.[1];
    assert.ok(nodes, started.stdout);
    assert.equal(nodes.split(',').length, 6);
    const state = JSON.parse(fs.readFileSync(path.join(dir, 'redis-cluster', 'state.json'), 'utf8')) as { nodes: Array<{ pid: number; port: number }> };
    for (const n of state.nodes) assert.ok(runs(n.pid), `node ${n.port} runs`);

    const c = new Redis.Cluster(nodes.split(',').map((n) => ({ host: '127.0.0.1', port: Number(n.split(':')[1]) })), { lazyConnect: true });
    await c.connect();
    assert.match(await c.cluster('INFO'), /cluster_state:ok/);
    c.disconnect();

    const again = await run('redis-cluster.js', ['start'], env);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already running/);
    assert.match(again.stdout, new RegExp(`REDIS_CLUSTER_NODES=${nodes}`));
    assert.equal((await run('redis-cluster.js', ['status'], env)).code, 0);

    const stopped = await run('redis-cluster.js', ['stop'], env);
    assert.equal(stopped.code, 0, stopped.stderr);
    for (const n of state.nodes) assert.equal(runs(n.pid), false, `node ${n.port} stopped`);
    assert.equal((await run('redis-cluster.js', ['status'], env)).code, 3);
    assert.equal((await run('redis-cluster.js', ['nonsense'], env)).code, 2);
  });
});

describe('npm start in cluster mode', () => {
  it('refuses when no node of the cluster answers, and starts no Redis of its own', async () => {
    const port = await freePort();
    const env = { BIDDER_RUN_DIR: dir, REDIS_CLUSTER_NODES: `127.0.0.1:${port}`, PORT: String(await freePort()) };
    const r = await run('start.js', ['start'], env);
    assert.equal(r.code, 1);
    assert.match(r.stderr, new RegExp(`no node of the Redis Cluster answers \\(127\\.0\\.0\\.1:${port}\\).*npm run redis-cluster -- start`));
    assert.equal(fs.existsSync(path.join(dir, 'redis')), false, 'no private redis-server');
  });
});
