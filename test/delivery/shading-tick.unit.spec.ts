/**
 * How often ShadingService's tick re-estimates a segment (unit test, no Redis): a publisher's segment
 * (publisher, publisher × floor) at most once per MIN_UPDATE_MS of the service's clock, with everything
 * learned meanwhile, unless it is new or a notice told it an exact price to win; the finest segments
 * (and the exchange's and the pool) at every tick they learned something. A segment's `at` is the time of
 * its last update.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import { Clock } from '../../src/delivery/clock';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import type { Segment } from '../../src/delivery/shading';
import { floorBucket, MIN_UPDATE_MS, segmentKey, ShadingService, TICK_BUDGET_MS } from '../../src/delivery/shading.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate } from '../../src/targeting/types';
import { MemoryShadingRepository } from '../support/fake-stores';

const START = Date.UTC(2026, 10, 28, 9, 30);
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;

function setup(learnPerS = 1000): { s: ShadingService; at: (key: string) => number; weight: (key: string) => number; win: (publisher: string, minToWin?: number, deviceType?: number) => void; tickAt: (ms: number) => void } {
  let now = START;
  const clock = new Clock();
  clock.now = () => now;
  const random = new Random();
  random.next = () => 0.5;
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: learnPerS, shadingHalfLifeMs: 600_000 } as unknown as Config;
  const store = { current: () => ({ get: (crid: string) => (crid === 'cr-banner' ? banner : undefined) }) } as unknown as CampaignStore;
  const s = new ShadingService(config, new MemoryShadingRepository(), store, random, clock);
  // The notices' segment (device type 2, the floor's bucket), as a shaded bid's `sd` names it; no bid is priced (its silent loss would weigh too).
  const sd = 2 + 16 * floorBucket(0.05);
  const segments = (s as unknown as { segments: Map<string, Segment> }).segments;
  const seg = (key: string): Segment => {
    const found = segments.get(key);
    assert.ok(found !== undefined, `segment ${key}`);
    return found;
  };
  let id = 0;
  return {
    s,
    at: (key) => seg(key).at,
    weight: (key) => seg(key).weight,
    win: (publisher, minToWin, deviceType = 2) => {
      const p: NoticedBid = { bidId: `b-${id++}`, cid: 'c1', crid: 'cr-banner', price: 1, cur: 'USD', ts: now, publisher, source: 0 };
      s.learn('win', p, 1, minToWin ?? null, deviceType === 2 ? sd : deviceType + 16 * floorBucket(0.05), null);
    },
    tickAt: (ms) => {
      now = START + ms;
      s.tick();
    },
  };
}

const FINE = segmentKey(0, 'pub-a', '300x250', 2, floorBucket(0.05));
const PUBLISHER = 'p|0|pub-a';
const FLOOR = `pf|0|pub-a|${floorBucket(0.05)}`;

describe('shading tick: how often a segment is re-estimated', () => {
  it("a publisher's segment touched by a notice at every tick within MIN_UPDATE_MS is re-estimated once, then with all of them; the finest at every tick", () => {
    const t = setup();
    t.win('pub-a');
    t.tickAt(100);
    // New: estimated at once.
    assert.equal(t.at(PUBLISHER), START + 100);
    assert.equal(t.at(FLOOR), START + 100);
    assert.ok(Math.abs(t.weight(PUBLISHER) - 1) < 1e-3, `weight ${t.weight(PUBLISHER)}`);
    for (let ms = 200; ms < 100 + MIN_UPDATE_MS; ms += 100) {
      t.win('pub-a');
      t.tickAt(ms);
      assert.equal(t.at(PUBLISHER), START + 100, `publisher level at ${ms} ms`);
      assert.equal(t.at(FLOOR), START + 100, `publisher × floor level at ${ms} ms`);
      assert.equal(t.at(FINE), START + ms, `finest level at ${ms} ms`);
    }
    // Nothing new at this tick, but still dirty: updated now, with the 9 notices held back.
    t.tickAt(100 + MIN_UPDATE_MS);
    assert.equal(t.at(PUBLISHER), START + 100 + MIN_UPDATE_MS);
    assert.equal(t.at(FLOOR), START + 100 + MIN_UPDATE_MS);
    assert.ok(Math.abs(t.weight(PUBLISHER) - 10) < 0.05, `weight ${t.weight(PUBLISHER)}`);
    // Clean: not updated again.
    t.tickAt(200 + 2 * MIN_UPDATE_MS);
    assert.equal(t.at(PUBLISHER), START + 100 + MIN_UPDATE_MS);
  });

  it('a notice with an exact price to win, or a new segment, is estimated at the next tick', () => {
    const t = setup();
    t.win('pub-a');
    t.tickAt(100);
    t.win('pub-a');
    t.tickAt(200);
    assert.equal(t.at(PUBLISHER), START + 100);
    // An exact price: every level of its chain at once, with what they held back.
    t.win('pub-a', 0.8);
    t.tickAt(300);
    assert.equal(t.at(PUBLISHER), START + 300);
    assert.equal(t.at(FLOOR), START + 300);
    assert.ok(Math.abs(t.weight(PUBLISHER) - 3) < 0.01, `weight ${t.weight(PUBLISHER)}`);
    // Held again after it.
    t.win('pub-a');
    t.tickAt(400);
    assert.equal(t.at(PUBLISHER), START + 300);
    // A new publisher: its segments at once.
    t.win('pub-b');
    t.tickAt(500);
    assert.equal(t.at('p|0|pub-b'), START + 500);
    assert.equal(t.at(`pf|0|pub-b|${floorBucket(0.05)}`), START + 500);
    assert.equal(t.at(PUBLISHER), START + 300);
  });

  it('a tick updates for at most TICK_BUDGET_MS of wall time, coarse levels first; the rest at the next ticks', () => {
    // 500 publishers × 4 device types: 2,000 finest segments, 500 publisher and 500 publisher × floor
    // segments, the exchange's and the pool, all dirty at once (as after a burst of notices); a
    // tick used to update them all in one turn of the event loop (tens of ms).
    const t = setup(1e9);
    const fine = (p: number, d: number): string => segmentKey(0, `pub-${p}`, '300x250', d, floorBucket(0.05));
    for (let p = 0; p < 500; p++) for (let d = 1; d <= 4; d++) t.win(`pub-${p}`, undefined, d);
    const walls: number[] = [];
    let ticks = 0;
    let updated = 0;
    while (t.s.backlog() > 0 && ticks < 1000) {
      const before = t.s.backlog();
      const t0 = performance.now();
      t.tickAt(100 * ++ticks);
      walls.push(performance.now() - t0);
      assert.ok(t.s.backlog() < before, `progress at tick ${ticks}`);
      updated = 0;
      for (let p = 0; p < 500; p++) for (let d = 1; d <= 4; d++) if (!Number.isNaN(t.at(fine(p, d)))) updated++;
      // Coarse levels first: a finest segment is updated only after every publisher's levels were.
      if (updated > 0) for (let p = 0; p < 500; p++) assert.ok(!Number.isNaN(t.at(`p|0|pub-${p}`)) && !Number.isNaN(t.at(`pf|0|pub-${p}|${floorBucket(0.05)}`)), `publisher ${p} before the finest`);
    }
    walls.sort((a, b) => a - b);
    const median = walls[Math.floor(walls.length / 2)];
    console.log(`3,002 dirty segments: ${ticks} ticks, wall per tick median ${median.toFixed(2)} ms, longest ${walls[walls.length - 1].toFixed(2)} ms; ticks cut ${t.s.stats.ticksCut}`);
    assert.equal(updated, 2000);
    assert.ok(ticks > 1 && t.s.stats.ticksCut === ticks - 1, `${ticks} ticks, ${t.s.stats.ticksCut} cut`);
    // Wall time, on a machine that may be running other tests: the median, with 2 ms of slack for a
    // process the system preempted (3.2 ms with two simulations running beside it; one tick of all
    // 3,002 took 24.5 ms before the bound). Its CPU time is no better a measure here: the thread's
    // clock of this machine's VMs advances in steps of several ms.
    assert.ok(median < TICK_BUDGET_MS + 2, `median tick ${median} ms`);
  });

  it('without a budget (the simulator: the same run on any machine) a tick updates every dirty segment', () => {
    const t = setup(1e9);
    t.s.tickBudgetMs = Infinity;
    for (let p = 0; p < 500; p++) for (let d = 1; d <= 4; d++) t.win(`pub-${p}`, undefined, d);
    t.tickAt(100);
    assert.equal(t.s.backlog(), 0);
    assert.equal(t.s.stats.ticksCut, 0);
  });

  it('a segment told an exact price is still due at the tick after one cut before it', () => {
    const t = setup(1e9);
    t.win('pub-a');
    t.tickAt(100);
    // pub-a's publisher segment is held (MIN_UPDATE_MS) unless told an exact price: it is, after
    // 2,000 other segments were made dirty, so its turn comes after many cuts (16 segments a tick
    // with no time to spend), all at the same time of the service's clock.
    for (let p = 0; p < 500; p++) for (let d = 1; d <= 4; d++) t.win(`pub-${p}`, undefined, d);
    t.win('pub-a', 0.8);
    t.s.tickBudgetMs = 0;
    for (let i = 0; i < 1000 && t.s.backlog() > 0; i++) t.tickAt(200);
    assert.ok(t.s.stats.ticksCut > 100, `${t.s.stats.ticksCut} ticks cut`);
    assert.equal(t.at(PUBLISHER), START + 200);
    assert.ok(Math.abs(t.weight(PUBLISHER) - 2) < 0.01, `weight ${t.weight(PUBLISHER)}`);
    assert.equal(t.s.backlog(), 0);
  });
});
