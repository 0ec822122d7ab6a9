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
import { floorBucket, MIN_UPDATE_MS, segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate } from '../../src/targeting/types';
import { MemoryShadingRepository } from '../support/fake-stores';

const START = Date.UTC(2026, 10, 28, 9, 30);
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;

function setup(): { s: ShadingService; at: (key: string) => number; weight: (key: string) => number; win: (publisher: string, minToWin?: number) => void; tickAt: (ms: number) => void } {
  let now = START;
  const clock = new Clock();
  clock.now = () => now;
  const random = new Random();
  random.next = () => 0.5;
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 1000, shadingHalfLifeMs: 600_000 } as unknown as Config;
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
    win: (publisher, minToWin) => {
      const p: NoticedBid = { bidId: `b-${id++}`, cid: 'c1', crid: 'cr-banner', price: 1, cur: 'USD', ts: now, publisher, source: 0 };
      s.learn('win', p, 1, minToWin ?? null, sd, null);
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
});
