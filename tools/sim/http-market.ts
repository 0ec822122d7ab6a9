/**
 * A short market (market.ts, `run`) driven against a running bidder over HTTP, in real time: bid
 * requests at a constant Poisson rate as the simulator builds them, the competition drawn per
 * auction, each bid won or lost against it, and the bid's nurl/burl/lurl called with the macros
 * substituted as the market's exchange does (no win notices, no loss notices, a loss's clearing
 * price, late bills). The oracle's bid (oracleBid on the market's true distribution) is priced on
 * the same drawn competition, auction by auction, so both are judged on the same auctions.
 *
 * startHttpBidder starts the bidder for it: a private Redis and a PM2 cluster (scripts/start.js) in
 * a temporary PM2_HOME, with the short markets' campaign file and an exchanges file naming this
 * machine as the market's exchange (its `lossNotices` as the market sends them).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { oracleBid } from '../../src/delivery/shading';
import { competitionCdf, drawCompetition, seeded, type MarketShape, type SegmentShape } from './market';
import { campaignFile, SHORT_CAMPAIGNS } from './simulator';

export interface HttpRunOptions {
  /** The bidder's base URL (its bid endpoint is POST <url>/openrtb2/bid). */
  readonly url: string;
  readonly market: MarketShape;
  /** Auctions a second (default: the market's). */
  readonly rate?: number;
  /** Seconds of auctions (default: the market's); notices still due are awaited after. */
  readonly seconds?: number;
  readonly seed: number;
  /** Headers sent with every bid request (an exchange's token). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Scales the late bills' delays (a short test); default 1. */
  readonly billDelayScale?: number;
}

export interface HttpRunResult {
  readonly market: string;
  readonly seed: number;
  readonly rate: number;
  readonly seconds: number;
  readonly requests: number;
  readonly bids: number;
  /** Bid requests answered 204 (no bid: shed under load, or paced). */
  readonly noBids: number;
  /** Bid requests answered other than 200 or 204, or not at all (timeout, connection error). */
  readonly bidErrors: number;
  readonly wins: number;
  readonly surplus: number;
  readonly paid: number;
  readonly oracle: { readonly wins: number; readonly surplus: number };
  /** Notices sent and answered, by event (win, bill, loss): statuses counted; 0 is no answer. */
  readonly notices: Record<string, Record<string, number>>;
  readonly noticeErrors: number;
  /** Bid latency seen by the exchange, ms. */
  readonly latencyMs: { readonly p50: number; readonly p99: number; readonly max: number };
  /** The market moved `shift.atS` seconds into the run (shift markets only). */
  readonly shift?: {
    readonly atS: number;
    /** The oracle's bid after the shift at the segment's floor, and before it. */
    readonly optimum: number;
    readonly optimumBefore: number;
    /** The median bid of each 10 s after the shift (NaN: no bid). */
    readonly medianBy10s: number[];
    /** Seconds after the shift at the start of the first 10 s window from which every window's median is within 5 % of the optimum; null: never. */
    readonly convergedS: number | null;
    readonly surplusAfter: number;
    readonly oracleSurplusAfter: number;
    readonly winsAfter: number;
    readonly oracleWinsAfter: number;
  };
  readonly wallMs: number;
}

interface BidJson {
  seatbid?: Array<{ bid: Array<{ price: number; nurl?: string; burl?: string; lurl?: string }> }>;
}

const median = (xs: readonly number[]): number => {
  if (xs.length === 0) return NaN;
  const v = [...xs].sort((a, b) => a - b);
  return v[v.length >> 1];
};

