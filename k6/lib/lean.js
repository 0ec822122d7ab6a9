// The per-request side of the load generator: bodies spliced from pre-serialized templates, a cheap
// check of every answer, and the full validation (validate.js) on a sample. Pure JavaScript shared
// by k6 (bid.js) and Node (tests), with nothing allocated per request beyond the body and the id.

import { validate } from './validate.js';

/** Every body starts with this, then the request's id, then its template's tail. */
export const HEAD = '{"id":"';

/** A template's tail: the JSON text that follows the id (`",` and the rest of the request). */
export function tailOf(entry) {
  return `",${entry.rest}`;
}

/** The ids a VU sends are this prefix and its own request count: unique in a run, as VU ids are. */
export function idPrefix(runId, vuId) {
  return `${runId}-${vuId}-`;
}

/** A request's body: the id spliced in front of the template's tail, by string concatenation. */
export function requestBody(id, tail) {
  return HEAD + id + tail;
}

/** The bidder marks a request it shed under overload with this header on a fast 204 (k6 canonicalizes its name). */
export const SHED_HEADER = 'X-Bidder-Shed';

/** Templates a VU holds, and how many requests it sends between two reads of the shared pool. */
export const WINDOW = 16;
export const EVERY = 32;

/**
 * Hands a VU its next template. Reading the shared pool deserializes an element (k6's SharedArray,
 * ~20 µs for a template), so each VU keeps a window of `local` templates, starting at its own offset
 * (VU n at n x `local`), and slides it along the pool by one template every `every` requests: every
 * template is still sent, at 1/`every` of the reads. The window is small because a VU reads it
 * whole before its first request, and in a short run at a low rate a VU sends few requests.
 * `get(i)` reads element i of the pool.
 */
export class Cursor {
  constructor(get, size, start, local = WINDOW, every = EVERY) {
    this.get = get;
    this.size = size;
    this.local = Math.min(local, size);
    this.every = every;
    this.tails = new Array(this.local);
    this.indexes = new Array(this.local);
    this.next = start % size;
    this.k = 0;
    /** Pool index of the template `take()` returned last (for the sampled validation's meta). */
    this.index = 0;
    for (let i = 0; i < this.local; i++) this.load(i);
  }

  load(slot) {
    this.indexes[slot] = this.next;
    this.tails[slot] = this.get(this.next);
    this.next = this.next + 1 === this.size ? 0 : this.next + 1;
  }

  take() {
    const k = ++this.k;
    if (k % this.every === 0) this.load((k / this.every) % this.local);
    const slot = k % this.local;
    this.index = this.indexes[slot];
    return this.tails[slot];
  }
}

/**
 * The cheap check every answer gets: a 204 (no bid), or a 200 whose body starts with the request's
 * id, as the bidder and the baseline write it, and holds a seatbid. Returns '' or a short reason.
 */
export function quickCheck(status, body, id) {
  if (status === 204) return '';
  if (status !== 200) return status === 0 ? 'no response' : `status ${status}`;
  if (typeof body !== 'string' || !body.startsWith(HEAD) || !body.startsWith(id, HEAD.length) || body.charCodeAt(HEAD.length + id.length) !== 34) {
    return 'body does not start with the request id';
  }
  if (body.indexOf('"seatbid"', HEAD.length + id.length) < 0) return 'no seatbid';
  return '';
}

/**
 * quickCheck, then on a sample (`sampled`) the full validation of validate.js against the
 * template's meta (`meta()` reads it only then). Returns null when the answer is acceptable, else
 * {why: 'status' | 'marker' | 'validation', reason}.
 */
export function checkAnswer(status, body, id, strict, sampled, meta) {
  const quick = quickCheck(status, body, id);
  if (quick !== '') return { why: status === 200 || status === 204 ? 'marker' : 'status', reason: quick };
  if (!sampled) return null;
  const reason = validate(status, body, id, meta(), strict);
  return reason === '' ? null : { why: 'validation', reason };
}

/**
 * The win notice of the first bid of a 200 body, found by string search (no JSON.parse): its
 * `nurl` with the clearing price (80 % of the bid price) and currency filled in, or null.
 */
export function winNotice(body) {
  const n = body.indexOf('"nurl":"');
  const p = body.indexOf('"price":');
  if (n < 0 || p < 0) return null;
  const url = body.slice(n + 8, body.indexOf('"', n + 8));
  const price = parseFloat(body.slice(p + 8, p + 32));
  if (!(price > 0)) return null;
  return url.replace('${AUCTION_PRICE}', (price * 0.8).toFixed(4)).replace('${AUCTION_CURRENCY}', 'USD');
}

/**
 * The impression tracker of the first bid of a 200 body, as a browser finds it in the markup (the
 * banner pixel, the native event tracker, the VAST <Impression>), by string search: its URL carries
 * the browser signature, which differs from the notices'. Null when the markup has none.
 */
export function impressionTracker(body) {
  const at = body.indexOf('/t/imp?p=');
  if (at < 0) return null;
  const start = body.lastIndexOf('http', at);
  if (start < 0) return null;
  let end = at;
  while (end < body.length) {
    const c = body.charCodeAt(end);
    // ' (banner attribute), " or \ (the native markup, a JSON string in a JSON string), ] (VAST CDATA), <
    if (c === 39 || c === 34 || c === 92 || c === 93 || c === 60) break;
    end++;
  }
  return body.slice(start, end).replace(/&amp;/g, '&');
}
