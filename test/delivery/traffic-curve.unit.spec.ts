/**
 * The traffic-shaped pacing curve (src/delivery/traffic-curve.ts): learned from previous days'
 * hourly counts, uniform without a usable day, and the pacing controller following it on a market
 * whose traffic has a night trough and an evening peak.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localDay } from '../../src/delivery/local-day';
import { DEFAULT_PACE, PaceController } from '../../src/delivery/pacer';
import { curveAt, curveDensity, curveFromHistory, hoursOf, UNIFORM_MIX } from '../../src/delivery/traffic-curve';

const DAY0 = Date.UTC(2026, 0, 5);
const H = 3_600_000;

/** Relative traffic of the UTC hour (the simulator's): a trough of 0.5× at 08:00, a peak of 1.5× at 20:00. */
const traffic = (hourOfDay: number): number => 1 + 0.5 * Math.sin((2 * Math.PI * (hourOfDay - 14)) / 24);

/** A previous day's hash as Redis returns it: hour index → count. */
function dayOfCounts(count: (h: number) => number, hours = 24): Record<string, string> {
  const out: Record<string, string> = {};
  for (let h = 0; h < hours; h++) out[String(h)] = String(Math.round(count(h)));
  return out;
}

describe('traffic curve', () => {
  it('is null without a usable day: none, a day not observed every hour, a day of another length, a day without traffic', () => {
    assert.equal(curveFromHistory([], 24), null);
    const partial = dayOfCounts(() => 100);
    delete partial['3'];
    assert.equal(curveFromHistory([null, partial, dayOfCounts(() => 100, 23), dayOfCounts(() => 0)], 24), null);
  });

  it('averages the shares of the usable days, with a little uniform in every hour', () => {
    // Day A: all traffic in hour 0; day B: all in hour 1 (a thousand times the volume: each day weighs the same).
    const a = dayOfCounts((h) => (h === 0 ? 10 : 0));
    const b = dayOfCounts((h) => (h === 1 ? 10_000 : 0));
    const cum = curveFromHistory([a, b], 24)!;
    assert.equal(cum.length, 25);
    assert.equal(cum[0], 0);
    assert.ok(Math.abs(cum[24] - 1) < 1e-12);
    const share = (h: number) => cum[h + 1] - cum[h];
    const u = UNIFORM_MIX / 24;
    assert.ok(Math.abs(share(0) - (0.5 * (1 - UNIFORM_MIX) + u)) < 1e-12, `${share(0)}`);
    assert.ok(Math.abs(share(1) - (0.5 * (1 - UNIFORM_MIX) + u)) < 1e-12);
    for (let h = 2; h < 24; h++) assert.ok(Math.abs(share(h) - u) < 1e-12, `hour ${h}: ${share(h)}`);
  });

  it('is linear within an hour; its density is the hour share per ms', () => {
    const cum = curveFromHistory([dayOfCounts((h) => 1000 * traffic(h))], 24)!;
    const mid = curveAt(cum, DAY0, DAY0 + 5.5 * H);
    assert.ok(Math.abs(mid - (cum[5] + cum[6]) / 2) < 1e-12);
    assert.equal(curveAt(cum, DAY0, DAY0 - 1), 0);
    assert.equal(curveAt(cum, DAY0, DAY0 + 24 * H), 1);
    assert.ok(Math.abs(curveDensity(cum, DAY0, DAY0 + 14.2 * H) * H - (cum[15] - cum[14])) < 1e-15);
    // The evening peak's hour weighs nearly three times the trough's.
    assert.ok((cum[21] - cum[20]) / (cum[9] - cum[8]) > 2.5);
  });

  it('counts the hours of 23- and 25-hour days', () => {
    assert.equal(hoursOf(localDay(Date.parse('2026-03-29T12:00:00Z'), 'Europe/Paris')), 23);
    assert.equal(hoursOf(localDay(Date.parse('2026-11-01T12:00:00Z'), 'America/New_York')), 25);
  });
});

