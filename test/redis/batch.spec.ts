// src/redis/batch.ts on a real Redis: a batch's commands leave in one write to the socket (the
// write calls are counted on the client's own socket), every command gets its reply, and shutdown
// waits for what is queued and in flight.
import assert from 'node:assert/strict';
import type * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { corked, REDIS_BATCH_MAX, REDIS_BATCH_MS, RedisBatch } from '../../src/redis/batch';
import type { RedisClient } from '../../src/redis/redis.options';
import { RedisService } from '../../src/redis/redis.service';
import { startTestRedis, type TestRedis } from '../support/redis';
import { countWrites as countSocketWrites, type WriteCounter } from '../support/socket-writes';

/** The writes of the client's socket. */
function countWrites(client: RedisClient): WriteCounter {
  return countSocketWrites((client as unknown as { stream: net.Socket }).stream);
}

describe('Redis command batch', () => {
  let redis: TestRedis;
  let service: RedisService;
  let client: RedisClient;

  before(async () => {
    redis = await startTestRedis();
    service = new RedisService(loadConfig({ REDIS_URL: redis.url }));
    client = service.connection();
    service.onModuleInit();
    for (let i = 0; i < 200 && !service.isReady(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(service.isReady(), true, 'the test Redis is reachable');
  });

  after(async () => {
    await service.onApplicationShutdown();
    await redis.stop();
  });

  it('corked: 20 commands leave in one write (20 without it), each with its reply', async () => {
    const loose = countWrites(client);
    const a = await Promise.all(Array.from({ length: 20 }, (_, i) => client.set(`loose:${i}`, String(i))));
    loose.stop();
    assert.equal(loose.n, 20);
    assert.deepEqual(a, Array(20).fill('OK'));

    const tight = countWrites(client);
    const replies: Array<Promise<unknown>> = [];
    corked(client, () => {
      for (let i = 0; i < 20; i++) replies.push(client.incrby('batched', i + 1));
    });
    const b = await Promise.all(replies);
    tight.stop();
    assert.equal(tight.n, 1);
    assert.equal(b[19], 210);
  });

  it('gathers what comes within REDIS_BATCH_MS into one write, and drain waits for every reply', async () => {
    const batch = new RedisBatch(service);
    const writes = countWrites(client);
    const seen: number[] = [];
    const t0 = performance.now();
    for (let i = 0; i < 10; i++) {
      batch.later(() => client.set(`marker:${i}`, '1', 'EX', 60, 'NX').then((ok) => void seen.push(ok === 'OK' ? i : -1)));
      await new Promise((r) => setImmediate(r));
    }
    assert.equal(writes.n, 0, 'nothing left before the batch is due');
    await batch.drain();
    writes.stop();
    assert.equal(writes.n, 1);
    assert.deepEqual(seen, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    assert.ok(performance.now() - t0 < REDIS_BATCH_MS + 1_000);

    // The timer sends it by itself too.
    const late = new Promise<string | null>((resolve) => batch.later(() => client.set('marker:0', '1', 'EX', 60, 'NX').then(resolve)));
    assert.equal(await late, null, 'a repeat');
  });

  it('a flood does not queue without bound: the REDIS_BATCH_MAX-th command sends the batch at once', async () => {
    const batch = new RedisBatch(service);
    const writes = countWrites(client);
    let done = 0;
    const n = 2 * REDIS_BATCH_MAX + 5;
    for (let i = 0; i < n; i++) batch.later(() => client.incr('flood').then(() => void done++));
    // Two full batches left in the same turn, one write each; the last 5 wait for the timer.
    assert.equal(writes.n, 2);
    await batch.drain();
    writes.stop();
    assert.equal(writes.n, 3);
    assert.equal(done, n);
    assert.equal(await client.get('flood'), String(n));
  });

  it('from shutdown on, sends at once and waits for what was queued', async () => {
    const batch = new RedisBatch(service);
    const order: string[] = [];
    batch.later(() => client.incr('queued').then(() => void order.push('queued')));
    await batch.beforeApplicationShutdown();
    assert.deepEqual(order, ['queued']);
    const writes = countWrites(client);
    let done = false;
    batch.later(() => client.incr('after').then(() => void (done = true)));
    writes.stop();
    assert.equal(writes.n, 1, 'issued at once');
    await batch.drain();
    assert.equal(done, true);
  });

  it('a failing command fails alone: the others of its batch get their replies', async () => {
    const batch = new RedisBatch(service);
    const results: string[] = [];
    batch.later(() => client.set('ok:1', '1').then((r) => void results.push(String(r))));
    // ok:1 holds a string when this runs (the batch's commands run in order): WRONGTYPE.
    batch.later(() => client.hset('ok:1', 'f', 'v').then(() => void results.push('unexpected'), () => void results.push('WRONGTYPE')));
    batch.later(() => {
      throw new Error('a sender bug');
    });
    batch.later(() => client.get('ok:1').then((r) => void results.push(String(r))));
    await batch.drain();
    assert.deepEqual(results.sort(), ['1', 'OK', 'WRONGTYPE']);
  });
});
