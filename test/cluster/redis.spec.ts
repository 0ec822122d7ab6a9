/**
 * The bidder's Redis users on a real Redis Cluster (3 masters, a replica each, on loopback): every
 * script on the node of its keys' slot, the spend of many campaigns read by slot, the cap news
 * subscriber moving to another node, and the bid log complete across a manual failover and across
 * a master killed (its frames wait until a replica holds them).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as zlib from 'node:zlib';
import { Cluster } from 'ioredis';
import { createApp } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { spendKeys } from '../../src/delivery/keys';
import type { LogRecord } from '../../src/bidlog/records';
import { DeliveryRedis } from '../../src/delivery/delivery-redis';
import { SpendService } from '../../src/delivery/spend.service';
import { ackKey } from '../../src/bidlog/keys';
import { RedisFrameSink } from '../../src/log/log-sink';
import { LogService } from '../../src/log/log.service';
import { clusterClientOptions, masterFor, slotOf, stopSlotsRefresh } from '../../src/redis/redis.options';
import { RedisBatch } from '../../src/redis/batch';
import { RedisService } from '../../src/redis/redis.service';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { sleep, until } from '../log/support';
import { startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { countWrites, type WriteCounter } from '../support/socket-writes';
import { adminClient, clusterEnv, clusterLogKeys, masterPortOf, readClusterLog, runCliOnCluster } from './support';

let cluster: TestRedisCluster;
let admin: Cluster;
let dir: string;

before(async () => {
  cluster = await startTestRedisCluster({ nodeTimeoutMs: 1_000 });
  admin = await adminClient(cluster);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-cluster-'));
});

after(async () => {
  admin?.disconnect();
  if (admin) stopSlotsRefresh(admin);
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

function config(extra: Record<string, string> = {}): Config {
  return loadConfig(
    clusterEnv(cluster, {
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      HOST_ID: 'host-t',
      WORKER_ID: 'w1',
      LOG_SPILL_DIR: fs.mkdtempSync(path.join(dir, 'spill-')),
      TRACKING_SECRET: 'test-secret',
      LOG_LEVEL: 'warn',
      ...extra,
    }),
  );
}

async function service(cfg: Config): Promise<RedisService> {
  const redis = new RedisService(cfg);
  redis.onModuleInit();
  await until('the cluster client to be ready', () => redis.isReady() && redis.isLogReady(), 10_000);
  return redis;
}

describe('RedisService on a Redis Cluster', () => {
  it('runs every script on the node of its keys\' slot, and confirms a pushed frame on a replica', async () => {
    const cfg = config();
    const redis = await service(cfg);
    const db = new DeliveryRedis(redis);
    const sink = new RedisFrameSink(redis, ['rs:{3}'], cfg.logWaitReplicas, cfg.logWaitTimeoutMs);
    try {
      const keys = { marker: spendKeys.billMarker('c-1', 'bid-1'), total: spendKeys.total('c-1'), daily: spendKeys.daily('c-1', '20260101') };
      assert.equal(await db.bill(keys, 1500, 60, 60), 1);
      assert.equal(await db.bill(keys, 1500, 60, 60), 0, 'counted once');
      assert.equal(await admin.get(keys.total), '1500');
      assert.equal(await db.heartbeat('bidder:workers', 'host-t:w1:1', 1_000, 60_000), 1);
      assert.equal(await db.impression('bidder:fcap:{u1}:imp:b1', 'bidder:fcap:{u1}:20260101', 'c-1', 60, 60), 1);
      assert.equal(await db.impression('bidder:fcap:{u1}:imp:b1', 'bidder:fcap:{u1}:20260101', 'c-1', 60, 60), -1);

      const list = 'rs:{3}';
      const frame = zlib.zstdCompressSync(Buffer.from('{"ts":1,"type":"request","id":"x"}\n'));
      const first = await sink.pushOnce(list, ackKey(list, 'f-1'), frame, 60);
      assert.equal(first.pushed, true);
      assert.ok(first.replicas !== null && first.replicas >= 1, `a replica holds it: ${first.replicas}`);
      const again = await sink.pushOnce(list, ackKey(list, 'f-1'), frame, 60);
      assert.deepEqual(again, { pushed: false, replicas: 1 }, 'a repeat is a no-op, and still confirmed');
      assert.equal(await admin.llen(list), 1);
      // The push went to the master of the list's slot itself.
      const node = masterFor(redis.connection() as Cluster, list);
      assert.equal(node?.options.port, await masterPortOf(admin, list));
      assert.equal(slotOf(list), slotOf(ackKey(list, 'f-1')));
    } finally {
      await redis.onApplicationShutdown();
    }
  });

  it('a batch of commands on keys of every master leaves in one write per master, each command on its own node', async () => {
    const redis = await service(config());
    const batch = new RedisBatch(redis);
    const client = redis.connection() as Cluster;
    const writes = new Map<number, WriteCounter>();
    for (const node of client.nodes('master')) writes.set(node.options.port ?? 0, countWrites(node.stream));
    const restore = () => {
      for (const w of writes.values()) w.stop();
    };
    try {
      const keys = Array.from({ length: 30 }, (_, i) => `bidder:notice:{batch-${i}}:win`);
      const ok: Array<string | null> = [];
      for (const k of keys) batch.later(() => client.set(k, '1', 'EX', 60, 'NX').then((r) => void ok.push(r)));
      await batch.drain();
      restore();
      assert.deepEqual(ok, Array(30).fill('OK'));
      const masters = new Set(await Promise.all(keys.map((k) => masterPortOf(admin, k))));
      assert.equal(masters.size, 3, 'the keys span every master');
      for (const port of masters) assert.equal(writes.get(port)?.n, 1, `one write to the master on ${port}`);
      for (const k of keys) assert.equal(await admin.get(k), '1');
    } finally {
      restore();
      await redis.onApplicationShutdown();
    }
  });

  it('reads keys of every slot in one command per master, also right after a failover moved some of them', async () => {
    const redis = await service(config());
    const db = new DeliveryRedis(redis);
    try {
      const keys = Array.from({ length: 300 }, (_, i) => `rm:{${i}}`);
      for (let i = 0; i < keys.length; i += 2) await admin.set(keys[i], `v${i}`);
      const slots = keys.map(slotOf);
      const want = keys.map((_, i) => (i % 2 === 0 ? `v${i}` : null));
      assert.deepEqual(await db.readMany(keys, slots), want);
      // A failover the client has not heard of yet: the script goes to the old master, which no
      // longer serves those slots; their keys are read by slot instead, following the move.
      const c = redis.connection() as Cluster;
      const port = await masterPortOf(admin, keys[0]);
      await cluster.failover(port);
      assert.equal(c.slots[slots[0]][0], `127.0.0.1:${port}`, 'the client\'s slot map is stale');
      assert.deepEqual(await db.readMany(keys, slots), want);
    } finally {
      await redis.onApplicationShutdown();
    }
  });

  it('a subscriber whose connection ends subscribes again on another node, and says so', async () => {
    const redis = await service(config());
    try {
      const got: string[] = [];
      let subscribed = 0;
      const s = redis.subscribe('rs:news', 'test', { message: (m) => got.push(m), subscribed: () => subscribed++, error: () => undefined });
      await s.firstSubscription;
      await admin.publish('rs:news', 'one');
      await until('the first message', () => got.includes('one'), 5_000);
      const first = s.address;
      assert.ok(first !== null);
      // End the subscriber's connection on its node (a node failing does the same).
      const node = admin.nodes('all').find((n) => `${n.options.host}:${n.options.port}` === first);
      assert.ok(node, `the subscriber's node ${first} is a node of the cluster`);
      await node.call('CLIENT', 'KILL', 'TYPE', 'pubsub');
      await until('a second subscription', () => subscribed >= 2, 10_000);
      assert.notEqual(s.address, first, 'it moved to another node');
      await admin.publish('rs:news', 'two');
      await until('the message after the move', () => got.includes('two'), 5_000);
    } finally {
      await redis.onApplicationShutdown();
    }
  });
});

describe('spend on a Redis Cluster', () => {
  it('reads every campaign\'s spend, one command per master, and stops exactly the exhausted ones', async () => {
    const cfg = config({ BUDGET_REFRESH_MS: '100' });
    const app = await createApp(cfg);
    try {
      await app.init();
      const spend = app.get(SpendService);
      const budgeted = [...new Map(app.get(CampaignStore).current().candidates.filter((c) => c.budget).map((c) => [c.campaignId, c])).values()];
      assert.ok(budgeted.length >= 20, `${budgeted.length} budgeted campaigns in the demo set`);
      assert.ok(new Set(budgeted.map((c) => slotOf(spendKeys.total(c.campaignId)))).size >= 10, 'their keys are on many slots');
      const exhausted = budgeted.slice(0, 5);
      for (const c of exhausted) await admin.set(spendKeys.total(c.campaignId), String(Math.ceil(c.budget!.total * 1e6)));
      const errors = spend.stats.refreshErrors;
      await spend.refresh();
      assert.equal(spend.stats.refreshErrors, errors);
      for (const c of budgeted) assert.equal(spend.allows(c), !exhausted.includes(c), c.campaignId);
    } finally {
      await app.close();
    }
  });
});

/** Logs `perTick` request records (with `pad` random bytes each, which zstd cannot shrink) every `everyMs` until `stop()`; returns the ids logged. */
function logSteadily(log: LogService, prefix: string, pad = 0, perTick = 40, everyMs = 10): { ids: string[]; stop(): Promise<void> } {
  const ids: string[] = [];
  let n = 0;
  const t = setInterval(() => {
    for (let i = 0; i < perTick; i++) {
      const id = `${prefix}-${n++}`;
      ids.push(id);
      log.log({ type: 'request', id, name: 'p', pad: pad > 0 ? randomBytes(pad).toString('base64') : undefined } as LogRecord);
    }
  }, everyMs);
  return {
    ids,
    stop: async () => {
      clearInterval(t);
      await sleep(0);
    },
  };
}

