/**
 * The market simulator: a day (or several) of bid requests at accelerated virtual time, through the
 * bidder's own code (a real app instance: BiddingService.bid for every request, NoticeRoute for
 * every notice, SpendService refreshes against a real Redis, ShadingService learning), against a
 * synthetic market (market.ts). The bidder's clock and its random draws are the simulator's, so a
 * seed replays a run exactly. Three strategies per market: the bidder as configured ("shaded"),
 * bidding the value (SHADING=false), and an oracle that knows the market's distribution (the
 * shading price replaced by the exact optimum of (value − b) × P(win | b)).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as querystring from 'node:querystring';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import Redis from 'ioredis';
import { createApp } from '../../src/app';
import { BiddingService } from '../../src/bidding/bidding.service';
import { loadConfig } from '../../src/config/config';
import { Clock } from '../../src/delivery/clock';
import { spendKeys } from '../../src/delivery/keys';
import { localDay } from '../../src/delivery/local-day';
import { Random } from '../../src/delivery/random';
import { oracleBid } from '../../src/delivery/shading';
import { ShadingService } from '../../src/delivery/shading.service';
import { SpendService } from '../../src/delivery/spend.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { Match } from '../../src/targeting/types';
import { NoticeRoute } from '../../src/tracking/notice.route';
import { competitionCdf, diurnal, drawCompetition, seeded, type MarketShape, type SegmentShape } from './market';

export type Strategy = 'shaded' | 'value' | 'oracle';

export interface SimCampaign {
  readonly id: string;
  readonly w: number;
  readonly h: number;
  /** The creative's price: its value, USD CPM. */
  readonly value: number;
  readonly daily: number;
  readonly pacing: 'even' | 'asap';
  readonly timeZone: string;
  /** An even campaign's pacing curve (default uniform). */
  readonly curve?: 'uniform' | 'traffic';
}

/** The campaign of the short runs (`market.run`): one asap creative worth 2.00 whose budget never binds. */
export const SHORT_CAMPAIGNS: readonly SimCampaign[] = [{ id: 'short', w: 300, h: 250, value: 2, daily: 1000, pacing: 'asap', timeZone: 'UTC' }];

/** Budgets for 100 000 requests a day (the simulator scales them with the traffic). */
export const CAMPAIGNS: readonly SimCampaign[] = [
  { id: 'even-utc', w: 300, h: 250, value: 2, daily: 12, pacing: 'even', timeZone: 'UTC' },
  { id: 'asap-utc', w: 300, h: 250, value: 1.2, daily: 2, pacing: 'asap', timeZone: 'UTC' },
  { id: 'even-tokyo', w: 728, h: 90, value: 1.2, daily: 5, pacing: 'even', timeZone: 'Asia/Tokyo' },
];

export interface SimOptions {
  readonly market: MarketShape;
  readonly strategy: Strategy;
  readonly seed: number;
  readonly days: number;
  readonly requestsPerDay: number;
  readonly redisUrl: string;
  /** Scratch directory (campaign file, spill). */
  readonly dir: string;
  readonly campaigns?: readonly SimCampaign[];
  /** Virtual ms between budget refreshes. */
  readonly refreshMs?: number;
  /** Virtual start (epoch ms, default 2026-01-05T00:00Z, a Monday). */
  readonly startMs?: number;
  /** Workers (app instances sharing the Redis): requests go round-robin, notices to any of them. Default 1. */
  readonly workers?: number;
  /** The workers' SHADING_SYNC_S (default: the bidder's, 10). */
  readonly syncS?: number;
  /** The pacing curve of every even campaign (default: each campaign's own, uniform). */
  readonly curve?: 'uniform' | 'traffic';
  /** Restarts worker `worker` `atMs` virtual ms after the start: its app closes (leaving the live set) and a new one (another worker id, nothing learned) takes its requests. */
  readonly restart?: { readonly worker: number; readonly atMs: number };
}

