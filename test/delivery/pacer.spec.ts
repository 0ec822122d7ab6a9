/**
 * The pacing controller on known markets: a deterministic plant where spend rate = share × k(t),
 * billed with a delay, refreshed every second of a virtual day.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { localDay } from '../../src/delivery/local-day';
import { DEFAULT_PACE, PaceController, type Peers } from '../../src/delivery/pacer';

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

/** What a worker reads of a peer's shared pacing (spend.service.ts syncPace): its share, and its prorated day when it knows it. */
function peersOf(p: PaceController, share: number): Peers {
  return { shares: share, count: 1, prorate: p.prorateKnown ? p.prorate : NaN, prorateDay: p.day };
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

  it('a campaign first seen at 15:00, nothing spent that day, spends the share of its budget left of the day, along the curve, no burst', () => {
    const budget = 90;
    const r = run(budget, () => (100 * budget) / (24 * H), 15 * H);
    for (let h = 0; h < 15; h++) assert.equal(r.hourly[h], 0);
    const aimEnd = 24 * H - DEFAULT_PACE.endMarginMs;
    const prorated = (budget * (aimEnd - 15 * H)) / aimEnd;
    const scaled = { ...r, targetHourly: r.targetHourly.map((x) => (x * prorated) / budget) };
    // Pacing steers to the prorated day; the lease bounds the daily budget, not the prorated one: 1 % over is allowed.
    assertOnCurve({ ...scaled, total: Math.min(r.total, prorated) }, prorated, 16);
    assert.ok(r.total <= 1.01 * prorated, `day: ${r.total} of ${prorated}`);
    // The first hour: no burst while the controller learns.
    assert.ok(r.hourly[15] <= scaled.targetHourly[15] * 1.1, `first hour ${r.hourly[15]} against ${scaled.targetHourly[15]}`);
  });

  it('a campaign first seen with one hour left spends at most 1/24 of its daily budget that day', () => {
    const budget = 240;
    const r = run(budget, () => (100 * budget) / (24 * H), 23 * H);
    assert.ok(r.total <= budget / 24, `spent ${r.total.toFixed(2)} of ${budget} in the last hour`);
    assert.ok(r.total >= 0.9 * ((budget * (H - DEFAULT_PACE.endMarginMs)) / (24 * H - DEFAULT_PACE.endMarginMs)), `spent ${r.total.toFixed(2)}`);
  });

  it('a worker restarted mid-day (something spent already) spreads what is left over the rest of the day', () => {
    const budget = 90;
    const pc = new PaceController(DEFAULT_PACE);
    const day = localDay(DAY0, 'UTC');
    let spent = 45;
    const k = (100 * budget) / (24 * H);
    for (let t = DAY0 + 12 * H; t < day.end; t += 1000) spent = Math.min(budget, spent + pc.update(t, day, spent, budget) * k * 1000);
    assert.ok(spent >= 0.95 * budget, `spent ${spent.toFixed(2)} of ${budget}`);
  });

  it('midnight resets pressure and share: the first 10 minutes of the next day within 1.5x of the curve', () => {
    const budget = 240;
    const pc = new PaceController(DEFAULT_PACE);
    const day1 = localDay(DAY0, 'UTC');
    const day2 = localDay(day1.end, 'UTC');
    let spent = 0;
    // Day 1: a market too small for the budget (pressure at its highest, share 1); day 2: 50 times larger.
    for (let t = day1.start; t < day1.end; t += 1000) spent += pc.update(t, day1, spent, budget) * ((0.5 * budget) / (24 * H)) * 1000;
    assert.ok(pc.pressure > 0 && pc.share === 1, `under pressure at the end of day 1 (${pc.pressure}, share ${pc.share})`);
    let spent2 = 0;
    const k2 = (50 * budget) / (24 * H);
    for (let t = day2.start; t < day2.start + 600_000; t += 1000) spent2 += pc.update(t, day2, spent2, budget) * k2 * 1000;
    const curve = (budget * 600_000) / (24 * H - DEFAULT_PACE.endMarginMs);
    assert.ok(spent2 <= 1.5 * curve, `first 10 minutes: ${spent2.toFixed(3)} against ${curve.toFixed(3)}`);
    assert.ok(spent2 >= curve / 1.5, `first 10 minutes: ${spent2.toFixed(3)} against ${curve.toFixed(3)}`);
    assert.ok(pc.pressure <= 0, `no spend pressure carried over (${pc.pressure})`);
  });

  it('a worker restarted on a campaign first seen mid-day takes the prorated day from its peer: shares within 1.5x 2 minutes after', () => {
    const budget = 240;
    const day = localDay(DAY0, 'UTC');
    const kW = (10 * budget) / (24 * H);
    // First seen at 12:00 with nothing spent: a's day is prorated to what was left of it.
    const a = new PaceController(DEFAULT_PACE);
    let b = new PaceController(DEFAULT_PACE);
    let spent = 0;
    let sa = 0;
    let sb = 0;
    let ratio = NaN;
    for (let t = day.start + 12 * H; t < day.start + 15 * H; t += 1000) {
      // Worker b restarts at 14:00, after the day's first spend: it cannot tell the day's proration from the spend.
      if (t === day.start + 14 * H) b = new PaceController(DEFAULT_PACE);
      const na = a.update(t, day, spent, budget, peersOf(b, sb));
      const nb = b.update(t, day, spent, budget, peersOf(a, sa));
      sa = na;
      sb = nb;
      spent += (sa + sb) * kW * 1000;
      if (t === day.start + 14 * H + 120_000) ratio = Math.max(sa, sb) / Math.min(sa, sb);
    }
    assert.ok(a.prorate < 0.51 && a.prorate > 0.49, `a's prorate ${a.prorate}`);
    assert.equal(b.prorate, a.prorate, 'b took a\'s prorated day');
    assert.ok(ratio <= 1.5, `shares ${ratio.toFixed(2)}x apart 2 minutes after the restart`);
  });

  it('two workers: shares within 1.5x of each other 2 minutes after one restarts (each knows the other\'s share)', () => {
    const budget = 240;
    const day = localDay(DAY0, 'UTC');
    // Each worker's market at share 1: the same traffic, 20x what the budget needs in all.
    const kW = (10 * budget) / (24 * H);
    let a = new PaceController(DEFAULT_PACE);
    let b = new PaceController(DEFAULT_PACE);
    let spent = 0;
    let sa = 0;
    let sb = 0;
    const ratios: number[] = [];
    for (let t = day.start; t < day.start + 14 * H; t += 1000) {
      // Worker b restarts at 10:00, worker a at 12:00: a new controller, from the initial share.
      if (t === day.start + 10 * H) b = new PaceController(DEFAULT_PACE);
      if (t === day.start + 12 * H) a = new PaceController(DEFAULT_PACE);
      // Each learns the other's share of the previous refresh (shared through Redis).
      const na = a.update(t, day, spent, budget, peersOf(b, sb));
      const nb = b.update(t, day, spent, budget, peersOf(a, sa));
      sa = na;
      sb = nb;
      spent += (sa + sb) * kW * 1000;
      if (t === day.start + 10 * H + 120_000 || t === day.start + 12 * H + 120_000) ratios.push(Math.max(sa, sb) / Math.min(sa, sb));
    }
    for (const r of ratios) assert.ok(r <= 1.5, `shares ${ratios.map((x) => x.toFixed(2)).join(', ')} apart 2 minutes after a restart`);
    assert.ok(Math.abs(spent / ((budget * 14 * H) / (24 * H - DEFAULT_PACE.endMarginMs)) - 1) < 0.1, `spent ${spent.toFixed(1)} by 14:00`);
  });

  it('when the budget binds, the shadow price λ rises (shading bids lower) before pacing throttles for good', () => {
    const budget = 240;
    const pc = new PaceController(DEFAULT_PACE);
    const day = localDay(DAY0, 'UTC');
    // A market 3x larger than the budget at λ = 0; bidding with λ spends k0 / (1 + λ)² (fewer, cheaper wins).
    const k0 = (3 * budget) / (24 * H);
    let spent = 0;
    const hourly = new Array<number>(24).fill(0);
    let noon = { lambda: 0, share: 0 };
    for (let t = day.start; t < day.end; t += 1000) {
      const share = pc.update(t, day, spent, budget);
      if (t - day.start === 12 * H) noon = { lambda: -pc.pressure, share };
      const usd = share * (k0 / (1 + Math.max(0, -pc.pressure)) ** 2) * 1000;
      spent += usd;
      hourly[Math.floor((t - DAY0) / H)] += usd;
    }
    assert.ok(noon.lambda > 0.5 && noon.lambda <= 1, `λ at noon ${noon.lambda.toFixed(2)} (${(Math.sqrt(3) - 1).toFixed(2)} spends the budget at share 1)`);
    assert.ok(noon.share >= 0.8, `share at noon ${noon.share.toFixed(2)} (1/3 without λ)`);
    assert.ok(spent >= 0.95 * budget && spent <= 1.01 * budget, `day: ${spent.toFixed(1)} of ${budget}`);
    for (let h = 2; h < 23; h++) assert.ok(Math.abs(hourly[h] / (budget / 24) - 1) < 0.15, `hour ${h}: ${hourly[h].toFixed(2)}`);
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
