/**
 * A traffic-shaped curve learned through a real Redis: a worker counts an even campaign's eligible
 * requests per hour of a virtual day (in its gate), adds them in Redis at its slow cadence, and at
 * the next day paces along that day's shape; a uniform campaign of the same traffic stays uniform.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { Clock } from '../../src/delivery/clock';
import { trafficKey } from '../../src/delivery/keys';
import { SpendService } from '../../src/delivery/spend.service';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { startTestRedis, type TestRedis } from '../support/redis';
import { bannerCampaign } from '../support/campaigns';

/** An even campaign on `curve` with one w×250 banner. */
const curved = (id: string, curve: 'uniform' | 'traffic', w: number): object =>
  bannerCampaign(id, { w, h: 250 }, { pacing: 'even', pacingCurve: curve, budget: { total: 1000, daily: DAILY } });

const DAY0 = Date.UTC(2026, 0, 5);
const H = 3_600_000;
const DAILY = 10;

let redis: TestRedis;
let client: Redis;
let dir: string;
let app: NestFastifyApplication;
let now = DAY0;

before(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-traffic-'));
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(file, JSON.stringify({ version: 1, currency: 'USD', campaigns: [curved('shaped', 'traffic', 300), curved('flat', 'uniform', 320)] }));
  app = await createApp(
    loadConfig({
      PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', REDIS_URL: redis.url, CAMPAIGNS_FILE: file, CAMPAIGNS_WATCH_MS: '0', LOG_LEVEL: 'warn',
      TRACKING_SECRET: 's', LOG_SPILL_DIR: path.join(dir, 'spill'), BUDGET_REFRESH_MS: '10000', PACING_TRAFFIC_SYNC_S: '60',
    }),
  );
  await app.init();
  app.get(SpendService).stopTimer();
  app.get(Clock).now = () => now;
});

after(async () => {
  await app?.close();
  client?.disconnect();
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('traffic-shaped pacing curve, learned in Redis', () => {
  it('a day whose traffic is nine times larger after noon shapes the next day; a uniform campaign stays uniform', { timeout: 60_000 }, async () => {
    const spend = app.get(SpendService);
    const candidates = app.get(CampaignStore).current().candidates;
    const shaped = candidates.find((c) => c.campaignId === 'shaped')!;
    const flat = candidates.find((c) => c.campaignId === 'flat')!;
    // Day 1: 10 eligible requests a minute before noon, 90 after; a refresh every minute.
    for (now = DAY0; now < DAY0 + 24 * H; now += 60_000) {
      await spend.refresh(now);
      const n = now < DAY0 + 12 * H ? 10 : 90;
      for (let i = 0; i < n; i++) {
        spend.allows(shaped);
        spend.allows(flat);
      }
    }
    // Day 2: the first refresh adds the last counts and reads the curve; no spend yet.
    for (now = DAY0 + 24 * H; now <= DAY0 + 36 * H; now += 60_000) await spend.refresh(now);
    const day1 = await client.hgetall(trafficKey('shaped', '20260105'));
    assert.equal(Object.keys(day1).length, 24, 'every hour of day 1 observed');
    assert.equal(Number(day1['3']), 600);
    assert.equal(Number(day1['15']), 5400);
    assert.equal(Object.keys(await client.hgetall(trafficKey('flat', '20260105'))).length, 0, 'a uniform campaign writes nothing');
    const at = (id: string) => spend.pacing().find((p) => p.campaign === id)!.target / DAILY;
    // At noon of day 2: 10 % of the day's traffic is gone (with 5 % of the day uniform: 12 %), against half of the day for the uniform curve.
    const aim = 24 - 300_000 / H;
    const c = (x: number) => (x <= 12 ? 0.95 * 0.1 * (x / 12) : 0.95 * (0.1 + 0.9 * ((x - 12) / 12))) + 0.05 * (x / 24);
    assert.ok(Math.abs(at('shaped') - c(12) / c(aim)) < 0.005, `shaped: ${at('shaped')} of the budget by noon, against ${c(12) / c(aim)}`);
    assert.ok(Math.abs(at('flat') - 12 / aim) < 0.005, `flat: ${at('flat')} of the budget by noon`);
  });
});