/** One day of a campaign (in its zone) that ended within the run. */
export interface CampaignDay {
  readonly day: string;
  readonly spend: number;
  /** First seen after the day began. */
  readonly partial: boolean;
  /** What the day may spend: the daily budget, prorated on the day the campaign was first seen mid-day. */
  readonly budget: number;
  /** Hours after the day's first (even campaigns): the largest relative error of spend against the curve. */
  readonly maxHourlyError: number;
  /** Half the sum over the day's hours of |spend share − request share|: 0 when spend follows traffic exactly. */
  readonly trafficDistance: number;
}

export interface CampaignResult {
  readonly id: string;
  readonly pacing: 'even' | 'asap';
  readonly daily: number;
  /** Per simulated hour: spend (at auction time), target of the pacing curve, wins, bids. */
  readonly hourly: { spend: number[]; target: number[]; wins: number[]; bids: number[] };
  /** Each of the campaign's days that ended within the run: its spend against its budget and its curve. */
  readonly days: CampaignDay[];
  readonly curve: 'uniform' | 'traffic';
  /** Hours after each day's first, with a target: the largest relative error of spend against it. */
  readonly maxHourlyError: number;
  readonly wins: number;
  readonly paid: number;
  readonly valueWon: number;
  readonly overBudget: boolean;
}

export interface SimResult {
  readonly market: string;
  readonly strategy: Strategy;
  readonly seed: number;
  readonly requests: number;
  readonly bids: number;
  readonly wins: number;
  readonly paid: number;
  readonly surplus: number;
  readonly noticeErrors: number;
  /** Bids made by each worker. */
  readonly bidsByWorker: number[];
  /** Per simulated hour: requests, and surplus of the wins (USD). */
  readonly requestsByHour: number[];
  readonly surplusByHour: number[];
  readonly campaigns: CampaignResult[];
  /** Short runs: the median bid price of each second of the run (NaN: no bid that second), and the surplus of each second's wins (USD). */
  readonly medianBidBySecond: number[];
  readonly surplusBySecond: number[];
  /** Short runs: each worker's pacing share of the first even campaign at the end of each second (NaN: none). */
  readonly shareBySecond: number[][];
  readonly wallMs: number;
}

