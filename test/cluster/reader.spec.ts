/**
 * The log reader (`npm run logs`) against a Redis Cluster that is not ok: a master is down and no
 * replica takes its slots, so every node says cluster_state:fail. The reader must say it cannot
 * reach the cluster (exit 1, or the spill directory alone when --source allows it), never exit 0
 * without a word: a `check` that prints nothing and exits 0 looks like success.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { runCli } from '../log/support';
import { clusterEnv } from './support';

let cluster: TestRedisCluster;
let dir: string;

before(async () => {
  cluster = await startTestRedisCluster({ masters: 3, replicas: 0, nodeTimeoutMs: 500 });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-reader-'));
  const down = cluster.nodes[0];
  await cluster.kill(down.port);
  // The others mark it failed after the node timeout, and with its slots unserved say cluster_state:fail.
  await new Promise((r) => setTimeout(r, 2_000));
});

after(async () => {
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('npm run logs on a cluster that is not ok', () => {
  it('--source redis: exits 1 and says it cannot reach the cluster', async () => {
    const r = await runCli(['check', '--source', 'redis'], clusterEnv(cluster, { LOG_SPILL_DIR: dir }));
    assert.equal(r.code, 1, `exit ${r.code}; stdout: ${r.stdout}; stderr: ${r.stderr}`);
    assert.match(r.stderr, /cannot reach/);
  });

  it('--source all: says so and reads the spill directory alone', async () => {
    const r = await runCli(['count'], clusterEnv(cluster, { LOG_SPILL_DIR: dir }));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /cannot reach .*reading the spill directory only/);
    assert.equal((JSON.parse(r.stdout) as { records: number }).records, 0);
  });
});
