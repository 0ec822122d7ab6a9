/**
 * Reading a notice or tracker call: the signed payload (shared by every URL of a bid, signed for the
 * audience of the event) plus the exchange's substituted macros (OpenRTB 2.6 §4.4). A macro the
 * exchange left unsubstituted (`${AUCTION_PRICE}` arrives literally, or empty) is "unknown", not an
 * error. Notices have an age limit. Pure: no I/O.
 */
import type { Rates } from '../currency/rates';
import { type Audience, PayloadError, type PayloadCodec, type TrackingPayload } from './payload';

export const NOTICE_EVENTS = ['win', 'bill', 'loss', 'imp', 'click'] as const;
export type NoticeEvent = (typeof NOTICE_EVENTS)[number];

export function isNoticeEvent(s: string): s is NoticeEvent {
  return (NOTICE_EVENTS as readonly string[]).includes(s);
}

/** Who calls each URL: win, bill and loss come from the exchange's servers, impressions and clicks from browsers. */
export function audienceOf(event: NoticeEvent): Audience {
  return event === 'imp' || event === 'click' ? 'browser' : 's2s';
}

/** How far a payload's time may be ahead of ours (clocks of hosts disagree a little, not by this much). */
const FUTURE_SKEW_MS = 10 * 60_000;

export class NoticeError extends Error {
  constructor(
    readonly status: 400 | 403 | 410,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'NoticeError';
  }
}

export interface Notice {
  readonly event: NoticeEvent;
  readonly payload: TrackingPayload;
  /** Clearing price (CPM) in the bid's currency; null when the exchange did not substitute it. */
  readonly price: number | null;
  /** OpenRTB loss reason code (lurl), null when absent or unsubstituted. */
  readonly loss: number | null;
  /** `${AUCTION_MIN_TO_WIN}` in the bid's currency: the lowest price that would have won; null when absent or not a price. */
  readonly minToWin: number | null;
}

export type Query = Record<string, string | string[] | undefined>;

function one(q: Query, key: string): string | undefined {
  const v = q[key];
  return Array.isArray(v) ? v[0] : v;
}

/** True when the value is missing, empty, or still an unsubstituted `${MACRO}`. */
function unsubstituted(v: string | undefined): boolean {
  return v === undefined || v === '' || (v.startsWith('${') && v.endsWith('}'));
}

/** Prices may exceed the bid by float noise only. */
const PRICE_EPSILON = 1e-6;

/**
 * Reads one notice; throws NoticeError. `maxAgeMs`: a notice about a bid older than this is refused
 * (410): a bill must arrive while its bid's dedupe marker still exists (BILL_DEDUPE_TTL_S), or a
 * replay after the marker expired would count again.
 */
export function readNotice(event: NoticeEvent, q: Query, codec: PayloadCodec, maxAgeMs: number, rates: Rates, now = Date.now()): Notice {
  let payload: TrackingPayload;
  try {
    payload = codec.decode(one(q, 'p'), one(q, 's'), audienceOf(event));
  } catch (e) {
    if (e instanceof PayloadError) throw new NoticeError(e.reason === 'missing' ? 400 : 403, `payload ${e.reason}`);
    throw e;
  }
  if (payload.ts < now - maxAgeMs) throw new NoticeError(410, 'notice expired: its bid is older than the notice age limit');
  if (payload.ts > now + FUTURE_SKEW_MS) throw new NoticeError(400, 'notice from the future');
  let price: number | null = null;
  const rawPrice = one(q, 'price');
  const rawCur = one(q, 'cur');
  const curOf = unsubstituted(rawCur) || rawCur!.toUpperCase() === payload.cur ? null : rawCur!.toUpperCase();
  if (!unsubstituted(rawPrice)) {
    const n = Number(rawPrice);
    if (!Number.isFinite(n)) throw new NoticeError(400, 'price is not a number');
    if (n < 0) throw new NoticeError(400, 'price is negative');
    let inBidCur: number | null = n;
    if (curOf !== null) {
      inBidCur = rates.convert(n, curOf, payload.cur);
      if (inBidCur === null) throw new NoticeError(400, 'price currency unknown');
    }
    // A second-price or first-price clearing price never exceeds what we bid.
    if (inBidCur > payload.price * (1 + PRICE_EPSILON) + PRICE_EPSILON) throw new NoticeError(400, 'price above the bid');
    price = inBidCur;
  }
  let loss: number | null = null;
  const rawLoss = one(q, 'loss');
  if (!unsubstituted(rawLoss)) {
    const n = Number(rawLoss);
    if (Number.isInteger(n) && n >= 0) loss = n;
  }
  // Only informs bid shading: a value that is no price is ignored, never a reason to refuse a bill.
  let minToWin: number | null = null;
  const rawMtw = one(q, 'mtw');
  if (!unsubstituted(rawMtw)) {
    const n = Number(rawMtw);
    if (Number.isFinite(n) && n >= 0) minToWin = curOf === null ? n : rates.convert(n, curOf, payload.cur);
  }
  return { event, payload, price, loss, minToWin };
}
