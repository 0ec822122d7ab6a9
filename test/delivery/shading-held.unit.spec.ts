/**
 * HeldEvents (src/delivery/shading-held.ts) alone: what it holds of a segment and of its parents of
 * level 2 and finer, what it lets go at a cutoff, decayed as the segment's counts were, and a full
 * ring letting its oldest go early. The sync's use of it: test/delivery/shading-share.unit.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { HELD_ANSWER, HELD_BID, HELD_EXACT, HELD_LOST, HELD_WON, HeldEvents } from '../../src/delivery/shading-held';
import { logNormalBins, Segment } from '../../src/delivery/shading';

const HALF_LIFE = 600_000;

/** A chain pool (0) → exchange (1) → publisher (2) → finest (3). */
function chain(): Segment[] {
  const prior = logNormalBins(1, 1.5);
  const pool = new Segment(prior, null, 0);
  const exchange = new Segment(prior, pool, 1);
  const publisher = new Segment(prior, exchange, 2);
  const finest = new Segment(prior, publisher, 3);
  return [pool, exchange, publisher, finest];
}

const sum = (a: Float32Array): number => a.reduce((n, v) => n + v, 0);

describe('HeldEvents', () => {
  it('holds an event in its segment and the parents of level 2 and finer, and lets it go at its cutoff', () => {
    const [pool, exchange, publisher, finest] = chain();
    const held = new HeldEvents(16);
    held.hold(finest, HELD_BID, 40, 0, 1_000, HALF_LIFE);
    held.hold(finest, HELD_ANSWER | HELD_LOST, 40, 0, 1_200, HALF_LIFE);
    held.hold(finest, HELD_ANSWER | HELD_WON, 41, 0, 1_300, HALF_LIFE);
    held.hold(finest, HELD_ANSWER | HELD_EXACT, 40, 37, 1_400, HALF_LIFE);
    for (const s of [publisher, finest]) {
      assert.equal(s.heldEvents, 4);
      assert.equal(s.held!.bids[40], 1);
      assert.equal(s.held!.answered[40], 2);
      assert.equal(s.held!.answered[41], 1);
      assert.equal(s.held!.lost[40], 1);
      assert.equal(s.held!.won[41], 1);
      assert.equal(s.held!.exact[37], 1);
    }
    // The shared levels hold nothing: bids alone teach them nothing.
    assert.equal(pool.held, null);
    assert.equal(exchange.held, null);
    assert.equal(held.length, 4);

    const touched: Segment[] = [];
    held.release(1_250, HALF_LIFE, (s) => touched.push(s));
    assert.equal(held.length, 2);
    assert.deepEqual(touched, [finest, publisher, finest, publisher]);
    for (const s of [publisher, finest]) {
      assert.equal(s.heldEvents, 2);
      assert.equal(s.held!.bids[40], 0);
      assert.equal(s.held!.lost[40], 0);
      assert.equal(s.held!.answered[40], 1);
      assert.equal(s.held!.won[41], 1);
    }
    held.release(Infinity, HALF_LIFE, () => undefined);
    assert.equal(held.length, 0);
    for (const s of [publisher, finest]) {
      assert.equal(s.heldEvents, 0);
      assert.equal(sum(s.held!.bids) + sum(s.held!.answered) + sum(s.held!.won) + sum(s.held!.lost) + sum(s.held!.exact), 0);
    }
  });

  it('lets go of an event at the weight the segment\'s decay left it', () => {
    const [, , , finest] = chain();
    const held = new HeldEvents(16);
    held.hold(finest, HELD_BID, 40, 0, 0, HALF_LIFE);
    held.hold(finest, HELD_BID, 40, 0, 1, HALF_LIFE);
    // The segment's counts decayed by a half-life since (updateSegment scales the held counts with its own).
    finest.at = HALF_LIFE;
    finest.held!.scale(0.5);
    held.release(0, HALF_LIFE, () => undefined);
    // One of the two, at half its weight: half of one is left.
    assert.ok(Math.abs(finest.held!.bids[40] - 0.5) < 1e-6, `${finest.held!.bids[40]}`);
  });

  it('a full ring lets its oldest go early', () => {
    const [, , , finest] = chain();
    const held = new HeldEvents(3);
    for (let t = 0; t < 5; t++) held.hold(finest, HELD_BID, 40 + t, 0, t, HALF_LIFE);
    assert.equal(held.length, 3);
    assert.deepEqual(Array.from(finest.held!.bids.subarray(40, 45)), [0, 0, 1, 1, 1]);
    held.release(3, HALF_LIFE, () => undefined);
    assert.equal(held.length, 1);
    assert.deepEqual(Array.from(finest.held!.bids.subarray(40, 45)), [0, 0, 0, 0, 1]);
  });

  it('lets go of at most `max` events a call, and says whether some due are left', () => {
    const [, , , finest] = chain();
    const held = new HeldEvents(16);
    for (let t = 0; t < 5; t++) held.hold(finest, HELD_BID, 40, 0, t, HALF_LIFE);
    assert.equal(held.release(3, HALF_LIFE, () => undefined, 2), true);
    assert.equal(held.length, 3);
    assert.equal(held.release(3, HALF_LIFE, () => undefined, 2), false);
    assert.equal(held.length, 1);
    assert.equal(held.release(3, HALF_LIFE, () => undefined, 2), false);
    assert.equal(held.length, 1);
  });

  it('holds nothing of a segment coarser than level 2', () => {
    const [, exchange] = chain();
    const held = new HeldEvents(4);
    held.hold(exchange, HELD_BID, 40, 0, 0, HALF_LIFE);
    assert.equal(held.length, 0);
    assert.equal(exchange.held, null);
  });
});
