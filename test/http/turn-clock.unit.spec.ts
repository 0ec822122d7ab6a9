// The turn clock's bound on when a request arrived, with a run-queue clock the test drives: a turn
// that follows an idle loop is charged the wait for a CPU accrued since the last turn ended.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { describe, it } from 'node:test';
import { procRunQueueClock, TurnClock } from '../../src/http/turn-clock';

/** Lets the turn end (its check-phase callback runs), then the loop idle for `ms`. */
async function nextTurn(ms = 30): Promise<void> {
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setTimeout(r, ms));
}

describe('TurnClock and the run queue', () => {
  it('charges a turn after an idle gap with the wait for a CPU since the last reading', async () => {
    let queued = 100;
    const clock = new TurnClock(() => queued);
    clock.arrivedBy(performance.now());
    await nextTurn(); // 30 ms idle, of which the thread waited 20 for a CPU before its next turn
    queued += 20;
    const now = performance.now();
    assert.equal(clock.arrivedBy(now), now - 20);
    assert.equal(clock.arrivedBy(now + 1), now - 20, 'every request of that turn');
    await nextTurn();
    const later = performance.now();
    assert.equal(clock.arrivedBy(later), later, 'no wait since: the turn itself');
  });

  it('charges at most the idle gap (the thread cannot have waited longer than it looked idle)', async () => {
    let queued = 0;
    const clock = new TurnClock(() => queued);
    clock.arrivedBy(performance.now());
    await new Promise((r) => setImmediate(r));
    const ended = performance.now();
    await nextTurn(10);
    queued += 500; // e.g. waits of the turn before, while it was busy: already in its wall-clock time
    const now = performance.now();
    const by = clock.arrivedBy(now);
    assert.ok(by >= ended - 1 && by < now - 9, `${now - by} ms charged after ${now - ended} ms idle`);
  });

  it('reads nothing after a gap shorter than 5 ms (a wait is never longer than the gap)', async () => {
    let reads = 0;
    const clock = new TurnClock(() => {
      reads++;
      return 0;
    });
    clock.arrivedBy(performance.now());
    const before = reads;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setImmediate(r));
      clock.arrivedBy(performance.now());
    }
    assert.equal(reads, before);
  });

  // The loop slept in epoll_wait while its thread waited for a CPU: on waking it runs the poll
  // phase first (that turn is charged the wait by the run-queue clock), and the stall timer, overdue
  // by the same wait, runs only in the next iteration. A request read in that iteration's poll phase
  // arrived after the charged turn began, not when the timer was due.
  it('does not charge the wait a turn after an idle gap was charged to the requests read after that turn', async () => {
    let queued = 0;
    const clock = new TurnClock(() => queued);
    clock.start();
    try {
      clock.arrivedBy(performance.now());
      await nextTurn(10);
      const { held, after } = await new Promise<{ held: { now: number; by: number }; after: { now: number; by: number } }>((resolve, reject) => {
        // An I/O callback (the poll phase), as a request's read is.
        fs.access(__filename, () => {
          const t0 = performance.now();
          while (performance.now() - t0 < 60); // the wait for a CPU, past two of the timer's ticks
          queued += 60;
          const now = performance.now();
          const held = { now, by: clock.arrivedBy(now) };
          // The next request's read completes in the next iteration's poll phase, after its timers.
          fs.access(__filename, (e) => {
            if (e) return reject(e);
            const later = performance.now();
            resolve({ held, after: { now: later, by: clock.arrivedBy(later) } });
          });
        });
      });
      assert.ok(held.now - held.by >= 59, `the turn after the wait is charged it: ${(held.now - held.by).toFixed(1)} ms`);
      assert.ok(after.by >= held.now - 1, `the request read after that turn arrived after it began: charged ${(after.now - after.by).toFixed(1)} ms`);
    } finally {
      clock.stop();
    }
  });

  it('without a run-queue clock, a turn after an idle loop starts its own bound', async () => {
    const clock = new TurnClock(null);
    clock.arrivedBy(performance.now());
    await nextTurn();
    const now = performance.now();
    assert.equal(clock.arrivedBy(now), now);
  });

  it('reads this thread’s wait from /proc/thread-self/schedstat on Linux', { skip: process.platform !== 'linux' }, () => {
    const rq = procRunQueueClock();
    assert.ok(rq !== null, 'the file can be read');
    const a = rq();
    const b = rq();
    assert.ok(Number.isFinite(a) && a >= 0, `${a}`);
    assert.ok(b >= a, 'cumulative');
  });
});