function quantile(sorted: readonly number[], q: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** One short market against the bidder at `o.url`, in real time. */
export async function driveHttp(o: HttpRunOptions): Promise<HttpRunResult> {
  const wall0 = Date.now();
  const m = o.market;
  const rate = o.rate ?? m.run?.perSecond ?? 35;
  const seconds = o.seconds ?? m.run?.seconds ?? 120;
  const base = o.url.replace(/\/+$/, '');
  const value = SHORT_CAMPAIGNS[0].value;
  const shiftAtMs = m.shift !== undefined ? m.shift.at * seconds * 1000 : Infinity;
  const segmentAt = (seg: SegmentShape, shifted: boolean): SegmentShape =>
    shifted ? { ...seg, median: seg.median * m.shift!.factor, floorTied: seg.floorTied === undefined ? undefined : seg.floorTied * m.shift!.factor } : seg;
  const sent = { win: m.notices?.win ?? true, loss: m.notices?.loss ?? true, lossPrice: m.notices?.lossPrice ?? false, bill: m.notices?.billDelayMs ?? [500, 3000] };
  const billScale = o.billDelayScale ?? 1;
  const rMarket = seeded(o.seed);
  const rTraffic = seeded(o.seed * 31 + 7);
  const totalWeight = m.segments.reduce((s, x) => s + x.weight, 0);
  const oracleCache = new Map<string, number>();
  const oracleAt = (seg: SegmentShape, floor: number, shifted: boolean): number => {
    const key = `${seg.publisher}|${seg.w}x${seg.h}|${seg.deviceType}|${floor}|${shifted ? 1 : 0}`;
    let b = oracleCache.get(key);
    if (b === undefined) {
      const s = segmentAt(seg, shifted);
      b = Math.max(floor, oracleBid((x) => competitionCdf(s, x, floor), value, floor, 0));
      oracleCache.set(key, b);
    }
    return b;
  };

  let requests = 0;
  let bids = 0;
  let noBids = 0;
  let bidErrors = 0;
  let wins = 0;
  let surplus = 0;
  let paid = 0;
  let oWins = 0;
  let oSurplus = 0;
  let surplusAfter = 0;
  let oSurplusAfter = 0;
  let winsAfter = 0;
  let oWinsAfter = 0;
  const latencies: number[] = [];
  const bidsAfterShift: Array<[number, number]> = [];
  const notices: Record<string, Record<string, number>> = {};
  let noticeErrors = 0;
  const pending = new Set<Promise<void>>();
  const track = (p: Promise<void>): void => {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  const notify = (event: string, url: string, price: string, loss: string, mtw: string, delayMs: number): void => {
    const target = url.replaceAll('${AUCTION_PRICE}', price).replaceAll('${AUCTION_CURRENCY}', 'USD').replaceAll('${AUCTION_LOSS}', loss).replaceAll('${AUCTION_MIN_TO_WIN}', mtw);
    track(
      (async () => {
        await sleep(delayMs);
        let status = 0;
        try {
          const res = await fetch(target, { signal: AbortSignal.timeout(5000) });
          await res.arrayBuffer();
          status = res.status;
        } catch {
          status = 0;
        }
        const byStatus = (notices[event] ??= {});
        byStatus[String(status)] = (byStatus[String(status)] ?? 0) + 1;
        if (status < 200 || status > 299) noticeErrors++;
      })(),
    );
  };

  const auction = async (n: number, atMs: number): Promise<void> => {
    let pick = rTraffic() * totalWeight;
    let seg = m.segments[0];
    for (const s of m.segments) {
      pick -= s.weight;
      if (pick < 0) {
        seg = s;
        break;
      }
    }
    const floor = seg.floorTo !== undefined ? Math.round((seg.floor + (seg.floorTo - seg.floor) * rMarket()) * 100) / 100 : seg.floor;
    const shifted = atMs >= shiftAtMs;
    const best = drawCompetition(segmentAt(seg, shifted), rMarket, floor);
    const threshold = Math.max(best, floor);
    const told = rMarket() < m.minToWinShare;
    const mtw = told ? String(Math.ceil(threshold * 100) / 100) : '';
    const d1 = 50 + 250 * rMarket();
    const billDelay = billScale * (sent.bill[0] + (sent.bill[1] - sent.bill[0]) * rMarket());
    // The oracle on the same auction.
    const ob = oracleAt(seg, floor, shifted);
    if (ob >= threshold) {
      oWins++;
      oSurplus += (value - ob) / 1000;
      if (shifted) {
        oWinsAfter++;
        oSurplusAfter += (value - ob) / 1000;
      }
    }
    const body = {
      id: `r${n}`,
      at: m.auction === 'first' ? 1 : 2,
      tmax: 200,
      cur: ['USD'],
      imp: [{ id: '1', banner: { w: seg.w, h: seg.h }, bidfloor: floor, bidfloorcur: 'USD' }],
      site: { domain: `${seg.publisher}.example`, publisher: { id: seg.publisher, name: seg.publisher } },
      device: { devicetype: seg.deviceType },
    };
    const t0 = performance.now();
    let res: Response;
    let text: string;
    try {
      res = await fetch(`${base}/openrtb2/bid`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-openrtb-version': '2.6', ...o.headers },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(1000),
      });
      text = await res.text();
    } catch {
      bidErrors++;
      return;
    }
    latencies.push(performance.now() - t0);
    if (res.status === 204) {
      noBids++;
      return;
    }
    if (res.status !== 200) {
      bidErrors++;
      return;
    }
    const bid = (JSON.parse(text) as BidJson).seatbid?.[0]?.bid[0];
    if (bid === undefined) {
      bidErrors++;
      return;
    }
    bids++;
    if (shifted) bidsAfterShift.push([atMs - shiftAtMs, bid.price]);
    if (bid.price >= threshold) {
      wins++;
      paid += bid.price / 1000;
      surplus += (value - bid.price) / 1000;
      if (shifted) {
        winsAfter++;
        surplusAfter += (value - bid.price) / 1000;
      }
      if (sent.win && bid.nurl) notify('win', bid.nurl, String(bid.price), '0', mtw, d1);
      if (bid.burl) notify('bill', bid.burl, String(bid.price), '0', mtw, billDelay);
    } else if (sent.loss && bid.lurl) {
      // The clearing price of a loss: what the winner paid (first price: the best competing bid).
      notify('loss', bid.lurl, sent.lossPrice ? String(Math.round(threshold * 10000) / 10000) : '', '102', mtw, d1);
    }
  };

  // Real time: the auctions at their Poisson times from the start, each sent without waiting for the one before.
  const start = performance.now();
  const endMs = seconds * 1000;
  let at = 0;
  for (;;) {
    at += (-Math.log(1 - rTraffic()) * 1000) / rate;
    if (at >= endMs) break;
    const wait = start + at - performance.now();
    if (wait > 1) await sleep(wait);
    requests++;
    track(auction(requests, at));
  }
  while (pending.size > 0) await Promise.all([...pending]);

  let shift: HttpRunResult['shift'];
  if (m.shift !== undefined) {
    const seg = m.segments[0];
    const optimum = oracleAt(seg, seg.floor, true);
    const windows = Math.ceil((endMs - shiftAtMs) / 10_000);
    const medianBy10s = Array.from({ length: windows }, (_, w) => median(bidsAfterShift.filter(([t]) => t >= w * 10_000 && t < (w + 1) * 10_000).map(([, p]) => p)));
    let convergedS: number | null = null;
    for (let w = windows - 1; w >= 0; w--) {
      if (!(Math.abs(medianBy10s[w] / optimum - 1) <= 0.05)) break;
      convergedS = w * 10;
    }
    shift = { atS: shiftAtMs / 1000, optimum, optimumBefore: oracleAt(seg, seg.floor, false), medianBy10s, convergedS, surplusAfter, oracleSurplusAfter: oSurplusAfter, winsAfter, oracleWinsAfter: oWinsAfter };
  }
  const sorted = latencies.sort((a, b) => a - b);
  return {
    market: m.name,
    seed: o.seed,
    rate,
    seconds,
    requests,
    bids,
    noBids,
    bidErrors,
    wins,
    surplus,
    paid,
    oracle: { wins: oWins, surplus: oSurplus },
    notices,
    noticeErrors,
    latencyMs: { p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99), max: sorted[sorted.length - 1] ?? NaN },
    shift,
    wallMs: Date.now() - wall0,
  };
}

