import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';

/** How often the loop's stalls are looked for, and how late a tick must be to count as one. */
const TICK_MS = 20;
const STALL_MS = 10;
/** The shortest idle gap before a turn for which the run queue is read (a wait is never longer than the gap). */
const RUN_QUEUE_GAP_MS = 5;

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
 *   (the same loop iteration) may have waited since the tick was due, or since the last turn began
 *   when that was later (that turn read what had come by then). A request read in a later
 *   iteration arrived after that poll, so the stall is forgotten at this iteration's check phase: a
 *   stall while idle is charged to nobody.
 * - A turn that follows an idle loop began when the thread got a CPU, which can be well after the
 *   kernel woke it for the request: on a busy host the thread waits in the run queue, and the loop
 *   counts that wait as idle. Where the kernel says how long the thread has waited for a CPU
 *   (Linux: /proc/thread-self/schedstat), a turn after an idle gap of RUN_QUEUE_GAP_MS or more is
 *   charged the wait accrued since the last reading, at most the gap (the thread cannot have
 *   waited longer than it looked idle). The stall timer takes a reading on each tick, so a reading
 *   costs ~2-6 µs at most 50 times a second plus once per such gap; a shorter gap is not read, so a
 *   wait under RUN_QUEUE_GAP_MS is not seen (bench/README.md has the cost of reading every turn).
 * Not seen (bench/README.md, the HTTP layer): work of the same poll batch done before the turn's
 * first request.
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
  /** The last reading of the run-queue clock (ms, cumulative). */
  private queued: number;
  /** When the thread became runnable for this turn, by the run-queue wait (Infinity: not known, or no idle gap). */
  private turnWokeAt = Infinity;
  private readonly endTurn = (): void => {
    this.inTurn = false;
    this.lastTurnEnd = performance.now();
  };
  private readonly forgetStall = (): void => {
    this.heldSince = Infinity;
  };
  private readonly tick = (): void => {
    const now = performance.now();
    // A turn that began after the tick was due read every request that had arrived by then (and
    // was charged its own wait): what is read from here on arrived after that turn began. That
    // happens when the loop wakes from an idle wait for a CPU: the poll phase runs before the
    // overdue timer.
    const since = this.turnStart > this.due ? this.turnStart : this.due;
    if (now - this.due > STALL_MS && since < this.heldSince) {
      if (this.heldSince === Infinity) setImmediate(this.forgetStall);
      this.heldSince = since;
    }
    this.due = now + TICK_MS;
    if (this.runQueue !== null) this.queued = this.runQueue();
  };

  /** `runQueue`: the main thread's cumulative wait for a CPU in ms (null: not known, e.g. not Linux). */
  constructor(private readonly runQueue: RunQueueClock | null = procRunQueueClock()) {
    this.queued = runQueue === null ? 0 : runQueue();
  }

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
      this.turnWokeAt = Infinity;
      // After an idle gap: the thread may have waited for a CPU since the kernel woke it.
      const gap = now - this.lastTurnEnd;
      if (this.runQueue !== null && gap >= RUN_QUEUE_GAP_MS) {
        const queued = this.runQueue();
        const waited = Math.min(queued - this.queued, gap);
        this.queued = queued;
        if (waited > 0) this.turnWokeAt = now - waited;
      }
      setImmediate(this.endTurn);
    }
    // Busy: the last turn ended (check phase) right before this one began (timers and poll between).
    let by = this.turnStart - this.lastTurnEnd < 1 ? this.lastTurnStart : this.turnStart;
    if (this.turnWokeAt < by) by = this.turnWokeAt;
    return by < this.turnHeldSince ? by : this.turnHeldSince;
  }
}

/** A thread's cumulative wait for a CPU, in milliseconds. */
export type RunQueueClock = () => number;

/**
 * The calling thread's run-queue wait from /proc/thread-self/schedstat (its second field, in ns),
 * read through a descriptor kept open (one pread, ~2 µs); null where the file cannot be read.
 * Opened by the thread it measures: /proc/thread-self names the thread that opens it.
 */
export function procRunQueueClock(): RunQueueClock | null {
  let fd: number;
  try {
    fd = fs.openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return null;
  }
  const buf = Buffer.alloc(96);
  const parse = (): number => {
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    let i = 0;
    while (i < n && buf[i] !== 0x20) i++;
    if (i >= n) throw new Error('unexpected schedstat');
    let ns = 0;
    for (i++; i < n; i++) {
      const d = buf[i] - 0x30;
      if (d < 0 || d > 9) break;
      ns = ns * 10 + d;
    }
    return ns / 1e6;
  };
  let last: number;
  try {
    last = parse();
  } catch {
    fs.closeSync(fd);
    return null;
  }
  // A read that fails later (it should not) counts as no wait: shedding falls back to the turns alone.
  return () => {
    try {
      last = parse();
    } catch {
      /* keep the last reading */
    }
    return last;
  };
}