function assertOnce(records: Array<{ id: string; type: string }>, ids: readonly string[]): void {
  const seen = new Map<string, number>();
  for (const r of records) if (r.type === 'request') seen.set(r.id, (seen.get(r.id) ?? 0) + 1);
  const problems = ids.filter((id) => seen.get(id) !== 1).map((id) => `${id}: ${seen.get(id) ?? 0}`);
  assert.deepEqual(problems.slice(0, 10), [], `${problems.length} of ${ids.length} records not exactly once`);
  assert.equal(seen.size, ids.length, 'no other records');
}

describe('the bid log on a Redis Cluster', () => {
  it('spreads frames over the 16 lists and loses or repeats nothing across a manual failover', async () => {
    const key = 'fo';
    const app = await createApp(config({ LOG_REDIS_KEY: key, LOG_FLUSH_INTERVAL_MS: '20' }));
    await app.init();
    const log = app.get(LogService);
    const traffic = logSteadily(log, 'fo');
    await sleep(1_000);
    const port = await masterPortOf(admin, `${key}:{0}`);
    await cluster.failover(port);
    await sleep(1_000);
    await traffic.stop();
    await app.close();
    const s = log.stats();
    assert.equal(s.recordsDropped, 0);
    assert.equal(s.recordsSpilled, 0, 'nothing had to wait on disk');
    const { perList, records } = await readClusterLog(admin, clusterLogKeys(key));
    assert.ok(perList.filter((n) => n > 0).length >= 12, `frames in most lists: ${perList.join(' ')}`);
    assertOnce(records, traffic.ids);
    assert.ok(records.every((r) => r.host === 'host-t' && r.worker === 'w1'));
  });

  it('a master killed: bidding goes on, its frames wait (memory, then disk) until a replica holds them, none lost or repeated', async () => {
    const key = 'kl';
    const spill = fs.mkdtempSync(path.join(dir, 'spill-kill-'));
    // A small memory bound, so that frames waiting for the killed shard go to disk too; not so small
    // that the records of a moment fill it alone (64 KiB, about 100 ms of them, dropped some when the
    // compression of a busy machine fell that far behind).
    const app = await createApp(config({ LOG_REDIS_KEY: key, LOG_FLUSH_INTERVAL_MS: '20', LOG_MAX_MEMORY_BYTES: String(192 * 1024), LOG_SPILL_DIR: spill, SHUTDOWN_TIMEOUT_MS: '3000' }));
    await app.init();
    const log = app.get(LogService);
    const traffic = logSteadily(log, 'kl', 64);
    await sleep(800);
    const victim = await masterPortOf(admin, `${key}:{0}`);
    await cluster.kill(victim);
    // The replica takes over after the node timeout (1 s); it has no replica of its own until the
    // killed node comes back as one, so its lists' frames cannot be confirmed meanwhile.
    await cluster.waitUntilOk();
    await sleep(1_000);
    const waiting = log.stats();
    assert.ok(waiting.flushErrors > 0, 'pushes failed or went unconfirmed meanwhile');
    await cluster.restart(victim);
    await cluster.waitUntilOk();
    await sleep(500);
    await traffic.stop();
    await app.close();
    const s = log.stats();
    assert.equal(s.recordsDropped, 0);
    assert.ok(s.recordsSpilled > 0, 'frames waited on disk');
    // What did not reach Redis by the end of the final flush is in the spill directory, and the
    // reader counts every record once across both (a spill file whose frame Redis already holds is skipped).
    const r = await runCliOnCluster(['cat', '--type', 'request'], clusterEnv(cluster, { LOG_REDIS_KEY: key, LOG_SPILL_DIR: spill }));
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stderr.includes('cannot reach'), r.stderr);
    const records = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { id: string; type: string });
    assert.ok(records.length > 0, `no record read; stderr: ${r.stderr.slice(0, 2_000)}`);
    assertOnce(records, traffic.ids);
  });
});

