/**
 * Two workers sharing one Redis, each notice to either of them (as a PM2 cluster receives them):
 * the short markets' targets hold as they do with one worker, the workers sharing what they learned
 * every SHADING_SYNC_S (10 s) as they do in a cluster.
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
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-two-notices-'));
});

after(async () => {
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('short markets with two workers, notices to either', () => {
  it('priced loss notices, win notices and bills (a bid\'s win notice and bill often at different workers, each win taught once): surplus ≥ 90 % and wins within 20 % of the oracle\'s, seeds 1-2', { timeout: 180_000 }, async () => {
    for (const seed of [1, 2]) {
      const run = (strategy: 'shaded' | 'oracle') => simulate({ market: MARKETS['priced-loss'], strategy, seed, days: 1, requestsPerDay: 100_000, redisUrl: redis.url, dir, workers: 2 });
      const shaded = await run('shaded');
      const oracle = await run('oracle');
      assert.equal(shaded.noticeErrors, 0);
      assert.ok(shaded.surplus >= 0.9 * oracle.surplus, `seed ${seed}: surplus ${shaded.surplus.toFixed(3)} against the oracle's ${oracle.surplus.toFixed(3)}`);
      assert.ok(Math.abs(shaded.wins / oracle.wins - 1) <= 0.2, `seed ${seed}: ${shaded.wins} wins against the oracle's ${oracle.wins}`);
    }
  });

  it(
    'late bills (no win notices, bills 20-60 s late, loss notices): surplus ≥ 90 % and wins within 20 % of the oracle\'s, seeds 1-2',
    { timeout: 180_000 },
    async () => {
      for (const seed of [1, 2]) {
        const run = (strategy: 'shaded' | 'oracle') => simulate({ market: MARKETS['late-bills'], strategy, seed, days: 1, requestsPerDay: 100_000, redisUrl: redis.url, dir, workers: 2 });
        const shaded = await run('shaded');
        const oracle = await run('oracle');
        assert.equal(shaded.noticeErrors, 0);
        assert.ok(shaded.surplus >= 0.9 * oracle.surplus, `seed ${seed}: surplus ${shaded.surplus.toFixed(3)} against the oracle's ${oracle.surplus.toFixed(3)}`);
        assert.ok(Math.abs(shaded.wins / oracle.wins - 1) <= 0.2, `seed ${seed}: ${shaded.wins} wins against the oracle's ${oracle.wins}`);
      }
    },
  );
});
