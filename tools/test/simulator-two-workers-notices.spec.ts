/**
 * Two workers sharing one Redis, each notice to either of them (as a PM2 cluster receives them):
 * the short markets' targets hold as they do with one worker, the workers sharing what they learned
 * every SHADING_SYNC_S (10 s) as they do in a cluster.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestRedis, type TestRedis } from '../../test/support/redis';
import { assertAgainstOracle } from './support/against-oracle';

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
    await assertAgainstOracle({ market: 'priced-loss', seeds: [1, 2], surplusShare: 0.9, redisUrl: redis.url, dir, workers: 2 });
  });

  it(
    'late bills (no win notices, bills 20-60 s late, loss notices): surplus ≥ 90 % and wins within 20 % of the oracle\'s, seeds 1-2',
    { timeout: 180_000 },
    async () => {
      await assertAgainstOracle({ market: 'late-bills', seeds: [1, 2], surplusShare: 0.9, redisUrl: redis.url, dir, workers: 2 });
    },
  );
});
