/**
 * CPU of bid shading's estimate updates (ShadingService.tick, every 100 ms) per second of traffic,
 * for the load test's shape per worker: 650 bid requests a second over about 1,900 segments (30
 * publishers, 5 ad sizes, 3 device types, 4 floor buckets), a win notice for 10 % of the bids
 * (no loss notices, no price to win: the exchange's loss notices are learned, so its bids teach),
 * on a virtual clock (no timers, no Redis). CPU from process.cpuUsage around each tick.
 * With `--base <dir>` (the `.test-build` of another commit) both builds run in alternating rounds
 * on the same traffic, and the ratio is printed. Run:
 * `npm run build:test && node_modules/.bin/node .test-build/tools/bench/shading-tick.bench.js [--base <dir>] [--rounds N] [--seconds S]`
 */
import * as path from 'node:path';
import { seeded } from '../sim/market';
import { count, readCommandLine } from './cli';

const usage = 'usage: node .test-build/tools/bench/shading-tick.bench.js [--base <.test-build dir>] [--rounds N] [--seconds S]';
const { values } = readCommandLine({
  name: 'shading-tick.bench',
  usage,
  options: { base: { type: 'string' }, rounds: { type: 'string' }, seconds: { type: 'string' } },
});
const ROUNDS = count('shading-tick.bench', usage, values.rounds, 4);
/** Seconds of traffic per round, after WARM_S seconds not counted (segments made, estimates settled). */
const SECONDS = count('shading-tick.bench', usage, values.seconds, 120);
const WARM_S = 30;
const BIDS_PER_S = 650;
const NOTICE_SHARE = 0.1;
const PUBLISHERS = 30;
const SIZES: Array<[number, number]> = [
  [300, 250],
  [728, 90],
  [320, 50],
  [160, 600],
  [300, 600],
];
const DEVICES = [1, 2, 4];
/** Floors in 4 buckets of floorBucket (about 25 % wide each). */
const FLOORS = [0, 0.3, 0.6, 1.2];

interface Build {
  name: string;
  ShadingService: new (...args: unknown[]) => Service;
  Clock: new () => { now: () => number };
  Random: new () => { next: () => number };
}
interface Service {
  price(req: unknown, imp: unknown, m: unknown, cur: string, rates: unknown, now: number): number;
  noticeParam(req: unknown, m: unknown): string;
  learn(event: 'win', p: unknown, bidUsd: number, minToWin: null, sd: number, loss: null): void;
  tick(): void;
  stopTimers(): void;
  readonly stats: { learned: number };
}

function load(name: string, root: string): Build {
  /* eslint-disable @typescript-eslint/no-require-imports */
  const service = require(path.join(root, 'src', 'delivery', 'shading.service.js')) as { ShadingService: Build['ShadingService'] };
  const clock = require(path.join(root, 'src', 'delivery', 'clock.js')) as { Clock: Build['Clock'] };
  const random = require(path.join(root, 'src', 'delivery', 'random.js')) as { Random: Build['Random'] };
  /* eslint-enable @typescript-eslint/no-require-imports */
  return { name, ShadingService: service.ShadingService, Clock: clock.Clock, Random: random.Random };
}

