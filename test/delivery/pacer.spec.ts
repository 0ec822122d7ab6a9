/**
 * The pacing controller on known markets: a deterministic plant where spend rate = share × k(t),
 * billed with a delay, refreshed every second of a virtual day.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localDay } from '../../src/delivery/local-day';
import { DEFAULT_PACE, PaceController } from '../../src/delivery/pacer';

const DAY0 = Date.UTC(2026, 0, 5);
const H = 3_600_000;

interface Run { hourly: number[]; targetHourly: number[]; total: number; maxOver: number }

/** Runs one day from `startMs` (ms after midnight); k(t): USD/ms at share 1; bills arrive `delayMs` after their spend. */
function run(budget: number, k: (t: number) => number, startMs = 0, delayMs = 2_000, stepMs = 1_000): Run {
  const pc = new PaceController(DEFAULT_PACE);
  const day = localDay(DAY0, 'UTC');
  const pending: Array<{ at: number; usd: number }> = [];
  let billed = 0;
  let committed = 0;
  const hourly = new Array<number>(24).fill(0);
  let maxOver = 0;
  for (let t = DAY0 + startMs; t < day.end; t += stepMs) {
    while (pending.length > 0 && pending[0].at <= t) billed += pending.shift()!.usd;
    const share = pc.update(t, day, billed, budget);
    // The budget lease's role: never commit past the budget.
    const usd = Math.min(share * k(t) * stepMs, budget - committed);
    committed += usd;
    hourly[Math.floor((t - DAY0) / H)] += usd;
    pending.push({ at: t + delayMs, usd });
    maxOver = Math.max(maxOver, committed - budget);
  }
  const targetHourly = hourly.map((_, h) => {
    const from = Math.max(DAY0 + h * H, DAY0 + startMs);
    const to = Math.min(DAY0 + (h + 1) * H, day.end - DEFAULT_PACE.endMarginMs);
    const span = day.end - DEFAULT_PACE.endMarginMs - (DAY0 + startMs);
    return to > from ? (budget * (to - from)) / span : 0;
  });
  return { hourly, targetHourly, total: committed, maxOver };
}

function assertOnCurve(r: Run, budget: number, fromHour: number): void {
  for (let h = fromHour; h < 24; h++) {
    const err = Math.abs(r.hourly[h] - r.targetHourly[h]) / r.targetHourly[h];
    assert.ok(err <= 0.1, `hour ${h}: spent ${r.hourly[h].toFixed(3)} against ${r.targetHourly[h].toFixed(3)} (${(err * 100).toFixed(1)} %)`);
  }
  assert.ok(r.total >= 0.95 * budget && r.total <= budget + 1e-9, `day: ${r.total} of ${budget}`);
  assert.ok(r.maxOver <= 1e-9);
}

describe('pacing controller', () => {
  it('a constant market 50x larger than the budget: every hour after the first within 10 % of the curve', () => {
    const budget = 240;
    const r = run(budget, () => (50 * budget) / (24 * H));
    assertOnCurve(r, budget, 1);
  });

  it('a market that triples at noon and halves at 18:00: back on the curve within the hour', () => {
    const budget = 240;
    const base = (20 * budget) / (24 * H);
    const r = run(budget, (t) => ((t - DAY0) < 12 * H ? base : (t - DAY0) < 18 * H ? 3 * base : 1.5 * base));
    assertOnCurve(r, budget, 1);
  });

  it('a campaign first seen at 15:00 spreads its whole budget over the rest of the day, no burst', () => {
    const budget = 90;
    const r = run(budget, () => (100 * budget) / (24 * H), 15 * H);
    for (let h = 0; h < 15; h++) assert.equal(r.hourly[h], 0);
    assertOnCurve(r, budget, 16);
    // The first hour: no catch-up of the hours gone, no burst while the controller learns.
    assert.ok(r.hourly[15] <= r.targetHourly[15] * 1.1, `first hour ${r.hourly[15]} against ${r.targetHourly[15]}`);
  });

  it('a market too small for the budget: enters every request, spends what it can', () => {
    const budget = 240;
    const r = run(budget, () => (0.5 * budget) / (24 * H));
    assert.ok(r.total > 0.49 * budget && r.total < 0.51 * budget, `${r.total}`);
  });
});

describe('local day', () => {
  it('follows the zone, with 23- and 25-hour days', () => {
    const paris = localDay(Date.parse('2026-03-29T12:00:00Z'), 'Europe/Paris');
    assert.deepEqual([paris.day, new Date(paris.start).toISOString(), (paris.end - paris.start) / H], ['20260329', '2026-03-28T23:00:00.000Z', 23]);
    const ny = localDay(Date.parse('2026-11-01T12:00:00Z'), 'America/New_York');
    assert.deepEqual([ny.day, new Date(ny.start).toISOString(), (ny.end - ny.start) / H], ['20261101', '2026-11-01T04:00:00.000Z', 25]);
    const utc = localDay(Date.parse('2026-11-26T23:59:59Z'), 'UTC');
    assert.deepEqual([utc.day, new Date(utc.end).toISOString()], ['20261126', '2026-11-27T00:00:00.000Z']);
  });
});