/** Whether the market's exchange sends loss notices, as its exchanges file says it. */
export function lossNoticesOf(m: MarketShape): boolean {
  return m.notices?.loss ?? true;
}

export interface HttpBidder {
  readonly url: string;
  readonly pm2Home: string;
  stop(): Promise<void>;
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv, cwd: string, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

/**
 * The bidder for a short market: a private Redis on a free loopback port and `workers` PM2 workers
 * (scripts/start.js) in a temporary BIDDER_RUN_DIR and PM2_HOME, with the short markets' campaign
 * file and an exchanges file admitting this machine as the market's exchange. stop() stops the
 * workers, kills that PM2 daemon, stops the Redis and removes the directory.
 */
export async function startHttpBidder(o: { market: MarketShape; workers: number; root: string; log?: (s: string) => void; env?: Readonly<Record<string, string>> }): Promise<HttpBidder> {
  const log = o.log ?? (() => undefined);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-http-market-'));
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const redisLib = require(path.join(o.root, 'scripts', 'lib', 'redis.js')) as {
    startRedis(opts: { dir: string; log?: (s: string) => void }): Promise<{ url: string; pid: number; stop(): Promise<void> }>;
    freePort(): Promise<number>;
  };
  const redis = await redisLib.startRedis({ dir: path.join(dir, 'redis'), log });
  const pm2Home = path.join(dir, 'pm2');
  const campaigns = path.join(dir, 'campaigns.json');
  fs.writeFileSync(campaigns, JSON.stringify(campaignFile(SHORT_CAMPAIGNS)));
  const exchanges = path.join(dir, 'exchanges.json');
  fs.writeFileSync(exchanges, JSON.stringify({ exchanges: [{ name: 'market', addresses: ['127.0.0.0/8', '::1'], lossNotices: lossNoticesOf(o.market) }] }));
  const port = await redisLib.freePort();
  const adminPort = await redisLib.freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PM2_HOME: pm2Home,
    BIDDER_RUN_DIR: path.join(dir, 'run'),
    WORKERS: String(o.workers),
    PORT: String(port),
    ADMIN_PORT: String(adminPort),
    HOST: '127.0.0.1',
    REDIS_URL: redis.url,
    REDIS_ALLOW_VOLATILE: '1',
    CAMPAIGNS_FILE: campaigns,
    EXCHANGES_FILE: exchanges,
    TRACKING_BASE_URL: `http://127.0.0.1:${port}`,
    LOG_LEVEL: 'warn',
    ...o.env,
  };
  const startJs = path.join(o.root, 'scripts', 'start.js');
  const node = process.execPath;
  const stop = async (): Promise<void> => {
    const s = await run(node, [startJs, 'stop'], env, o.root, 60_000);
    if (s.code !== 0) log(`http market: scripts/start.js stop: exit ${s.code}\n${s.out}`);
    const pm2Bin = path.join(o.root, 'node_modules', 'pm2', 'bin', 'pm2');
    if (fs.existsSync(path.join(pm2Home, 'pm2.pid'))) await run(node, [pm2Bin, 'kill'], env, o.root, 30_000);
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  const r = await run(node, [startJs, 'start'], env, o.root, 180_000);
  const line = r.out.split('\n').find((l) => l.startsWith('BIDDER_READY '));
  if (r.code !== 0 || line === undefined) {
    await stop();
    throw new Error(`scripts/start.js start failed (exit ${r.code}):\n${r.out}`);
  }
  const ready = JSON.parse(line.slice('BIDDER_READY '.length)) as { url: string };
  log(`http market: ${o.workers} worker(s) at ${ready.url}, Redis ${redis.url}, PM2_HOME ${pm2Home}`);
  return { url: ready.url, pm2Home, stop };
}
