// End-to-end with real processes: `node dist/main.js` stopped by SIGTERM / SIGINT, and a worker
// whose Redis is away from start to stop (its records wait on disk for the next worker to drain).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';
import { assertExactlyOnce, readRedisLog, ROOT, runCli, sendBids, spawnBidder, until } from './support';

describe('bid log across process stops (node dist/main.js)', () => {
  let redis: TestRedis;
  const tmp: string[] = [];
  const extra: TestRedis[] = [];

  before(async () => {
    redis = await startTestRedis();
  });
  after(async () => {
    await redis.stop();
    for (const r of extra) await r.stop();
    for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
  });

  function spillDir(): string {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), 'bidlog-proc-'));
    tmp.push(d);
    return d;
  }

  const campaigns = path.join(ROOT, 'data', 'campaigns.demo.json');

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`${signal}: the final flush writes every record of the last requests`, async () => {
      const key = `proc-${signal}`;
      // The default 10 s interval: what reaches Redis before the stop comes from the size threshold only.
      const b = await spawnBidder(
        { REDIS_URL: redis.url, LOG_REDIS_KEY: key, LOG_SPILL_DIR: spillDir(), WORKER_ID: key, CAMPAIGNS_FILE: campaigns },
        await freePort(),
      );
      const { ids } = await sendBids(b.url, 600);
      const code = await b.stop(signal);
      assert.equal(code, 0, b.output());
      assert.match(b.output(), /final flush done: 1200 records/);
      const { records } = await readRedisLog(redis.url, key);
      assertExactlyOnce(records, ids);
    });
  }

  it('Redis away from start to stop: records spill to disk, the next worker drains them', async () => {
    const port = await freePort();
    const url = `redis://127.0.0.1:${port}`;
    const dir = spillDir();
    const env = { REDIS_URL: url, LOG_REDIS_KEY: 'proc-away', LOG_SPILL_DIR: dir, CAMPAIGNS_FILE: campaigns, SHUTDOWN_TIMEOUT_MS: '1500' };
    const first = await spawnBidder({ ...env, WORKER_ID: 'first' }, await freePort());
    const { ids } = await sendBids(first.url, 300);
    const t0 = Date.now();
    assert.equal(await first.stop('SIGTERM'), 0, first.output());
    assert.ok(Date.now() - t0 < 8_000, 'the stop respects its deadline');
    assert.match(first.output(), /writing them to/);
    assert.ok(fs.readdirSync(dir).some((n) => n.endsWith('.zst')));

    // The reader sees them on disk (Redis still away).
    const spilled = await runCli(['count', '--source', 'spill'], env);
    assert.equal(spilled.code, 0, spilled.stderr);
    assert.deepEqual((JSON.parse(spilled.stdout) as { byType: unknown }).byType, { request: 300, response: 300 });

    const r = await startTestRedis({ port });
    extra.push(r);
    const second = await spawnBidder({ ...env, WORKER_ID: 'second' }, await freePort());
    await until('the drain on start-up', () => !fs.readdirSync(dir).some((n) => n.includes('.zst')), 15_000);
    assert.equal(await second.stop('SIGTERM'), 0, second.output());
    const { records } = await readRedisLog(url, 'proc-away');
    assertExactlyOnce(records, ids);
    assert.ok(records.every((x) => x.worker === 'first'));
    const check = await runCli(['check'], env);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.equal((JSON.parse(check.stdout) as { records: number }).records, 600);
  });
});
