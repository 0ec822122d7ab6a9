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

/**
 * How far a payload's time may be ahead of now, both on Redis's clock (src/tracking/redis-clock.ts):
 * the skew stated for notices. Workers stamp and check on Redis's clock, so what is left is a worker
 * that has not read it yet (Redis away since its start), stamping on its own.
 */
export const FUTURE_SKEW_MS = 10 * 60_000;

/** Why a notice was refused, as `bidder_notices_refused_total` labels it. */
export type RefusalCode = `payload_${PayloadError['reason']}` | 'expired' | 'future' | 'price_invalid' | 'price_currency' | 'price_above_bid';

export class NoticeError extends Error {
  constructor(
    readonly status: 400 | 403 | 410,
    readonly reason: string,
    readonly code: RefusalCode,
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

/** True when the value is missing, empty or blank (Number('  ') is 0, not unknown), or still an unsubstituted `${MACRO}`. */
function unsubstituted(v: string | undefined): boolean {
  return v === undefined || v.trim() === '' || (v.startsWith('${') && v.endsWith('}'));
}

/**
 * How far a win or bill price may exceed our bid (in the bid's currency) and still be what we paid:
 * one tick of the 4th decimal (an exchange that rounds the clearing price up, or a bid priced before
 * bid prices were all on 4 decimals), plus, when the exchange reported the price in another currency
 * than the bid's, PRICE_CONVERSION_TOLERANCE of the bid (it converted with its own rates, we convert
 * back with ours; published daily rates of one day rarely differ by more than 1 %). Beyond: 400.
 */
export const PRICE_TICK_TOLERANCE = 0.0001;
export const PRICE_CONVERSION_TOLERANCE = 0.02;
/** Float noise of a decimal price read back (2.0001 − 2 is not exactly 0.0001). */
const PRICE_EPSILON = 1e-9;

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
    if (e instanceof PayloadError) throw new NoticeError(e.reason === 'missing' ? 400 : 403, `payload ${e.reason}`, `payload_${e.reason}`);
    throw e;
  }
  if (payload.ts < now - maxAgeMs) throw new NoticeError(410, 'notice expired: its bid is older than the notice age limit', 'expired');
  if (payload.ts > now + FUTURE_SKEW_MS) throw new NoticeError(400, 'notice from the future', 'future');
  let price: number | null = null;
  const rawPrice = one(q, 'price');
  const rawCur = one(q, 'cur');
  const curOf = unsubstituted(rawCur) || rawCur!.toUpperCase() === payload.cur ? null : rawCur!.toUpperCase();
  if (!unsubstituted(rawPrice)) {
    const n = Number(rawPrice);
    if (!Number.isFinite(n)) throw new NoticeError(400, 'price is not a number', 'price_invalid');
    if (n < 0) throw new NoticeError(400, 'price is negative', 'price_invalid');
    let inBidCur: number | null = n;
    if (curOf !== null) {
      inBidCur = rates.convert(n, curOf, payload.cur);
      if (inBidCur === null) throw new NoticeError(400, 'price currency unknown', 'price_currency');
    }
    // What we paid (second or first price) never exceeds what we bid, but by the exchanges' rounding
    // and conversion. A loss's price is the winner's (OpenRTB 2.6 §4.4, lurl): above ours, as it should be.
    if (event !== 'loss') {
      const most = payload.price * (1 + (curOf === null ? 0 : PRICE_CONVERSION_TOLERANCE)) + PRICE_TICK_TOLERANCE + PRICE_EPSILON;
      if (inBidCur > most) throw new NoticeError(400, 'price above the bid', 'price_above_bid');
    }
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