/** A min-heap of timed events. */
class Queue<T> {
  private readonly items: Array<{ at: number; seq: number; v: T }> = [];
  private seq = 0;
  get size(): number {
    return this.items.length;
  }
  peek(): number {
    return this.items.length === 0 ? Infinity : this.items[0].at;
  }
  push(at: number, v: T): void {
    const a = this.items;
    a.push({ at, seq: this.seq++, v });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (less(a[p], a[i])) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  pop(): T {
    const a = this.items;
    const top = a[0];
    const last = a.pop()!;
    if (a.length > 0) {
      a[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && less(a[l], a[m])) m = l;
        if (r < a.length && less(a[r], a[m])) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top.v;
  }
}

function less(a: { at: number; seq: number }, b: { at: number; seq: number }): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

const HOUR = 3_600_000;
/** Pacing's end margin (the app's default): the curve ends this long before the campaign's day. */
const END_MARGIN = 300_000;

export function campaignFile(campaigns: readonly SimCampaign[]): object {
  return {
    version: 1,
    currency: 'USD',
    campaigns: campaigns.map((c) => ({
      id: c.id,
      adomain: [`${c.id}.example`],
      cat: ['IAB3'],
      landingUrl: `https://${c.id}.example/`,
      budget: { total: c.daily * 1000, daily: c.daily },
      pacing: c.pacing,
      pacingCurve: c.curve ?? 'uniform',
      timeZone: c.timeZone,
      creatives: [{ id: `${c.id}-cr`, type: 'banner', price: c.value, banner: { w: c.w, h: c.h, imageUrl: `https://cdn.${c.id}.example/a.png` } }],
    })),
  };
}

/**
 * The pacing curve's spend per hour of the run for one campaign: each of its days from the moment
 * it was first seen (the run's start, or the day's start) to the day's end less the margin; the
 * first, when partial, prorated.
 */
export function targetByHour(c: SimCampaign, startMs: number, hours: number): { target: number[]; firstHours: Set<number> } {
  const target = new Array<number>(hours).fill(0);
  const firstHours = new Set<number>();
  const end = startMs + hours * HOUR;
  for (let day = localDay(startMs, c.timeZone); day.start < end; day = localDay(day.end, c.timeZone)) {
    const from = Math.max(day.start, startMs);
    const to = day.end - END_MARGIN;
    firstHours.add(Math.floor((from - startMs) / HOUR));
    // A day the campaign is first seen in (nothing spent yet) is prorated: its budget × the share of the day left.
    const cum = (t: number) => (c.daily * (Math.min(Math.max(t, from), to) - from)) / (to - day.start);
    for (let h = 0; h < hours; h++) target[h] += cum(startMs + (h + 1) * HOUR) - cum(startMs + h * HOUR);
  }
  return { target, firstHours };
}

/**
 * The traffic-shaped curve's spend per hour of the run (a campaign with `curve: "traffic"`): each
 * day's budget in proportion to the request shares of its hours over the previous days of the run
 * (up to 7, whole days only, with the same number of hours; mixed with 5 % uniform), as the bidder
 * learns them from the campaign's eligible requests (whose shares are the market's: segments are
 * drawn independently of the time); uniform without such a day.
 */
export function trafficTargetByHour(c: SimCampaign, startMs: number, hours: number, requestsByHour: readonly number[]): number[] {
  const target = new Array<number>(hours).fill(0);
  const end = startMs + hours * HOUR;
  const days: Array<{ start: number; n: number; first: number; whole: boolean }> = [];
  for (let day = localDay(startMs, c.timeZone); day.start < end; day = localDay(day.end, c.timeZone)) {
    days.push({ start: day.start, n: Math.round((day.end - day.start) / HOUR), first: Math.round((day.start - startMs) / HOUR), whole: day.start >= startMs && day.end <= end });
  }
  const uniform = targetByHour(c, startMs, hours).target;
  for (let d = 0; d < days.length; d++) {
    const { n, first } = days[d];
    const shares = new Array<number>(n).fill(0);
    let used = 0;
    for (let p = Math.max(0, d - 7); p < d; p++) {
      const q = days[p];
      if (!q.whole || q.n !== n) continue;
      let total = 0;
      for (let j = 0; j < n; j++) total += requestsByHour[q.first + j];
      for (let j = 0; j < n; j++) shares[j] += requestsByHour[q.first + j] / total;
      used++;
    }
    if (used === 0 || first < 0) {
      for (let j = 0; j < n; j++) if (first + j >= 0 && first + j < hours) target[first + j] = uniform[first + j];
      continue;
    }
    // The curve ends END_MARGIN before the day: the last hour's share is cut by that much.
    const w = shares.map((x) => (0.95 * x) / used + 0.05 / n);
    w[n - 1] *= 1 - END_MARGIN / HOUR;
    const sum = w.reduce((a, x) => a + x, 0);
    for (let j = 0; j < n; j++) if (first + j < hours) target[first + j] = (c.daily * w[j]) / sum;
  }
  return target;
}

interface Notice {
  url: string;
  price: string;
  loss: string;
  mtw: string;
}

export async function simulate(o: SimOptions): Promise<SimResult> {
  const wall0 = Date.now();
  const short = o.market.run;
  const campaigns = (o.campaigns ?? (short !== undefined ? SHORT_CAMPAIGNS : CAMPAIGNS.map((c) => ({ ...c, daily: (c.daily * o.requestsPerDay) / 100_000 })))).map((c) =>
    o.curve !== undefined && c.pacing === 'even' ? { ...c, curve: o.curve } : c,
  );
  // A short run starts at noon (no day boundary in it), refreshes every 100 ms (shading's tick).
  const startMs = o.startMs ?? Date.UTC(2026, 0, 5, short !== undefined ? 12 : 0);
  const refreshMs = o.refreshMs ?? (short !== undefined ? 100 : 10_000);
  const hours = short !== undefined ? Math.ceil(short.seconds / 3600) : o.days * 24;
  const endMs = short !== undefined ? startMs + short.seconds * 1000 : startMs + hours * HOUR;
  const shiftAt = o.market.shift !== undefined ? startMs + o.market.shift.at * (endMs - startMs) : Infinity;
  const shiftOf = (t: number): number => (t >= shiftAt ? 1 : 0);
  const segmentAt = (seg: SegmentShape, t: number): SegmentShape => (t >= shiftAt ? { ...seg, median: seg.median * o.market.shift!.factor, floorTied: seg.floorTied === undefined ? undefined : seg.floorTied * o.market.shift!.factor } : seg);
  const sent = { win: o.market.notices?.win ?? true, loss: o.market.notices?.loss ?? true, lossPrice: o.market.notices?.lossPrice ?? false, bill: o.market.notices?.billDelayMs ?? [500, 3000] };
  const bidsBySecond: number[][] = [];
  const surplusBySecond: number[] = short !== undefined ? new Array<number>(short.seconds).fill(0) : [];
  fs.mkdirSync(o.dir, { recursive: true });
  const file = path.join(o.dir, 'campaigns.json');
  fs.writeFileSync(file, JSON.stringify(campaignFile(campaigns)));
  const admin = new Redis(o.redisUrl, { lazyConnect: false });
  await admin.flushall();
  const env = {
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    REDIS_URL: o.redisUrl,
    CAMPAIGNS_FILE: file,
    CAMPAIGNS_WATCH_MS: '0',
    LOG_LEVEL: 'warn',
    TRACKING_SECRET: 'simulator',
    BUDGET_REFRESH_MS: String(refreshMs),
    SHADING: o.strategy === 'value' ? 'false' : 'true',
    ...(o.syncS !== undefined ? { SHADING_SYNC_S: String(o.syncS) } : {}),
  };
  let now = startMs;
  // Virtual ms between two shadings' exchanges of what they learned (with several workers): the workers' own setting (SHADING_SYNC_S).
  const syncMs = loadConfig(env).shadingSyncMs;
  const apps: NestFastifyApplication[] = [];
  try {
    const workers: Array<{ bidding: BiddingService; notices: NoticeRoute; spend: SpendService; shading: ShadingService }> = [];
    const start = async (w: number, id: string): Promise<(typeof workers)[number]> => {
      const app = await createApp(loadConfig({ ...env, WORKER_ID: id, LOG_SPILL_DIR: path.join(o.dir, `spill-${id}`) }));
      apps[w] = app;
      // The virtual clock and draws from the start: the first refresh (at init) is at the run's start, as a bidder started then would make it.
      app.get(Clock).now = () => now;
      app.get(Random).next = seeded(o.seed * 7919 + 1 + w + (id === `sim-${w}` ? 0 : 104_729));
      await app.init();
      const worker = { bidding: app.get(BiddingService), notices: app.get(NoticeRoute), spend: app.get(SpendService), shading: app.get(ShadingService) };
      worker.spend.stopTimer();
      worker.shading.stopTimers();
      // Its ticks run whole (MAX_BID_UPDATES still bounds them): a seed gives the same run on any machine.
      worker.shading.tickBudgetMs = Infinity;
      return worker;
    };
    for (let w = 0; w < (o.workers ?? 1); w++) workers.push(await start(w, `sim-${w}`));
    let restartAt = o.restart !== undefined ? startMs + o.restart.atMs : Infinity;
    const byKey = new Map<string, SegmentShape>();
    for (const s of o.market.segments) byKey.set(`${s.publisher}|${s.w}x${s.h}|${s.deviceType}`, s);
    const cache = new Map<string, number>();
    for (const { shading } of workers) {
      if (o.strategy !== 'oracle') break;
      // The oracle maximises each auction's surplus with the market's true distribution, under the
      // same pacing as the bidder: its pressure, and when the budget binds its shadow price λ
      // (pacer.ts), so that a budget binds the oracle as it binds the bidder.
      shading.price = (req: BidRequest, imp: Imp, m: Match, _cur: string, _rates: unknown, _now: number, pressure = 0): number => {
        if (req.at !== 1 || m.dealId !== null) return m.price;
        const b = m.candidate.banner!;
        const key = `${req.publisher}|${b.w}x${b.h}|${req.deviceType}`;
        const p = Math.round(pressure * 100) / 100;
        const ck = `${key}|${m.candidate.price}|${imp.bidfloor}|${p}|${shiftOf(now)}`;
        let bid = cache.get(ck);
        if (bid === undefined) {
          const seg = segmentAt(byKey.get(key)!, now);
          bid = Math.max(imp.bidfloor, oracleBid((x) => competitionCdf(seg, x, imp.bidfloor), m.candidate.price, imp.bidfloor, p));
          cache.set(ck, bid);
        }
        return bid;
      };
    }
    const rMarket = seeded(o.seed);
    const rTraffic = seeded(o.seed * 31 + 7);
    const totalWeight = o.market.segments.reduce((s, x) => s + x.weight, 0);
    const queue = new Queue<Notice>();
    const perCampaign = new Map(
      campaigns.map((c) => [
        c.id,
        { spend: new Array<number>(hours).fill(0), wins: new Array<number>(hours).fill(0), bids: new Array<number>(hours).fill(0), paid: 0, winsAll: 0, valueWon: 0 },
      ]),
    );
    const values = new Map(campaigns.map((c) => [c.id, c.value]));
    let requests = 0;
    let bids = 0;
    let wins = 0;
    let paidAll = 0;
    let surplus = 0;
    let noticeErrors = 0;
    const bidsByWorker = workers.map(() => 0);
    const requestsByHour = new Array<number>(hours).fill(0);
    const surplusByHour = new Array<number>(hours).fill(0);
    const meanGapMs = short !== undefined ? 1000 / short.perSecond : 86_400_000 / o.requestsPerDay;
    let nextRequest = startMs;
    let nextRefresh = startMs;

    // Bills are not awaited one by one: they and the refresh's reads share one Redis connection, so
    // a refresh sees every bill sent before it (and awaiting them all there keeps runs exact).
    let inFlight: Array<Promise<void>> = [];
    const deliver = (n: Notice): void => {
      const url = n.url.replace('${AUCTION_PRICE}', n.price).replace('${AUCTION_CURRENCY}', 'USD').replace('${AUCTION_LOSS}', n.loss).replace('${AUCTION_MIN_TO_WIN}', n.mtw);
      const u = new URL(url);
      const { notices } = workers[workers.length === 1 ? 0 : Math.floor(rMarket() * workers.length)];
      const event = u.pathname.slice(3);
      const answer = notices.answer(event, querystring.parse(u.search.slice(1)));
      if (answer instanceof Promise) {
        const checked = answer.then((a) => {
          if (a.status !== 204) noticeErrors++;
        });
        // Only bills are awaited (win and loss answers wait for their batched marker, up to 50 ms of
        // real time, which the refreshes never needed).
        if (event === 'bill') inFlight.push(checked);
      } else if (answer.status !== 204) noticeErrors++;
    };

    const shareBySecond: number[][] = workers.map(() => (short !== undefined ? new Array<number>(short.seconds).fill(NaN) : []));
    const pacedId = campaigns.find((c) => c.pacing === 'even')?.id;
    while (nextRequest < endMs || queue.size > 0) {
      const t = Math.min(nextRequest < endMs ? nextRequest : Infinity, queue.peek(), nextRefresh);
      now = t;
      if (t === nextRefresh) {
        await Promise.all(inFlight);
        inFlight = [];
        if (now >= restartAt && o.restart !== undefined) {
          // The worker stops as PM2 stops it (its app closes: it leaves the live set) and another starts in its place.
          const w = o.restart.worker;
          await apps[w].close();
          workers[w] = await start(w, `sim-${w}-restarted`);
          restartAt = Infinity;
        }
        for (const w of workers) {
          await w.spend.refresh(now);
          w.shading.tick();
        }
        const second = Math.floor((now - startMs) / 1000);
        if (pacedId !== undefined && short !== undefined && second < short.seconds) {
          workers.forEach((w, i) => {
            const p = w.spend.pacing().find((x) => x.campaign === pacedId);
            if (p !== undefined) shareBySecond[i][second] = p.share;
          });
        }
        if (workers.length > 1 && (nextRefresh - startMs) % syncMs < refreshMs) for (const w of workers) await w.shading.sync();
        nextRefresh += refreshMs;
        if (nextRequest >= endMs && queue.size === 0) break;
        continue;
      }
      if (t === queue.peek()) {
        deliver(queue.pop());
        continue;
      }
      // A request.
      const hour = Math.floor((now - startMs) / HOUR);
      nextRequest = now + (-Math.log(1 - rTraffic()) * meanGapMs) / (short !== undefined ? 1 : diurnal(new Date(now).getUTCHours() + new Date(now).getUTCMinutes() / 60));
      requests++;
      if (hour < hours) requestsByHour[hour]++;
      let pick = rTraffic() * totalWeight;
      let seg = o.market.segments[0];
      for (const s of o.market.segments) {
        pick -= s.weight;
        if (pick < 0) {
          seg = s;
          break;
        }
      }
      const floor = seg.floorTo !== undefined ? Math.round((seg.floor + (seg.floorTo - seg.floor) * rMarket()) * 100) / 100 : seg.floor;
      const body = {
        id: `r${requests}`,
        at: o.market.auction === 'first' ? 1 : 2,
        tmax: 200,
        cur: ['USD'],
        imp: [{ id: '1', banner: { w: seg.w, h: seg.h }, bidfloor: floor, bidfloorcur: 'USD' }],
        site: { domain: `${seg.publisher}.example`, publisher: { id: seg.publisher, name: seg.publisher } },
        device: { devicetype: seg.deviceType },
      };
      const best = drawCompetition(segmentAt(seg, now), rMarket, floor);
      const threshold = Math.max(best, floor);
      const wi = requests % workers.length;
      const answer = workers[wi].bidding.bid(Buffer.from(JSON.stringify(body)), performance.now());
      if (answer.status !== 200) continue;
      bidsByWorker[wi]++;
      const bid = (JSON.parse(answer.bytes?.toString('utf8') ?? '') as { seatbid: Array<{ bid: Array<{ price: number; cid: string; nurl: string; burl: string; lurl: string }> }> }).seatbid[0].bid[0];
      const second = Math.floor((now - startMs) / 1000);
      if (short !== undefined) (bidsBySecond[second] ??= []).push(bid.price);
      bids++;
      const pc = perCampaign.get(bid.cid)!;
      if (hour < hours) pc.bids[hour]++;
      const told = rMarket() < o.market.minToWinShare;
      const mtw = told ? String(Math.ceil(threshold * 100) / 100) : '';
      const d1 = 50 + 250 * rMarket();
      if (bid.price >= threshold) {
        const paid = o.market.auction === 'first' ? bid.price : threshold;
        const v = values.get(bid.cid)!;
        wins++;
        paidAll += paid / 1000;
        surplus += (v - paid) / 1000;
        if (hour < hours) surplusByHour[hour] += (v - paid) / 1000;
        if (second < surplusBySecond.length) surplusBySecond[second] += (v - paid) / 1000;
        pc.paid += paid / 1000;
        pc.winsAll++;
        pc.valueWon += v / 1000;
        if (hour < hours) {
          pc.spend[hour] += paid / 1000;
          pc.wins[hour]++;
        }
        if (sent.win) queue.push(now + d1, { url: bid.nurl, price: String(paid), loss: '0', mtw });
        queue.push(now + sent.bill[0] + (sent.bill[1] - sent.bill[0]) * rMarket(), { url: bid.burl, price: String(paid), loss: '0', mtw });
      } else if (sent.loss) {
        // The clearing price of a loss: what the winner paid (first price: the best competing bid).
        queue.push(now + d1, { url: bid.lurl, price: sent.lossPrice ? String(Math.round(threshold * 10000) / 10000) : '', loss: '102', mtw });
      }
    }
    await Promise.all(inFlight);
    const results: CampaignResult[] = [];
    for (const c of campaigns) {
      const pc = perCampaign.get(c.id)!;
      const uniform = targetByHour(c, startMs, hours);
      const firstHours = uniform.firstHours;
      const curve = c.pacing === 'even' ? (c.curve ?? 'uniform') : 'uniform';
      const target = curve === 'traffic' ? trafficTargetByHour(c, startMs, hours, requestsByHour) : uniform.target;
      const hourError = (h: number): number => (c.pacing !== 'even' || firstHours.has(h) || target[h] <= 0 ? 0 : Math.abs(pc.spend[h] - target[h]) / target[h]);
      let maxErr = 0;
      for (let h = 0; h < hours; h++) maxErr = Math.max(maxErr, hourError(h));
      const days: CampaignDay[] = [];
      let over = false;
      for (let day = localDay(startMs, c.timeZone); day.start < endMs; day = localDay(day.end, c.timeZone)) {
        let s = 0;
        let dayErr = 0;
        let req = 0;
        const inDay: number[] = [];
        for (let h = 0; h < hours; h++) {
          const t0 = startMs + h * HOUR;
          if (t0 >= day.start && t0 < day.end) {
            s += pc.spend[h];
            req += requestsByHour[h];
            dayErr = Math.max(dayErr, hourError(h));
            inDay.push(h);
          }
        }
        let distance = 0;
        for (const h of inDay) distance += Math.abs(pc.spend[h] / Math.max(s, 1e-12) - requestsByHour[h] / Math.max(req, 1)) / 2;
        const stored = Number((await admin.get(spendKeys.daily(c.id, day.day))) ?? 0) / 1e6;
        if (stored > c.daily + 1e-9 || s > c.daily + 1e-9) over = true;
        const budget = day.start < startMs ? (c.daily * (day.end - END_MARGIN - startMs)) / (day.end - END_MARGIN - day.start) : c.daily;
        if (day.end <= endMs) days.push({ day: day.day, spend: s, partial: day.start < startMs, budget, maxHourlyError: dayErr, trafficDistance: distance });
      }
      results.push({
        id: c.id,
        pacing: c.pacing,
        daily: c.daily,
        hourly: { spend: pc.spend, target, wins: pc.wins, bids: pc.bids },
        days,
        curve,
        maxHourlyError: maxErr,
        wins: pc.winsAll,
        paid: pc.paid,
        valueWon: pc.valueWon,
        overBudget: over,
      });
    }
    const medianBidBySecond = Array.from(bidsBySecond, (xs) => (xs === undefined || xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[xs.length >> 1]));
    return { market: o.market.name, strategy: o.strategy, seed: o.seed, requests, bids, wins, paid: paidAll, surplus, noticeErrors, bidsByWorker, requestsByHour, surplusByHour, campaigns: results, medianBidBySecond, surplusBySecond, shareBySecond, wallMs: Date.now() - wall0 };
  } finally {
    for (const app of apps) await app?.close();
    admin.disconnect();
  }
}
