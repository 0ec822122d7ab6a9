/**
 * The window of unbilled bids (src/delivery/spend.service.ts, CampaignBudget): per source, and
 * releases that are never unsafe. A release (a loss notice, a bill) may only take a bid's cost from
 * the tick the bid fell in or an older one: a younger tick leaves the window later than the bid's
 * own, and in between the cost would be counted nowhere.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CampaignBudget } from '../../src/delivery/spend.service';

const TICK = 250;

/** A budget of 4 ticks and 3 sources whose ticks began at 0, 250, 500, 750; the current one at 1000. */
function budget(): CampaignBudget {
  const b = new CampaignBudget(100, 100, 4, 3);
  for (let t = 0; t <= 1000; t += TICK) {
    // Each tick: source 1 commits 1 at its start + 10 ms (the slide at `t` closes the tick before).
    if (t > 0) b.slide(t);
    b.current += 1;
    b.sourceCurrent[1] += 1;
  }
  return b;
}

describe('the window of unbilled bids', () => {
  it('counts per source alongside the total, and forgets both as ticks leave', () => {
    const b = budget();
    assert.equal(b.sum, 4); // the ticks of 0, 250, 500, 750 (the one of 1000 is current)
    assert.equal(b.sourceSum[1], 4);
    assert.equal(b.current, 1);
    b.slide(1250);
    assert.equal(b.sum, 4, 'the tick of 0 left, the one of 1000 joined');
    assert.equal(b.sourceSum[1], 4);
    assert.equal(b.sourceSum[0] + b.sourceSum[2], 0);
  });

  it("takes a released bid's cost from its own tick, then older ones, never from a younger one", () => {
    const b = budget();
    // A bid of 2 made at 510 (the tick of 500 holds only 1): 1 from that tick, 1 from the tick of 250.
    assert.equal(b.release(2, 510, 1), 2);
    assert.equal(b.sum, 2);
    assert.equal(b.sourceSum[1], 2);
    assert.equal(b.current, 1, 'the current (younger) tick is untouched');
    // Of what is left, the ticks of 0 and 750: a bid of 5 at 260 finds only the tick of 0 (750 is younger).
    assert.equal(b.release(5, 260, 1), 1);
    assert.equal(b.sum, 1);
  });

  it('takes nothing for a bid older than the window, and the current tick for a bid made in it', () => {
    const b = budget();
    b.slide(1250);
    b.slide(1500); // the ticks of 500, 750, 1000, 1250 are in the window; the one of 0 and 250 left
    assert.equal(b.release(1, 100, 1), 0, 'its tick has left');
    assert.equal(b.sum, 3);
    b.current += 1;
    b.sourceCurrent[2] += 1;
    assert.equal(b.release(1, 1510, 2), 1);
    assert.equal(b.current, 0);
    assert.equal(b.sourceCurrent[2], 0);
  });

  it("keeps a bid of another worker, which it cannot take, as a credit that leaves two ticks before the bid's own", () => {
    // Nothing committed here: ticks began at 0, 250, 500, 750; the current one at 1000.
    const b = new CampaignBudget(100, 100, 4, 1);
    for (let t = TICK; t <= 1000; t += TICK) b.slide(t);
    // Another worker's bid of 1 made at 1010 (in its tick that began at 1000 or up to one tick before), billed here.
    assert.equal(b.release(1, 1010, 0), 0, 'nothing of its own to take');
    assert.equal(b.held(), -1, 'the sum over workers stays the bids not yet answered');
    // A bid of this worker made later is committed and counted on top of the credit.
    b.current += 2;
    assert.equal(b.held(), 1);
    b.slide(1250);
    b.slide(1500);
    assert.equal(b.held(), 1, 'the credit (in the tick of 500) is still in the window');
    b.slide(1750);
    assert.equal(b.held(), 2, 'the credit left at 1750; the bid it stands for leaves the other window at 2250 at the earliest');
    // A credit never lets a release take more than a tick holds: what is taken is what was committed.
    assert.equal(b.release(5, 1010, 0), 2);
    assert.equal(b.release(1, 100, 0), 0, 'a bid older than the window gives no credit either');
    assert.equal(b.held(), 0, 'the 3 not taken at 1010 are no credit: no tick two older than the bid\'s is left in the window (the safe side)');
  });
});
