/**
 * The bid path's warm-up, before a worker listens (WARM_UP_REQUESTS). A fresh worker runs its code
 * in V8's interpreter and baseline tiers until enough requests have gone through it, and compiles
 * the rest with TurboFan under its first seconds of traffic: the load test's first seconds at
 * 1300/s after a fresh start held the bidder's worst latencies (`npm run loadtest`, the
 * measured phase's first seconds).
 *
 * Without effects: each request goes through the bid path's preparation (JSON, privacy decision,
 * typed request, the request record and the user key), its auction (BidAuction.rehearse: the
 * pacing gate asked without a pacing draw, the bids written at their value: no shading) with the
 * auction's effects dropped (no budget taken, no pacing count), the answer's bytes and the log
 * lines' heads; nothing is logged, counted, reserved or learnt (test/bidding/warm-up.spec.ts).
 */
import type { Candidate } from '../targeting/types';

/** What a warm-up did. */
export interface WarmUpResult {
  /** Requests run (0 when there was nothing to run). */
  readonly requests: number;
  /** Distinct request bodies they cycled through. */
  readonly bodies: number;
  readonly ms: number;
}

/** The part of the bid path a warm-up runs: BiddingService.warm (what it returns is not used). */
export interface Warmable {
  warm(raw: Buffer): unknown;
}

/** Request ids of the warm-up: never seen by an exchange or the log. */
const ID_PREFIX = 'warm-up-';

/**
 * Bid requests that the campaigns' creatives would answer: one per creative, at most `max`, each
 * with the creative's format, inventory, device type, OS and country, a floor under its price, and
 * a user. Without campaigns, one banner request, so that the reader and the privacy code still run.
 */
export function warmUpBodies(candidates: readonly Candidate[], max: number): Buffer[] {
  const out: Buffer[] = [];
  const n = Math.min(candidates.length, max);
  for (let i = 0; i < n; i++) out.push(Buffer.from(JSON.stringify(requestFor(candidates[i], i)), 'utf8'));
  if (out.length === 0 && max > 0) out.push(Buffer.from(JSON.stringify(requestFor(null, 0)), 'utf8'));
  return out;
}

function requestFor(c: Candidate | null, i: number): Record<string, unknown> {
  const t = c?.targeting;
  const inventory = t?.inventory ?? (i % 2 === 0 ? 'site' : 'app');
  const imp: Record<string, unknown> = { id: '1', bidfloor: c ? Math.max(0, Math.floor(c.price * 50) / 100) : 0.1, bidfloorcur: 'USD', secure: c?.secure ? 1 : 0 };
  if (c?.kind === 'video' && c.video) {
    imp.video = { mimes: c.video.mimes, protocols: c.video.protocols, w: c.video.w, h: c.video.h, minduration: 1, maxduration: Math.max(1, c.video.duration) };
  } else if (c?.kind === 'native' && c.native) {
    const assets: unknown[] = [{ id: 1, required: 1, title: { len: 90 } }, { id: 2, required: 0, data: { type: 2, len: 140 } }];
    if (c.native.image) assets.push({ id: 3, required: 0, img: { type: 3, w: c.native.image.w, h: c.native.image.h } });
    if (c.native.icon) assets.push({ id: 4, required: 0, img: { type: 1, w: c.native.icon.w, h: c.native.icon.h } });
    imp.native = { ver: '1.2', request: JSON.stringify({ ver: '1.2', assets }) };
  } else {
    imp.banner = c?.banner ? { w: c.banner.w, h: c.banner.h, format: [{ w: c.banner.w, h: c.banner.h }] } : { w: 300, h: 250 };
  }
  const publisher = { id: `pub-${i}`, name: `Publisher ${i}` };
  const geo = { country: t?.countries[0] ?? 'USA', city: 'Springfield', lat: 39.78, lon: -89.65 };
  return {
    id: `${ID_PREFIX}${i}`,
    imp: [imp],
    ...(inventory === 'app'
      ? { app: { id: `app-${i}`, bundle: `com.example.app${i}`, name: `App ${i}`, publisher } }
      : { site: { id: `site-${i}`, domain: `site${i}.example`, page: `https://site${i}.example/article?x=1`, publisher } }),
    device: { ua: 'Mozilla/5.0', ip: '192.0.2.1', devicetype: t?.deviceTypes[0] ?? 2, os: t?.os[0] ?? 'android', geo, ifa: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` },
    user: { id: `warm-up-user-${i}` },
    at: 1,
    tmax: 200,
    cur: ['USD'],
    source: { tid: `warm-up-tid-${i}` },
    regs: { coppa: 0 },
  };
}

/**
 * Runs `requests` requests, cycling through `bodies`, or until `maxMs` have passed. A request the
 * bid path refuses is counted like any other: the warm-up only exercises the code.
 */
export function warmUp(target: Warmable, bodies: readonly Buffer[], requests: number, maxMs: number, now: () => number = () => performance.now()): WarmUpResult {
  const start = now();
  let done = 0;
  if (bodies.length > 0) {
    for (; done < requests; done++) {
      try {
        target.warm(bodies[done % bodies.length]);
      } catch {
        // A body the bid path refuses (a 400): exercised all the same.
      }
      if ((done & 63) === 63 && now() - start >= maxMs) {
        done++;
        break;
      }
    }
  }
  return { requests: done, bodies: bodies.length, ms: Math.round((now() - start) * 10) / 10 };
}
