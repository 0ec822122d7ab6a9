// RedisService at shutdown: the work registered with closeAfter (the bid log's final flush) runs
// before the clients close, with the connection still usable, even when Redis's own shutdown hook
// runs first. Nest awaits one module's hooks before the next module's, so a Redis hook that only
// waited for a flush another module's later hook starts would time out and close the connection
// under it (the bid log's records then went to disk instead of Redis at every stop).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { RedisService } from '../../src/redis/redis.service';
import { startTestRedis, type TestRedis } from '../support/redis';

describe('RedisService shutdown and the final flush', () => {
  let redis: TestRedis;
  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    await redis.stop();
  });

  it('runs closeAfter work on a usable connection when its own hook comes first, once, without waiting for the deadline', async () => {
    const service = new RedisService(loadConfig({ REDIS_URL: redis.url, SHUTDOWN_TIMEOUT_MS: '3000' }));
    service.onModuleInit();
    for (let i = 0; i < 200 && !service.isReady(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.equal(service.isReady(), true, 'the test Redis is reachable');

    let runs = 0;
    let flush: Promise<string | null> | null = null;
    const flushOnce = () => (flush ??= (runs++, service.logConnection().set('final-flush', 'done').then(() => service.logConnection().get('final-flush'))));
    service.closeAfter(flushOnce);

    const t0 = Date.now();
    await service.onApplicationShutdown(); // Redis's module first, the log's hook after it
    const owner = await flushOnce();
    assert.equal(owner, 'done', 'the flush ran on an open connection');
    assert.equal(runs, 1);
    assert.ok(Date.now() - t0 < 2000, `shutdown waited ${Date.now() - t0} ms: it should not wait for the deadline`);
  });
});
