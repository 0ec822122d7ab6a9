/**
 * The short markets' check, shared by the simulator's tests: for each seed, the shaded bidder and
 * the oracle on the same auctions; every notice answered, surplus at least `surplusShare` of the
 * oracle's and wins within 20 % of its.
 */
import assert from 'node:assert/strict';
import { MARKETS } from '../../sim/market';
import { simulate } from '../../sim/simulator';

export async function assertAgainstOracle(o: { market: string; seeds: readonly number[]; surplusShare: number; redisUrl: string; dir: string; workers?: number }): Promise<void> {
  for (const seed of o.seeds) {
    const run = (strategy: 'shaded' | 'oracle') => simulate({ market: MARKETS[o.market], strategy, seed, days: 1, requestsPerDay: 100_000, redisUrl: o.redisUrl, dir: o.dir, workers: o.workers });
    const shaded = await run('shaded');
    const oracle = await run('oracle');
    assert.equal(shaded.noticeErrors, 0);
    assert.ok(shaded.surplus >= o.surplusShare * oracle.surplus, `${o.market} seed ${seed}: surplus ${shaded.surplus.toFixed(3)} against the oracle's ${oracle.surplus.toFixed(3)}`);
    assert.ok(Math.abs(shaded.wins / oracle.wins - 1) <= 0.2, `${o.market} seed ${seed}: ${shaded.wins} wins against the oracle's ${oracle.wins}`);
  }
}