describe('closing a cluster client', () => {
  it('leaves no slot-map refresh timer behind when a refresh was in flight at the close', async () => {
    // ioredis starts its next periodic refresh when one completes, even if the client was closed
    // meanwhile: the timer then fires every interval and keeps the process alive (a test file's
    // process did not exit). A short interval makes a refresh in flight easy to catch.
    const target = loadConfig(clusterEnv(cluster, { TRACKING_SECRET: 'test-secret' })).redis;
    let caught = 0;
    for (let round = 0; round < 20 && caught < 5; round++) {
      const client = new Cluster(cluster.nodes.map(({ host, port }) => ({ host, port })), { ...clusterClientOptions(target, 'refresh-test'), slotsRefreshInterval: 2 });
      client.on('error', () => undefined);
      client.on('node error', () => undefined);
      await client.connect();
      const inFlight = (): boolean => (client as unknown as { isRefreshing: boolean }).isRefreshing;
      const until = Date.now() + 2_000;
      while (!inFlight() && Date.now() < until) await new Promise((r) => setImmediate(r));
      const wasInFlight = inFlight();
      await client.quit().catch(() => undefined);
      stopSlotsRefresh(client);
      await sleep(100);
      const timer = (client as unknown as { slotsTimer: NodeJS.Timeout | null }).slotsTimer;
      client.disconnect();
      if (!wasInFlight) continue;
      caught++;
      assert.equal(timer, null, `round ${round}: a refresh timer was armed after the close`);
    }
    assert.ok(caught > 0, 'no refresh was caught in flight');
  });
});
