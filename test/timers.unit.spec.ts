// A worker's periodic jobs start at a random phase of their period (src/timers.ts), so that jobs
// whose timers all start at boot do not fire in the same turns every period.
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { staggeredInterval } from '../src/timers';

describe('staggeredInterval', () => {
  it('runs first after the drawn part of the period, then every period, until stopped', () => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    try {
      const at: number[] = [];
      let now = 0;
      const p = staggeredInterval(() => at.push(now), 1000, () => 0.25);
      const advance = (ms: number): void => {
        for (let i = 0; i < ms; i += 50) {
          now += 50;
          mock.timers.tick(50);
        }
      };
      advance(200);
      assert.deepEqual(at, []);
      advance(3200);
      assert.deepEqual(at, [250, 1250, 2250, 3250]);
      p.stop();
      advance(3000);
      assert.equal(at.length, 4);
    } finally {
      mock.timers.reset();
    }
  });

  it('two jobs of the same period started together fire apart, never later than a period after the start', () => {
    mock.timers.enable({ apis: ['setTimeout', 'setInterval'] });
    try {
      const fired: Array<[string, number]> = [];
      let now = 0;
      const draws = [0.1, 0.6];
      const a = staggeredInterval(() => fired.push(['a', now]), 5000, () => draws[0]);
      const b = staggeredInterval(() => fired.push(['b', now]), 5000, () => draws[1]);
      for (let t = 0; t < 15_000; t += 100) {
        now += 100;
        mock.timers.tick(100);
      }
      assert.deepEqual(
        fired.filter(([k]) => k === 'a').map(([, t]) => t),
        [500, 5500, 10500],
      );
      assert.deepEqual(
        fired.filter(([k]) => k === 'b').map(([, t]) => t),
        [3000, 8000, 13000],
      );
      a.stop();
      b.stop();
      // A draw of 1 (or more) waits the whole period, no more; a stop before the first run cancels it.
      let runs = 0;
      const c = staggeredInterval(() => runs++, 1000, () => 7);
      mock.timers.tick(999);
      assert.equal(runs, 0);
      mock.timers.tick(1);
      assert.equal(runs, 1);
      c.stop();
      let ran = false;
      const d = staggeredInterval(() => (ran = true), 1000, () => 0.5);
      d.stop();
      mock.timers.tick(2000);
      assert.equal(ran, false);
    } finally {
      mock.timers.reset();
    }
  });
});