/** One round: the tick's CPU (ms) per second of traffic after the warm-up, ticks run, and a checksum of the estimates. */
function run(build: Build, seed: number): { msPerS: number; ticks: number } {
  const r = seeded(seed);
  const START = Date.UTC(2026, 10, 28, 9, 0);
  let now = START;
  const clock = new build.Clock();
  clock.now = () => now;
  const random = new build.Random();
  random.next = seeded(seed + 1);
  const candidates = SIZES.map(([w, h], i) => ({ id: `cr-${i}`, campaignId: 'c1', price: 2.5, banner: { w, h }, video: null }));
  const byId = new Map(candidates.map((c) => [c.id, c]));
  const config = { shading: true, shadingExplore: 0.05, hostId: 'h', workerId: '1', shadingSyncMs: 10_000, shadingLearnPerS: 1000, shadingHalfLifeMs: 600_000, exchanges: null };
  const store = { current: () => byId };
  const repo = { isReady: () => false };
  const s = new build.ShadingService(config, repo, store, random, clock);
  const rates = { convert: (v: number) => v };
  const pending: Array<{ at: number; p: unknown; bid: number; sd: number }> = [];
  let cpu = 0;
  let ticks = 0;
  let nextTick = START + 100;
  const total = (WARM_S + SECONDS) * BIDS_PER_S;
  for (let i = 0; i < total; i++) {
    const at = START + (i * 1000) / BIDS_PER_S;
    while (nextTick <= at) {
      while (pending.length > 0 && pending[0].at <= nextTick) {
        const n = pending.shift()!;
        now = n.at;
        s.learn('win', n.p, n.bid, null, n.sd, null);
      }
      now = nextTick;
      const counted = nextTick - START > WARM_S * 1000;
      const t0 = counted ? process.cpuUsage() : null;
      s.tick();
      if (t0 !== null) {
        const d = process.cpuUsage(t0);
        cpu += (d.user + d.system) / 1000;
        ticks++;
      }
      nextTick += 100;
    }
    now = at;
    // Publishers skewed (a few large ones), sizes, devices and floors uniform.
    const pub = Math.floor(PUBLISHERS * r() * r());
    const c = candidates[Math.floor(r() * candidates.length)];
    const req = { at: 1, publisher: `pub-${pub}`, deviceType: DEVICES[Math.floor(r() * DEVICES.length)], source: 0 };
    const imp = { bidfloor: FLOORS[Math.floor(r() * FLOORS.length)], bidfloorcur: 'USD' };
    const match = { dealId: null, price: c.price, candidate: c };
    const bid = s.price(req, imp, match, 'USD', rates, now);
    if (r() < NOTICE_SHARE) {
      const sd = Number(s.noticeParam(req, match).slice(4));
      const p = { bidId: `b-${i}`, cid: 'c1', crid: c.id, price: bid, cur: 'USD', ts: now, publisher: req.publisher, source: 0 };
      // Win notices 20-80 ms after the bid (in order of arrival: the bids are in order, the delays close).
      pending.push({ at: now + 20 + 60 * r(), p, bid, sd });
      pending.sort((a, b) => a.at - b.at);
    }
  }
  s.stopTimers();
  return { msPerS: cpu / SECONDS, ticks };
}

const builds: Build[] = [];
if (typeof values.base === 'string') builds.push(load('base', path.resolve(values.base)));
builds.push(load('this', process.env.TICK_ROOT ?? path.join(__dirname, '..', '..')));
const results = new Map<string, number[]>(builds.map((b) => [b.name, []]));
console.log(`shading tick: ${BIDS_PER_S} bids/s, ${NOTICE_SHARE * 100} % win notices, ${SECONDS} s counted after ${WARM_S} s, ${ROUNDS} rounds${builds.length > 1 ? ' alternating' : ''}`);
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? builds : [...builds].reverse();
  for (const b of order) {
    const { msPerS, ticks } = run(b, 1000 + round);
    results.get(b.name)!.push(msPerS);
    console.log(`  round ${round + 1} ${b.name.padEnd(4)}: ${msPerS.toFixed(3)} ms CPU per s of traffic (${ticks} ticks, ${((msPerS * 1000) / BIDS_PER_S).toFixed(2)} µs per bid request)`);
  }
}
const median = (a: number[]): number => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
for (const b of builds) console.log(`${b.name.padEnd(4)}: median ${median(results.get(b.name)!).toFixed(3)} ms CPU per s of traffic`);
if (builds.length > 1) {
  const ratios = results.get('this')!.map((v, i) => v / results.get('base')![i]);
  console.log(`this / base per round: ${ratios.map((x) => x.toFixed(3)).join(', ')} (median ${median(ratios).toFixed(3)})`);
}
