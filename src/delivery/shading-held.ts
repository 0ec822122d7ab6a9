/**
 * With several workers, what a worker learns of an exchange whose wins come late (its unanswered bids
 * are wins) after the other workers' last shared state, held out of its own estimates until a sync
 * reads a state of theirs at least as recent. Pure: no I/O, no clock. (Exchanges without loss notices
 * are not held: their bids are their only sign of losses, and holding them cost more than it mended;
 * docs/bidding.md.)
 *
 * Why: a segment's unanswered bids are its bids less its answered ones, summed over the workers
 * (shading.ts). A notice reaches any worker, and each worker reads the others' counts as they were
 * at their last sync. Counted at once, a worker's own latest bids answered on another worker read as
 * unanswered, and the answers it receives to the other workers' latest bids as answered before those
 * bids reach it: with two workers bidding different grid prices each read its own price as cheaper
 * and the other's as dearer than they were, and stayed apart (simulator, late-bills, seed 3: 84.9 %
 * of the oracle's surplus). Held until then, what a worker adds to the others' state is what it had
 * learned by the time they wrote it: one consistent picture, as one worker alone has.
 *
 * A segment's held counts (`Segment.held`, levels ≥ 2: those whose unanswered bids teach) are part of
 * its own counts (still shared at once) and are subtracted from them in its estimate. Events are kept
 * in a ring, oldest first; a full ring lets its oldest go early.
 */
import { Counts, type Segment } from './shading';

/** What an event counted: its bid, its answer, and what the answer taught (a win, a loss, a price to win). */
export const HELD_BID = 1;
export const HELD_ANSWER = 2;
export const HELD_WON = 4;
export const HELD_LOST = 8;
export const HELD_EXACT = 16;

/** The first level whose unanswered bids teach (ShadingService: bids alone must not teach the shared levels). */
const FIRST_LEVEL = 2;

export class HeldEvents {
  private readonly segments: Array<Segment | null>;
  private readonly at: Float64Array;
  private readonly what: Uint8Array;
  private readonly grid: Int16Array;
  private readonly bin: Int16Array;
  private head = 0;
  private size = 0;

  /** `capacity`: events at most (two syncs of a busy worker's bids and notices). */
  constructor(private readonly capacity = 1 << 17) {
    this.segments = new Array<Segment | null>(capacity).fill(null);
    this.at = new Float64Array(capacity);
    this.what = new Uint8Array(capacity);
    this.grid = new Int16Array(capacity);
    this.bin = new Int16Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  /**
   * Holds an event of the finest segment `seg` (its parents of level ≥ 2 too): `what` HELD_* bits,
   * `j` the bid's grid index, `k` the price to win's bin (HELD_EXACT), `now` the service's clock.
   */
  hold(seg: Segment, what: number, j: number, k: number, now: number, halfLifeMs: number): void {
    if (seg.level < FIRST_LEVEL) return;
    if (this.size === this.capacity) this.releaseOldest(halfLifeMs, null);
    for (let t: Segment | null = seg; t !== null && t.level >= FIRST_LEVEL; t = t.parent) {
      const h = (t.held ??= new Counts());
      t.heldEvents++;
      if (what & HELD_BID) h.bids[j]++;
      if (what & HELD_ANSWER) h.answered[j]++;
      if (what & HELD_WON) h.won[j]++;
      if (what & HELD_LOST) h.lost[j]++;
      if (what & HELD_EXACT) h.exact[k]++;
    }
    const i = (this.head + this.size) % this.capacity;
    this.segments[i] = seg;
    this.at[i] = now;
    this.what[i] = what;
    this.grid[i] = j;
    this.bin[i] = k;
    this.size++;
  }

  /**
   * Lets go of the events held from `cutoff` (ms) back, at most `max` of them: their segments'
   * estimates count them from now on. `touched` is told each segment whose held counts changed.
   * Returns whether some from `cutoff` back are still held (the caller lets the event loop turn
   * between calls: 60,000 events took 11 ms at once).
   */
  release(cutoff: number, halfLifeMs: number, touched: (s: Segment) => void, max = Infinity): boolean {
    for (let n = 0; n < max && this.size > 0 && this.at[this.head] <= cutoff; n++) this.releaseOldest(halfLifeMs, touched);
    return this.size > 0 && this.at[this.head] <= cutoff;
  }

  private releaseOldest(halfLifeMs: number, touched: ((s: Segment) => void) | null): void {
    const i = this.head;
    const seg = this.segments[i]!;
    const at = this.at[i];
    const what = this.what[i];
    const j = this.grid[i];
    const k = this.bin[i];
    this.segments[i] = null;
    this.head = (i + 1) % this.capacity;
    this.size--;
    for (let t: Segment | null = seg; t !== null && t.level >= FIRST_LEVEL; t = t.parent) {
      const h = t.held;
      if (h === null) continue;
      if (--t.heldEvents <= 0) {
        // The last one: what is left is rounding of the decay (below), cleared.
        t.heldEvents = 0;
        h.scale(0);
      } else {
        // The event's weight as the segment's counts decayed it (updateSegment scales the held counts with them).
        const w = t.at > at ? Math.pow(0.5, (t.at - at) / halfLifeMs) : 1;
        if (what & HELD_BID) h.bids[j] = Math.max(0, h.bids[j] - w);
        if (what & HELD_ANSWER) h.answered[j] = Math.max(0, h.answered[j] - w);
        if (what & HELD_WON) h.won[j] = Math.max(0, h.won[j] - w);
        if (what & HELD_LOST) h.lost[j] = Math.max(0, h.lost[j] - w);
        if (what & HELD_EXACT) h.exact[k] = Math.max(0, h.exact[k] - w);
      }
      touched?.(t);
    }
  }
}
