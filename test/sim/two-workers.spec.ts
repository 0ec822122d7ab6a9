/**
 * End to end: two workers (two app instances sharing one real Redis) pace one even campaign over a
 * compressed day (the simulator's virtual clock; requests alternate between the workers, notices go
 * to either): its cumulative spend follows the curve, the day spends 95-100 % of the budget, never more.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MARKETS } from '../../src/sim/market';
import { simulate } from '../../src/sim/simulator';
import { startTestRedis, type TestRedis } from '../support/redis';

let redis: TestRedis;
let dir: string;

before(async () => {
  redis = await startTestRedis();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-two-'));
});

after(async () => {
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('two workers pacing one campaign', () => {
  it('spend on the curve all day, never over', { timeout: 300_000 }, async () => {
    const daily = 6;
    const r = await simulate({
      market: MARKETS.narrow,
      strategy: 'shaded',
      seed: 3,
      days: 1,
      requestsPerDay: 40_000,
      redisUrl: redis.url,
      dir,
      workers: 2,
      campaigns: [{ id: 'paced', w: 300, h: 250, value: 2, daily, pacing: 'even', timeZone: 'UTC' }],
    });
    assert.equal(r.noticeErrors, 0);
    assert.ok(r.bidsByWorker.every((b) => b > 1000), `bids by worker: ${r.bidsByWorker.join(', ')}`);
    const c = r.campaigns[0];
    let spent = 0;
    let target = 0;
    for (let h = 0; h < 24; h++) {
      spent += c.hourly.spend[h];
      target += c.hourly.target[h];
      if (h >= 1) assert.ok(Math.abs(spent - target) <= 0.1 * target, `by ${h + 1}:00 spent ${spent.toFixed(3)} against ${target.toFixed(3)}`);
    }
    assert.ok(!c.overBudget, 'over the daily budget');
    assert.equal(c.days.length, 1);
    assert.ok(c.days[0].spend >= 0.95 * daily && c.days[0].spend <= daily + 1e-9, `day: ${c.days[0].spend} of ${daily}`);
  });
});
