/**
 * A Redis that loses money keys: without an append-only file a restart loses every spend total and
 * billing marker (bills already counted count again), and an evicting maxmemory-policy drops them
 * when memory is full. A production bidder checks its Redis when it connects and refuses to start
 * on one, naming the setting and the opt-out (REDIS_ALLOW_VOLATILE=1); a Redis that turns volatile
 * later (a restart with another configuration) makes it not ready. Real Redis servers.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, listen } from '../../src/app';
import { ConfigError, loadConfig } from '../../src/config/config';
import { request } from '../support/app';
import { startTestRedis, type TestRedis } from '../support/redis';

const PROD = {
  NODE_ENV: 'production',
  TRACKING_SECRET: 't'.repeat(40),
  PII_HASH_SECRET: 'p'.repeat(40),
  TRACKING_BASE_URL: 'https://bidder.example.com',
  EXCHANGES_OPEN: '1',
  PORT: '0',
  HOST: '127.0.0.1',
  ADMIN_PORT: '0',
  LOG_LEVEL: 'error',
};

describe('a production bidder on a Redis that loses money keys', { timeout: 60_000 }, () => {
  let redis: TestRedis;
  let admin: Redis;
  let dir = '';
  const apps: NestFastifyApplication[] = [];
  before(async () => {
    redis = await startTestRedis();
    admin = new Redis(redis.url);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-durability-'));
  });
  after(async () => {
    for (const a of apps) await a.close().catch(() => undefined);
    admin?.disconnect();
    await redis?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  async function start(env: Record<string, string> = {}): Promise<{ app: NestFastifyApplication; url: string }> {
    const config = loadConfig({ ...PROD, REDIS_URL: redis.url, LOG_SPILL_DIR: path.join(dir, `spill-${n++}`), ...env });
    const app = await createApp(config);
    apps.push(app);
    const url = (await listen(app, config)).replace('[::1]', '127.0.0.1');
    return { app, url };
  }
  async function durable(appendonly: 'yes' | 'no', policy: string, maxmemory = '0'): Promise<void> {
    await admin.config('SET', 'appendonly', appendonly);
    await admin.config('SET', 'maxmemory-policy', policy);
    await admin.config('SET', 'maxmemory', maxmemory);
  }

  it('refuses to start without an append-only file, naming it and REDIS_ALLOW_VOLATILE=1', async () => {
    await durable('no', 'noeviction');
    await assert.rejects(start(), (e: unknown) => {
      assert.ok(e instanceof ConfigError, String(e));
      assert.match(e.message, /REDIS_URL.*no append-only file \(aof_enabled:0\)/);
      assert.match(e.message, /REDIS_ALLOW_VOLATILE=1/);
      return true;
    });
  });

  it('refuses an evicting maxmemory-policy, naming it', async () => {
    await durable('yes', 'allkeys-lru', '100mb');
    await assert.rejects(start(), (e: unknown) => e instanceof ConfigError && /maxmemory-policy allkeys-lru/.test(e.message) && /noeviction/.test(e.message));
  });

  it('starts on a Redis with an append-only file and noeviction, ready', async () => {
    await durable('yes', 'noeviction', '100mb');
    const { url } = await start();
    const r = await request(`${url}/health/ready`, { method: 'GET' });
    assert.equal(r.status, 200, r.body.toString());
  });

  it('starts on a volatile Redis when REDIS_ALLOW_VOLATILE=1 says so', async () => {
    await durable('no', 'allkeys-lru', '100mb');
    const { url } = await start({ REDIS_ALLOW_VOLATILE: '1' });
    assert.equal((await request(`${url}/health/ready`, { method: 'GET' })).status, 200);
  });

  it('outside production it starts, whatever the Redis', async () => {
    await durable('no', 'noeviction');
    const { url } = await start({ NODE_ENV: 'development' });
    assert.equal((await request(`${url}/health/ready`, { method: 'GET' })).status, 200);
  });

  it('a Redis that comes back volatile (reconnected after a restart) makes a production worker not ready, saying why', async () => {
    await durable('yes', 'noeviction');
    const { url } = await start();
    assert.equal((await request(`${url}/health/ready`, { method: 'GET' })).status, 200);
    await durable('no', 'noeviction');
    await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    let last = '';
    for (let i = 0; i < 50; i++) {
      const r = await request(`${url}/health/ready`, { method: 'GET' });
      last = r.body.toString();
      if (r.status === 503 && /aof_enabled:0/.test(last)) break;
      await new Promise((res) => setTimeout(res, 100));
    }
    assert.match(last, /"status":"not ready".*no append-only file \(aof_enabled:0\).*REDIS_ALLOW_VOLATILE=1/);
  });
});
