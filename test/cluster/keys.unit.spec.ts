/**
 * Keys on a Redis Cluster, without a cluster: every script's keys share one hash slot, the bid log's
 * lists and where a frame goes, and the configuration of cluster mode, hosts and shards.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, it } from 'node:test';
import { defaultHostId, loadConfig } from '../../src/config/config';
import { capKeys, spendKeys } from '../../src/delivery/keys';
import { ackKey, listKeyFor, logListKeys, shardOf } from '../../src/bidlog/keys';
import { bySlot, slotOf } from '../../src/redis/redis.options';
import { heartbeatKey, procKey, shippersKey } from '../../src/bidlog/keys';
import { loadShipperConfig } from '../../src/shipper/shipper.config';
import { configProblems as problems } from '../support/config';

function sameSlot(keys: string[]): void {
  const slots = new Set(keys.map(slotOf));
  assert.equal(slots.size, 1, `one slot for ${keys.join(', ')}: ${[...slots].join(', ')}`);
}

describe('every script\'s keys share one slot', () => {
  const ids = ['cmp-001', 'c', 'a:b', 'ünï', '{x}'];
  it('BILL: a campaign\'s total, daily spend and its bids\' markers', () => {
    for (const cid of ids) sameSlot([spendKeys.billMarker(cid, randomUUID()), spendKeys.total(cid), spendKeys.daily(cid, '20260101')]);
  });
  it('IMPRESSION: a user\'s day counts and impression markers', () => {
    for (const user of ['u1', 'Zm9vYmFy', 'x'.repeat(64)]) sameSlot([capKeys.impMarker(user, randomUUID()), capKeys.counts(user, '20260101')]);
  });
  it('PUSH_ONCE and the shipper\'s scripts: a list, its ack markers, processing lists, leases and shippers set', () => {
    for (const list of logListKeys({ logRedisKey: 'bidlog', logRedisShards: 16, redis: { mode: 'cluster' } })) {
      sameSlot([list, ackKey(list, randomUUID()), procKey(list, 's1'), procKey(list, 'host-b-shipper'), heartbeatKey(list, 's1'), shippersKey(list)]);
    }
  });
});

describe('the bid log\'s lists', () => {
  it('one Redis, one shard: LOG_REDIS_KEY itself (the list every earlier reader knows)', () => {
    assert.deepEqual(logListKeys({ logRedisKey: 'bidlog', logRedisShards: 1, redis: { mode: 'single' } }), ['bidlog']);
  });
  it('sharded or on a cluster: `<key>:{0}` … `:{n-1}`, each its own slot', () => {
    assert.deepEqual(logListKeys({ logRedisKey: 'bidlog', logRedisShards: 1, redis: { mode: 'cluster' } }), ['bidlog:{0}']);
    assert.deepEqual(logListKeys({ logRedisKey: 'bl', logRedisShards: 3, redis: { mode: 'single' } }), ['bl:{0}', 'bl:{1}', 'bl:{2}']);
    const keys = logListKeys({ logRedisKey: 'bidlog', logRedisShards: 16, redis: { mode: 'cluster' } });
    assert.equal(keys.length, 16);
    assert.equal(bySlot(keys).size, 16);
  });
  it('the 16 default lists land 6/6/4 on the even slot split of 3 masters (the figures src/bidlog/keys.ts gives)', () => {
    const slots = logListKeys({ logRedisKey: 'bidlog', logRedisShards: 16, redis: { mode: 'cluster' } }).map(slotOf);
    assert.deepEqual(slots, [13907, 9842, 5649, 1584, 14039, 9974, 5781, 1716, 14171, 10106, 247, 4310, 8373, 12436, 115, 4178]);
    const per = [0, 0, 0];
    for (const s of slots) per[s <= 5460 ? 0 : s <= 10922 ? 1 : 2]++;
    assert.deepEqual(per, [6, 6, 4]);
  });
  it('a frame goes to the list its id chooses, always the same, and ids spread evenly', () => {
    const keys = logListKeys({ logRedisKey: 'bidlog', logRedisShards: 16, redis: { mode: 'cluster' } });
    const id = randomUUID();
    assert.equal(listKeyFor(keys, id), listKeyFor([...keys], id));
    assert.equal(listKeyFor(['only'], id), 'only');
    const counts = new Array<number>(16).fill(0);
    const n = 32_000;
    for (let i = 0; i < n; i++) counts[shardOf(randomUUID(), 16)]++;
    for (const c of counts) assert.ok(Math.abs(c - n / 16) < (n / 16) * 0.1, `${counts.join(' ')}`);
  });
});

describe('configuration of cluster mode', () => {
  it('single Redis by default: one list, no WAIT, HOST_ID the hostname', () => {
    const c = loadConfig({});
    assert.equal(c.redis.mode, 'single');
    assert.equal(c.logRedisShards, 1);
    assert.equal(c.logWaitReplicas, 0);
    assert.equal(c.hostId, defaultHostId());
  });
  it('REDIS_CLUSTER_NODES means cluster mode: 16 lists, pushes confirmed by one replica', () => {
    const c = loadConfig({ REDIS_CLUSTER_NODES: 'r1.example:7000, 10.0.0.2:7001,[::1]:7002', HOST_ID: 'pod-7' });
    assert.equal(c.redis.mode, 'cluster');
    assert.deepEqual(c.redis.nodes, [
      { host: 'r1.example', port: 7000 },
      { host: '10.0.0.2', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    assert.equal(c.logRedisShards, 16);
    assert.equal(c.logWaitReplicas, 1);
    assert.equal(c.logWaitTimeoutMs, 1_000);
    assert.equal(c.hostId, 'pod-7');
  });
  it('REDIS_MODE=cluster without nodes: REDIS_URL is the seed (and gives the credentials)', () => {
    const c = loadConfig({ REDIS_MODE: 'cluster', REDIS_URL: 'redis://:pw@redis.internal:6380', LOG_REDIS_SHARDS: '4', LOG_REDIS_WAIT_REPLICAS: '0' });
    assert.deepEqual(c.redis.nodes, [{ host: 'redis.internal', port: 6380 }]);
    assert.equal(c.logRedisShards, 4);
    assert.equal(c.logWaitReplicas, 0);
  });
  it('a hostname that is not a valid HOST_ID is made one', () => {
    assert.equal(defaultHostId('My_Host (1)'), 'My-Host--1-');
    assert.equal(defaultHostId(''), 'host');
    assert.equal(defaultHostId('x'.repeat(80)).length, 63);
  });
  it('refuses bad values, naming each', () => {
    assert.deepEqual(problems({ REDIS_MODE: 'sharded' }), ['REDIS_MODE="sharded": expected one of single, cluster']);
    assert.match(problems({ REDIS_MODE: 'single', REDIS_CLUSTER_NODES: 'a:1' }).join(), /REDIS_CLUSTER_NODES is set.*REDIS_MODE=single/);
    assert.match(problems({ REDIS_CLUSTER_NODES: 'a:1,b,c:99999' }).join(), /REDIS_CLUSTER_NODES: "b", "c:99999": expected host:port/);
    assert.match(problems({ REDIS_CLUSTER_NODES: Array.from({ length: 65 }, (_, i) => `n${i}:7000`).join(',') }).join(), /at most 64/);
    assert.match(problems({ HOST_ID: 'a_b' }).join(), /HOST_ID="a_b"/);
    assert.match(problems({ HOST_ID: 'x'.repeat(64) }).join(), /HOST_ID/);
    assert.match(problems({ LOG_REDIS_SHARDS: '0' }).join(), /LOG_REDIS_SHARDS=0: expected a number from 1 to 256/);
    assert.match(problems({ REDIS_MODE: 'cluster', LOG_REDIS_KEY: 'log{x}' }).join(), /LOG_REDIS_KEY="log\{x\}": .*braces/);
    assert.deepEqual(problems({ LOG_REDIS_KEY: 'log{x}' }), [], 'one list on one Redis: any key, as before');
    assert.match(problems({ LOG_REDIS_WAIT_MS: '5000' }).join(), /LOG_REDIS_WAIT_MS=5000: expected a number from 10 to 2500/);
  });
  it('the shipper reads the same variables, so it reads the lists the bidder writes', () => {
    const env = { REDIS_CLUSTER_NODES: 'r1:7000', LOG_REDIS_KEY: 'bl', LOG_REDIS_SHARDS: '5' };
    const s = loadShipperConfig(env, '/tmp');
    const b = loadConfig(env);
    assert.deepEqual(s.redis, b.redis);
    assert.deepEqual(logListKeys(s), logListKeys(b));
    assert.throws(() => loadShipperConfig({ REDIS_MODE: 'cluster', LOG_REDIS_SHARDS: 'x' }, '/tmp'), /LOG_REDIS_SHARDS/);
  });
});
