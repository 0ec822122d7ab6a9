// The local Redis Cluster of the tests (scripts/lib/redis-cluster.js): 3 masters with a replica each,
// written to through ioredis' Cluster client in every shard, a manual failover and a crashed master
// that lose no key, and nothing left running after stop().
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Cluster } from 'ioredis';
import { startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('local Redis Cluster', () => {
  let cluster: TestRedisCluster;
  let client: Cluster;
  const KEYS = 300;
  const key = (i: number) => `rc-test:${i}`;

  before(async () => {
    cluster = await startTestRedisCluster({ nodeTimeoutMs: 1_000 });
    client = new Cluster(
      cluster.nodes.map(({ host, port }) => ({ host, port })),
      { redisOptions: { connectTimeout: 2_000, commandTimeout: 3_000 }, clusterRetryStrategy: (n: number) => (n > 20 ? null : 100) },
    );
    client.on('error', () => undefined);
  });

  after(async () => {
    client?.disconnect();
    await cluster?.stop();
  });

  it('has 3 masters and 3 replicas, all on loopback, and says how to reach them', () => {
    assert.equal(cluster.nodes.length, 6);
    assert.equal(cluster.nodes.filter((n) => n.role === 'master').length, 3);
    assert.equal(cluster.nodes.filter((n) => n.role === 'replica').length, 3);
    for (const n of cluster.nodes) {
      assert.equal(n.host, '127.0.0.1');
      assert.ok(alive(n.pid), `node ${n.port} runs (pid ${n.pid})`);
    }
    assert.equal(cluster.nodesEnv, cluster.nodes.map((n) => `127.0.0.1:${n.port}`).join(','));
  });

  it('takes keys of every shard through a Cluster client and keeps them across a failover and a master crash', async () => {
    for (let i = 0; i < KEYS; i++) await client.set(key(i), `v${i}`);
    const masters = client.nodes('master');
    assert.equal(masters.length, 3);
    const perMaster = await Promise.all(masters.map((m) => m.dbsize()));
    assert.equal(perMaster.reduce((a, b) => a + b, 0), KEYS);
    for (const n of perMaster) assert.ok(n > 0, `keys on every master: ${perMaster.join(', ')}`);

    const readAll = async () => {
      for (let i = 0; i < KEYS; i++) assert.equal(await client.get(key(i)), `v${i}`, key(i));
    };

    // Manual failover: the replica catches up first, so every acknowledged write survives.
    const oldMaster = cluster.nodes.find((n) => n.role === 'master')!;
    const newMaster = await cluster.failover(oldMaster.port);
    assert.notEqual(newMaster, oldMaster.port);
    assert.equal(cluster.nodes.find((n) => n.port === newMaster)?.role, 'master');
    assert.equal(oldMaster.role, 'replica');
    await readAll();

    // A master SIGKILLed: its replica takes over after the node timeout. Replication is
    // asynchronous, but these keys were written long enough ago to be on the replica.
    const victim = cluster.nodes.find((n) => n.role === 'master')!;
    await cluster.kill(victim.port);
    assert.equal(alive(victim.pid), false);
    assert.equal(victim.role, 'down');
    await cluster.waitUntilOk();
    assert.equal(cluster.nodes.filter((n) => n.role === 'master').length, 3);
    await readAll();
    await client.set('rc-test:after', 'yes');
    assert.equal(await client.get('rc-test:after'), 'yes');
  });

  it('stops every node by its PID and removes its directory', async () => {
    const pids = cluster.nodes.map((n) => n.pid);
    const dir = cluster.dir;
    client.disconnect();
    await cluster.stop();
    for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} is gone`);
    assert.equal(fs.existsSync(dir), false);
  });

  it('refuses a cluster redis-cli cannot build', async () => {
    await assert.rejects(startTestRedisCluster({ masters: 2 }), /masters: expected a whole number >= 3/);
    await assert.rejects(startTestRedisCluster({ replicas: -1 }), /replicas/);
  });
});
