import { performance } from 'node:perf_hooks';

/** How often the loop's stalls are looked for, and how late a tick must be to count as one. */
const TICK_MS = 20;
const STALL_MS = 10;

/**
 * How long a request may have waited before its handler runs (an upper bound; shedding on it errs on
 * the side of answering in time). Under overload requests wait in the socket buffers while the event
 * loop works: each loop turn reads every socket that was readable when it polled and handles what it
 * read, one after another.
 * - A request handled in turn k became readable after turn k−1 began (or it would have been read
 *   then): when turns follow each other without a pause, it has waited at most since turn k−1 began;
 *   when the loop was idle before turn k, since turn k began. A turn starts with its first request
 *   and ends in the check phase (one setImmediate per turn, none while idle).
 * - Anything else that holds the loop (a long callback, a GC pause) delays the next turn: a timer
 *   every TICK_MS notices when it runs late, and the requests read in the poll phase right after it
 *   (the same loop iteration) may have waited since the tick was due. A request read in a later
 *   iteration arrived after that poll, so the stall is forgotten at this iteration's check phase: a
 *   stall while idle is charged to nobody.
 * Not seen (bench/README.md, the HTTP layer): work of the same poll batch done before the turn's
 * first request, and time the process waits for a CPU after the kernel woke it (the run queue),
 * which the loop counts as idle.
 */
export class TurnClock {
  private inTurn = false;
  private turnStart = 0;
  private lastTurnStart = 0;
  private lastTurnEnd = -Infinity;
  /** The earliest moment the loop was found held in this loop iteration (Infinity: not held). */
  private heldSince = Infinity;
  private turnHeldSince = Infinity;
  private due = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly endTurn = (): void => {
    this.inTurn = false;
    this.lastTurnEnd = performance.now();
  };
  private readonly forgetStall = (): void => {
    this.heldSince = Infinity;
  };
  private readonly tick = (): void => {
    const now = performance.now();
    if (now - this.due > STALL_MS && this.due < this.heldSince) {
      if (this.heldSince === Infinity) setImmediate(this.forgetStall);
      this.heldSince = this.due;
    }
    this.due = now + TICK_MS;
  };

  start(): void {
    if (this.timer !== null) return;
    this.due = performance.now() + TICK_MS;
    this.timer = setInterval(this.tick, TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The earliest time a request handled now can have arrived. */
  arrivedBy(now: number): number {
    if (!this.inTurn) {
      this.inTurn = true;
      this.lastTurnStart = this.turnStart;
      this.turnStart = now;
      this.turnHeldSince = this.heldSince;
      this.heldSince = Infinity;
      setImmediate(this.endTurn);
    }
    // Busy: the last turn ended (check phase) right before this one began (timers and poll between).
    const byTurns = this.turnStart - this.lastTurnEnd < 1 ? this.lastTurnStart : this.turnStart;
    return byTurns < this.turnHeldSince ? byTurns : this.turnHeldSince;
  }
}
