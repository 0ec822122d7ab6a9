// A scrape or the cluster snapshot reads the registry's families a slice at a time: it never holds
// the event loop (and the bid requests read meanwhile) for all of them at once, and it gives what
// prom-client's registry gives in one go.
import assert from 'node:assert/strict';
import * as os from 'node:os';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { MetricsService } from '../../src/metrics/metrics.service';
import type { MetricFamily } from '../../src/metrics/scraped';

const config = (): ReturnType<typeof loadConfig> => loadConfig({ WORKER_ID: 'w-unit', LOG_SPILL_DIR: os.tmpdir() });

/**
 * This process's CPU time in ms (not wall time: the machine may be busy with other work). The
 * process's, not the thread's: on Linux getrusage's per-thread times (process.threadCpuUsage) and
 * /proc/thread-self/schedstat move in steps of a clock tick (4 ms) for a running thread, while the
 * process's (RUSAGE_SELF) bring the calling thread's count up to date first. Nothing else runs here.
 */
function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

/** Spins until this thread has used `ms` more of CPU. */
function burn(ms: number): void {
  const end = cpuMs() + ms;
  while (cpuMs() < end) {
    /* spin */
  }
}

/** Event-loop turns counted by `longestTurn`'s setImmediate chain (the turn a family was read in). */
let turn = 0;

/**
 * Runs `work` while a setImmediate chain ticks once per event-loop turn (counting `turn`); returns
 * the most CPU the process used between two ticks (the longest turn's work) and the CPU `work`
 * took in all.
 */
async function longestTurn(work: () => Promise<unknown>): Promise<{ longest: number; total: number }> {
  let running = true;
  let last = cpuMs();
  let longest = 0;
  const tick = (): void => {
    const now = cpuMs();
    if (now - last > longest) longest = now - last;
    last = now;
    turn++;
    if (running) setImmediate(tick);
  };
  setImmediate(tick);
  await new Promise((r) => setImmediate(r));
  const t0 = cpuMs();
  await work();
  const total = cpuMs() - t0;
  running = false;
  await new Promise((r) => setImmediate(r));
  return { longest, total };
}

/**
 * A family's series without their values: what must match between two readings of live process
 * figures. The active handles and resources are left out: a reading across turns sees its own
 * setImmediate among them.
 */
function shape(families: MetricFamily[]): string[] {
  return families.filter((f) => !f.name.startsWith('nodejs_active_')).map((f) => `${f.name} ${f.type} ${f.values.map((v) => JSON.stringify(Object.entries(v.labels).sort())).join(' ')}`);
}

describe('metrics collected a slice at a time', () => {
  it('no event-loop turn of a snapshot or a scrape holds more than about a slice of CPU, whatever the families cost in all', async () => {
    const m = new MetricsService(config());
    // The turn each costly family was read in, per reading.
    const readIn: number[] = [];
    try {
      // Twelve families that cost 0.4 ms of CPU each to read: 4.8 ms in all.
      for (let i = 0; i < 12; i++) {
        m.gauge(`t_costly_${i}`, 'test', 'max', [], () => {
          readIn.push(turn);
          burn(0.4);
          return [{ value: i, labels: {} }];
        });
      }
      // Once untimed: the first reading of prom-client's default families compiles their code.
      await m.snapshot();
      await m.render();
      for (const [what, work] of [
        ['snapshot', () => m.snapshot()],
        ['scrape', () => m.render()],
      ] as const) {
        readIn.length = 0;
        const { longest, total } = await longestTurn(work);
        assert.ok(total >= 4.8, `${what}: ${total.toFixed(2)} ms of CPU in all`);
        // A slice ends once COLLECT_SLICE_MS (metrics.service.ts) of wall time has gone (never less than the CPU used):
        // about two of these families (0.8 ms), plus the default ones read with them. Read in one
        // go, one turn held all twelve. Counted in families, not in CPU per turn: the process's
        // CPU also counts V8's helper threads (a turn of 5.95 ms of 15 in all on a busy machine,
        // two families' work), and a thread's own clock moves in steps of several ms here.
        const perTurn = new Map<number, number>();
        for (const t of readIn) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
        const most = Math.max(...perTurn.values());
        assert.equal(readIn.length, 12, what);
        assert.ok(most <= 3, `${what}: ${most} of the 12 costly families read in one turn (turns: ${[...perTurn.values()].join(' ')}; the longest turn ${longest.toFixed(2)} ms of CPU of ${total.toFixed(2)})`);
      }
    } finally {
      m.onApplicationShutdown();
    }
  });

  it('gives what the registry gives in one go: the same families, series and labels, the worker label on each', async () => {
    const m = new MetricsService(config());
    try {
      m.bidRequest('bid', null, 0.002);
      m.bidRequest('nobid', 'no_candidate', 0.001);
      m.bidPrice(1.25);
      m.counter('t_things_total', 'test', ['kind'], () => [{ value: 3, labels: { kind: 'x' } }]);
      const sliced = await m.snapshot();
      const whole = (await m.registry.getMetricsAsJSON()) as unknown as MetricFamily[];
      assert.deepEqual(shape(sliced), shape(whole));
      assert.ok(sliced.every((f) => f.values.every((v) => v.labels.worker === 'w-unit')));
      // The bidder's own families hold no live process figure: their values match too.
      const own = (fs: MetricFamily[]): MetricFamily[] => fs.filter((f) => f.name.startsWith('bidder_') || f.name.startsWith('t_'));
      assert.deepEqual(own(sliced), own(whole));
      // The text: the same lines for those families, the same HELP and TYPE lines for all.
      const text = await m.render();
      const registryText = await m.registry.metrics();
      const lines = (t: string, keep: (l: string) => boolean): string[] => t.split('\n').filter(keep);
      const ownLine = (l: string): boolean => l.startsWith('bidder_') || l.startsWith('t_') || / (bidder|t)_/.test(l);
      assert.deepEqual(lines(text, ownLine), lines(registryText, ownLine));
      assert.deepEqual(
        lines(text, (l) => l.startsWith('#')),
        lines(registryText, (l) => l.startsWith('#')),
      );
      assert.ok(text.endsWith('\n') && !text.endsWith('\n\n'));
      // A family removed while a reading is under way (between its slices) is left out of it.
      m.counter('t_gone_total', 'test', [], () => [{ value: 1, labels: {} }]);
      m.gauge('t_remover', 'test', 'max', [], () => {
        m.registry.removeSingleMetric('t_gone_total');
        return [{ value: 1, labels: {} }];
      });
      // Registration order: t_gone_total, then t_remover; re-register t_gone_total after t_remover.
      m.registry.removeSingleMetric('t_gone_total');
      m.counter('t_gone_total', 'test', [], () => [{ value: 1, labels: {} }]);
      const names = (await m.snapshot()).map((f) => f.name);
      assert.ok(names.includes('t_remover') && !names.includes('t_gone_total'));
      m.counter('t_gone_total', 'test', [], () => [{ value: 1, labels: {} }]);
      assert.doesNotMatch(await m.render(), /t_gone_total/);
    } finally {
      m.onApplicationShutdown();
    }
  });
});