/** A day of the plant of pacer.spec.ts: spend rate = share × k(t), billed 2 s later; returns spend per hour. */
function run(budget: number, k: (t: number) => number, curve: Float64Array | null): { hourly: number[]; total: number; shares: number[] } {
  const pc = new PaceController(DEFAULT_PACE);
  const day = localDay(DAY0, 'UTC');
  pc.curve = curve;
  pc.curveDay = day.start;
  const pending: Array<{ at: number; usd: number }> = [];
  let billed = 0;
  let committed = 0;
  const hourly = new Array<number>(24).fill(0);
  const shares = new Array<number>(24).fill(0);
  for (let t = DAY0; t < day.end; t += 1_000) {
    while (pending.length > 0 && pending[0].at <= t) billed += pending.shift()!.usd;
    const share = pc.update(t, day, billed, budget);
    const usd = Math.min(share * k(t) * 1_000, budget - committed);
    committed += usd;
    const h = Math.floor((t - DAY0) / H);
    hourly[h] += usd;
    shares[h] += share / 3600;
    pending.push({ at: t + 2_000, usd });
  }
  return { hourly, total: committed, shares };
}

describe('pacing along a traffic curve', () => {
  const budget = 240;
  // The market at share 1: 20x the budget over the day, shaped by the traffic.
  const k = (t: number) => ((20 * budget) / (24 * H)) * traffic(((t - DAY0) / H) % 24);
  const learned = curveFromHistory([dayOfCounts((h) => 10_000 * traffic(h + 0.5)), dayOfCounts((h) => 9_000 * traffic(h + 0.5))], 24)!;

  it('spends each hour in proportion to the traffic of previous days, within 10 % after the first hour', () => {
    const r = run(budget, k, learned);
    const aimEnd = 24 - DEFAULT_PACE.endMarginMs / H;
    for (let h = 1; h < 24; h++) {
      const part = h === 23 ? aimEnd - 23 : 1;
      const target = (budget * (learned[h + 1] - learned[h]) * part) / curveAt(learned, 0, aimEnd * H);
      const err = Math.abs(r.hourly[h] - target) / target;
      assert.ok(err <= 0.1, `hour ${h}: ${r.hourly[h].toFixed(3)} against ${target.toFixed(3)} (${(100 * err).toFixed(1)} %)`);
    }
    assert.ok(r.total >= 0.95 * budget && r.total <= budget + 1e-9, `day: ${r.total}`);
    // Following the traffic, the campaign enters about the same share of requests all day (after the ramp).
    const s = r.shares.slice(2, 23);
    assert.ok(Math.max(...s) / Math.min(...s) < 1.3, `shares ${Math.min(...s).toFixed(4)}-${Math.max(...s).toFixed(4)}`);
  });

  it('without history the same market is paced uniformly, its share swinging with the traffic', () => {
    const r = run(budget, k, null);
    for (let h = 1; h < 23; h++) assert.ok(Math.abs(r.hourly[h] - budget / (24 - DEFAULT_PACE.endMarginMs / H)) / (budget / 24) <= 0.1, `hour ${h}: ${r.hourly[h]}`);
    const s = r.shares.slice(2, 23);
    assert.ok(Math.max(...s) / Math.min(...s) > 2, `shares ${Math.min(...s).toFixed(4)}-${Math.max(...s).toFixed(4)}`);
  });

  it('a curve of another day is not used', () => {
    const pc = new PaceController(DEFAULT_PACE);
    pc.curve = learned;
    pc.curveDay = DAY0 - 24 * H;
    const r1 = run(budget, k, null);
    const day = localDay(DAY0, 'UTC');
    // Same run by hand with the stale curve: identical to the uniform run's first hours.
    let billed = 0;
    const pending: Array<{ at: number; usd: number }> = [];
    let spent = 0;
    for (let t = DAY0; t < DAY0 + 2 * H; t += 1_000) {
      while (pending.length > 0 && pending[0].at <= t) billed += pending.shift()!.usd;
      const usd = pc.update(t, day, billed, budget) * k(t) * 1_000;
      spent += usd;
      pending.push({ at: t + 2_000, usd });
    }
    assert.ok(Math.abs(spent - (r1.hourly[0] + r1.hourly[1])) < 1e-9);
  });
});
