// The claim protocol against a real Redis: bounds, leases, adoption, concurrent claimers, backlog.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type Redis from 'ioredis';
import { readBacklog } from '../../src/bidlog/reader';
import { heartbeatKey, logListKeys, procKey, shippersKey } from '../../src/bidlog/keys';
import { LeaseLostError, ShipperRedis } from '../../src/shipper/shipper-redis';
import { startTestRedis, type TestRedis } from '../support/redis';
import { redisClient, syntheticFrames } from './support';

describe('shipper claims (real Redis)', () => {
  let redis: TestRedis;
  let admin: Redis;
  const clients: ShipperRedis[] = [];

  before(async () => {
    redis = await startTestRedis();
    admin = await redisClient(redis.url);
  });
  after(async () => {
    for (const c of clients) await c.close();
    admin.disconnect();
    await redis.stop();
  });

  async function shipper(id: string, token = `${id}-token`): Promise<ShipperRedis> {
    const s = new ShipperRedis({ mode: 'single', url: redis.url, nodes: [] }, id, token);
    clients.push(s);
    await s.connect();
    return s;
  }

  it('reads the one log list of LOG_REDIS_KEY; every key of a list starts with the list key (one hash tag in Redis Cluster)', () => {
    assert.deepEqual(logListKeys({ logRedisKey: 'bidlog', logRedisShards: 1, redis: { mode: 'single' } }), ['bidlog']);
    for (const k of [procKey('bidlog:{3}', 's1'), heartbeatKey('bidlog:{3}', 's1'), shippersKey('bidlog:{3}')]) assert.ok(k.startsWith('bidlog:{3}:'), k);
  });

  it('claims the head of the list within the frame and byte bounds, only while the processing list is empty, and only with the lease', async () => {
    const key = 'c-bounds';
    const { frames } = syntheticFrames(10, 20);
    await admin.rpush(key, ...frames);
    const s = await shipper('b1');
    await assert.rejects(s.claim(key, 3, 1 << 20), LeaseLostError, 'no lease, no claim');
    assert.equal(await s.heartbeat(key, 5_000), 'acquired');
    assert.equal(await s.heartbeat(key, 5_000), 'held');

    const first = await s.claim(key, 3, 1 << 20);
    assert.ok(first);
    assert.deepEqual(first, frames.slice(0, 3), 'oldest first, bytes unchanged');
    assert.equal(await admin.llen(key), 7);
    assert.deepEqual(await s.processing(key), frames.slice(0, 3));
    assert.equal(await s.claim(key, 3, 1 << 20), null, 'a batch is under way: no second claim');

    assert.equal(await s.remove(key), 3);
    assert.deepEqual(await s.processing(key), []);
    // Bytes: always at least one frame, then only while under the bound.
    const one = await s.claim(key, 100, 1);
    assert.equal(one?.length, 1);
    await s.remove(key);
    const bound = frames[4].length + frames[5].length;
    const two = await s.claim(key, 100, bound);
    assert.deepEqual(two, frames.slice(4, 6));
    await s.remove(key);
    assert.equal((await s.claim(key, 100, 1 << 20))?.length, 4);
    await s.remove(key);
    assert.deepEqual(await s.claim(key, 100, 1 << 20), [], 'empty list: nothing claimed');
  });

  it('a second process with the same SHIP_ID waits: it cannot take the lease, claim or remove', async () => {
    const key = 'c-same-id';
    await admin.rpush(key, ...syntheticFrames(2, 5).frames);
    const a = await shipper('same', 'token-a');
    const b = await shipper('same', 'token-b');
    assert.equal(await a.heartbeat(key, 5_000), 'acquired');
    assert.equal(await b.heartbeat(key, 5_000), 'taken');
    assert.equal((await a.claim(key, 1, 1 << 20))?.length, 1);
    await assert.rejects(b.claim(key, 1, 1 << 20), LeaseLostError);
    await assert.rejects(b.remove(key), LeaseLostError);
    assert.equal(await admin.llen(procKey(key, 'same')), 1, 'a\'s batch is untouched');
    await a.release(key);
    assert.equal(await b.heartbeat(key, 5_000), 'acquired', 'released: the other process may go on');
  });

  it('a dead shipper\'s processing list is adopted whole once its lease expires, by exactly one of two adopters', async () => {
    const key = 'c-adopt';
    const { frames } = syntheticFrames(6, 5);
    await admin.rpush(key, ...frames);
    const dead = await shipper('dead');
    await dead.heartbeat(key, 300);
    assert.equal((await dead.claim(key, 4, 1 << 20))?.length, 4);

    const x = await shipper('x');
    const y = await shipper('y');
    await x.heartbeat(key, 10_000);
    await y.heartbeat(key, 10_000);
    assert.equal(await x.adopt(key), null, 'the lease is alive: nothing to adopt');
    await new Promise((r) => setTimeout(r, 400));
    const [ax, ay] = await Promise.all([x.adopt(key), y.adopt(key)]);
    const winner = ax ? x : y;
    assert.ok((ax === null) !== (ay === null), 'exactly one adopter');
    assert.deepEqual(ax ?? ay, { from: 'dead', frames: 4 });
    assert.deepEqual(await winner.processing(key), frames.slice(0, 4), 'the same frames, so the same batch group');
    assert.equal(await admin.exists(procKey(key, 'dead')), 0);
    assert.deepEqual((await admin.smembers(shippersKey(key))).sort(), [winner.shipperId]);
    // A shipper busy with its own batch does not adopt.
    assert.equal(await winner.adopt(key), null);
  });

  it('several claimers at once never get the same frame, and together get every frame', async () => {
    const key = 'c-race';
    const { frames } = syntheticFrames(300, 2);
    await admin.rpush(key, ...frames);
    const claimers = await Promise.all(['r1', 'r2', 'r3', 'r4'].map((id) => shipper(id)));
    for (const c of claimers) await c.heartbeat(key, 10_000);
    const got: Buffer[][] = claimers.map(() => []);
    await Promise.all(
      claimers.map(async (c, i) => {
        for (;;) {
          const batch = await c.claim(key, 7, 1 << 20);
          assert.ok(batch !== null);
          if (batch.length === 0) return;
          got[i].push(...batch);
          await c.remove(key);
        }
      }),
    );
    const all = got.flat().map((b) => b.toString('base64'));
    assert.equal(all.length, frames.length);
    assert.equal(new Set(all).size, frames.length, 'no frame twice');
    assert.ok(got.filter((g) => g.length > 0).length >= 2, 'the claimers took turns');
  });

  it('readBacklog: frames, bytes and the first record\'s ts of the oldest frame', async () => {
    const t0 = Date.UTC(2026, 0, 2, 3, 4, 5);
    const { frames } = syntheticFrames(5, 50, t0);
    await admin.rpush('c-backlog', ...frames);
    const b = await readBacklog(admin, ['c-backlog', 'c-empty']);
    assert.equal(b.frames, 5);
    assert.ok(b.bytes >= frames.reduce((s, f) => s + f.length, 0), `bytes ${b.bytes}`);
    assert.equal(b.oldestTs, t0);
    assert.deepEqual(await readBacklog(admin, ['c-empty']), { frames: 0, bytes: 0, oldestTs: null });
  });
});
