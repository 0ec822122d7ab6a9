/**
 * Budget leases count the live workers of every host. Hosts' clocks disagree: a worker whose clock is
 * seconds behind must still be counted (liveness is measured on Redis's clock), or every lease is too
 * large and campaigns overspend.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, listen } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { Clock } from '../../src/delivery/clock';
import { SpendService } from '../../src/delivery/spend.service';
import { startTestRedis, type TestRedis } from '../support/redis';

let redis: TestRedis;
let dir: string;
const apps: NestFastifyApplication[] = [];

before(async () => {
  redis = await startTestRedis();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-leases-'));
  for (const worker of ['a', 'b']) {
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_PORT: '0',
      REDIS_URL: redis.url,
      WORKER_ID: worker,
      LOG_SPILL_DIR: path.join(dir, worker),
      BUDGET_REFRESH_MS: '100',
      LOG_LEVEL: 'warn',
    });
    const app = await createApp(config);
    if (worker === 'b') {
      // Host b's clock runs 3 s behind.
      const clock = app.get(Clock);
      clock.now = () => Date.now() - 3_000;
    }
    await listen(app, config);
    apps.push(app);
  }
});

after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('live workers', () => {
  it('a worker whose clock is 3 s behind is counted by every worker', async () => {
    await new Promise((r) => setTimeout(r, 600));
    for (const app of apps) {
      const spend = app.get(SpendService);
      await spend.refresh();
      assert.equal(spend.stats.liveWorkers, 2);
    }
  });
  it('a worker that stops is no longer counted within a few refreshes', async () => {
    await apps[1].close();
    await new Promise((r) => setTimeout(r, 1_500));
    const spend = apps[0].get(SpendService);
    await spend.refresh();
    assert.equal(spend.stats.liveWorkers, 1);
  });
});
