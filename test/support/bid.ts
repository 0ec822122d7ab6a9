/** Bid requests and tracking calls over HTTP, as the specs that run a bidder send them. */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { request } from './app';

/** A bid endpoint's answer: the bids of a 200 (every seat's, in order; none otherwise), its text and headers. */
export interface BidAnswer<B> {
  status: number;
  bids: B[];
  text: string;
  headers: IncomingHttpHeaders;
  /** Shed under overload (`x-bidder-shed`): a 204 said apart from a no-bid. */
  shed: boolean;
}

/**
 * Posts a bid request (an object, sent as its JSON, or the text itself) to `base`'s bid endpoint.
 * A status other than 200 or 204, or other than `expect` when given, fails the test.
 */
export async function postBid<B>(base: string, body: object | string, expect?: number, headers?: Record<string, string>): Promise<BidAnswer<B>> {
  const r = await request(`${base}/openrtb2/bid`, { body: typeof body === 'string' ? body : JSON.stringify(body), headers });
  const text = r.body.toString();
  if (expect !== undefined) assert.equal(r.status, expect, text);
  else assert.ok(r.status === 200 || r.status === 204, `${r.status} ${text}`);
  const bids = r.status === 200 ? (JSON.parse(text) as { seatbid: Array<{ bid: B[] }> }).seatbid.flatMap((s) => s.bid) : [];
  return { status: r.status, bids, text, headers: r.headers, shed: r.headers['x-bidder-shed'] === '1' };
}

/** The first bid `base` answers to a bid request, null for a no-bid (204). */
export async function firstBid<B>(base: string, body: object | string): Promise<B | null> {
  return (await postBid<B>(base, body)).bids[0] ?? null;
}

/**
 * Calls a bid's tracking URL (nurl, burl, lurl, a tracker) on `base`, as the exchange or the browser
 * would: its macros (`${AUCTION_PRICE}`...) replaced by `macros`, `&amp;` read as `&` (a URL taken
 * from markup). Resolves with the status.
 */
export async function fire(base: string, url: string, macros: Record<string, string>): Promise<number> {
  let u = url.replace(/&amp;/g, '&');
  for (const [k, v] of Object.entries(macros)) u = u.replaceAll('${' + k + '}', v);
  const parsed = new URL(u);
  return (await request(`${base}${parsed.pathname}${parsed.search}`, { method: 'GET' })).status;
}
