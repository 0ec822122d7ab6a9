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
import { MARKETS } from '../sim/market';
import { simulate } from '../sim/simulator';
import { startTestRedis, type TestRedis } from '../../test/support/redis';

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

describe('two workers, one restarted', () => {
  it('after a restart the two workers\' pacing shares meet (within 1.5x 2 minutes after), and their sum is back to 95 % of what it was', { timeout: 300_000 }, async () => {
    // An even campaign first seen at noon (its day prorated to what was left of it), 20 auctions a
    // second for 10 minutes; worker 1 restarts at 4 minutes (a new process: nothing kept).
    const restartS = 240;
    const r = await simulate({
      market: { ...MARKETS.lognormal, run: { seconds: 600, perSecond: 20 } },
      strategy: 'shaded',
      seed: 1,
      days: 1,
      requestsPerDay: 1,
      redisUrl: redis.url,
      dir,
      workers: 2,
      refreshMs: 250,
      campaigns: [{ id: 'paced', w: 300, h: 250, value: 2, daily: 130, pacing: 'even', timeZone: 'UTC' }],
      restart: { worker: 1, atMs: restartS * 1000 },
    });
    assert.equal(r.noticeErrors, 0);
    const [a, b] = r.shareBySecond;
    const before = (a[restartS - 1] + b[restartS - 1]) / 2;
    // Seconds after the restart until the sum of the shares is back to 95 % of the sum before.
    let back = NaN;
    for (let t = restartS; t < 600; t++) {
      if (a[t] + b[t] >= 0.95 * 2 * before) {
        back = t - restartS;
        break;
      }
    }
    const ratios = [120, 180, 300].map((s) => Math.max(a[restartS + s], b[restartS + s]) / Math.min(a[restartS + s], b[restartS + s]));
    console.log(`shares before the restart ${a[restartS - 1].toFixed(3)} / ${b[restartS - 1].toFixed(3)}; ratio 2, 3, 5 minutes after ${ratios.map((x) => x.toFixed(2)).join(', ')}; the sum back to 95 % after ${back} s`);
    for (const x of ratios) assert.ok(x <= 1.5, `shares ${ratios.map((y) => y.toFixed(2)).join(', ')} apart 2, 3, 5 minutes after the restart`);
    assert.ok(back <= 120, `the sum of the shares back to 95 % of what it was after ${back} s`);
    // The spend rate after the restart is the one before: the restarted worker spreads the same prorated day.
    const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
    const sumAt = (from: number, to: number) => mean(a.slice(from, to).map((x, i) => x + b[from + i]));
    const after = sumAt(restartS + 120, 600);
    assert.ok(after <= 1.3 * sumAt(restartS - 60, restartS), `shares' sum ${after.toFixed(3)} after the restart, ${sumAt(restartS - 60, restartS).toFixed(3)} before`);
  });
});
