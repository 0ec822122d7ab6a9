/**
 * The market simulator: a seed replays a run exactly; the market's closed form (what the oracle
 * bids from) is the distribution its sampler draws; the oracle is the exact optimum.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { oracleBid } from '../../src/delivery/shading';
import { competitionCdf, drawCompetition, logNormalCdf, MARKETS, seeded, type SegmentShape } from '../sim/market';
import { simulate, type SimResult } from '../sim/simulator';
import { startTestRedis, type TestRedis } from '../../test/support/redis';
import { assertAgainstOracle } from './support/against-oracle';

let redis: TestRedis;
let dir: string;

before(async () => {
  redis = await startTestRedis();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-sim-'));
});

after(async () => {
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

const strip = (r: SimResult) => ({ ...r, wallMs: 0 });

describe('simulator', () => {
  it('same seed, same result; another seed, another', { timeout: 180_000 }, async () => {
    const run = (seed: number) => simulate({ market: MARKETS.crowded, strategy: 'shaded', seed, days: 1, requestsPerDay: 4000, redisUrl: redis.url, dir, refreshMs: 30_000 });
    const a = await run(5);
    const b = await run(5);
    assert.ok(a.wins > 100, `${a.wins} wins`);
    assert.deepEqual(strip(a), strip(b));
    const c = await run(6);
    assert.notDeepEqual(strip(a), strip(c));
  });

  it('the closed form of the market is the distribution its sampler draws from', () => {
    const seg: SegmentShape = MARKETS.crowded.segments[0];
    const r = seeded(11);
    const n = 40_000;
    const draws = Array.from({ length: n }, () => drawCompetition(seg, r)).sort((x, y) => x - y);
    for (const b of [0.3, 0.5, 0.7, 1, 1.5]) {
      let below = 0;
      while (below < n && draws[below] <= b) below++;
      assert.ok(Math.abs(below / n - competitionCdf(seg, b)) < 0.01, `at ${b}: ${below / n} against ${competitionCdf(seg, b)}`);
    }
  });

  it('an exchange that sends wins only (no loss notices, no prices to win): surplus ≥ 80 % and wins within 20 % of the oracle\'s, seeds 1-3', { timeout: 180_000 }, async () => {
    await assertAgainstOracle({ market: 'wins-only', seeds: [1, 2, 3], surplusShare: 0.8, redisUrl: redis.url, dir });
  });

  it('an exchange whose wins come late (no win notices, bills 20-60 s after the bid, loss notices): surplus ≥ 90 % of the oracle\'s, wins within 20 %, seeds 1-3', { timeout: 180_000 }, async () => {
    await assertAgainstOracle({ market: 'late-bills', seeds: [1, 2, 3], surplusShare: 0.9, redisUrl: redis.url, dir });
  });

  it('the oracle is the exact optimum for a known distribution', () => {
    // One log-normal competitor (median 1, σ 0.5), value 2: at the optimum, G(b) = (v − b) g(b).
    const G = (b: number) => logNormalCdf(b, 1, 0.5);
    const g = (b: number) => Math.exp(-((Math.log(b) / 0.5) ** 2) / 2) / (b * 0.5 * Math.sqrt(2 * Math.PI));
    const b = oracleBid(G, 2, 0);
    assert.ok(Math.abs(G(b) - (2 - b) * g(b)) < 1e-6, `first-order condition at ${b}`);
    for (let x = 0.01; x < 2; x += 0.01) assert.ok((2 - x) * G(x) <= (2 - b) * G(b) + 1e-12);
    // A floor above the optimum: the floor.
    assert.ok(Math.abs(oracleBid(G, 2, 1.6) - 1.6) < 1e-9);
  });
});
