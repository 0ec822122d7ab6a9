import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';
import { gzipSync } from 'node:zlib';
import { Injectable } from '@nestjs/common';
import { Exchanges } from '../exchanges/exchanges.module';
import { type HttpAnswer, JSON_TYPE } from '../http/answer';
import { Route } from '../http/route.decorator';
import type { HttpRoute, RouteRequest } from '../http/server';
import { type BidAnswer, BiddingService, SHED } from './bidding.service';

export const BID_PATH = '/openrtb2/bid';

/**
 * `POST /openrtb2/bid` on the public port: HTTP in and out; the server (src/http/server.ts) has read
 * and decoded the body within its limits, the work is in BiddingService. `r.remoteAddress` and
 * `r.headers` are what a check of the caller needs.
 */
@Injectable()
export class BidRoute implements HttpRoute {
  constructor(
    private readonly bidding: BiddingService,
    private readonly exchanges: Exchanges,
  ) {
    if (!exchanges.gate.open) this.admit = exchanges.admit;
  }

  /**
   * With EXCHANGES_FILE: the exchanges module's admission. The calling exchange is identified once,
   * from the request's head (its source index reaches `handle` as `r.caller`); an unknown caller
   * gets its 403 there, its body unread.
   */
  readonly admit?: (headers: IncomingHttpHeaders, remoteAddress: string | undefined) => HttpAnswer | number;

  @Route({ method: 'POST', path: BID_PATH, on: 'public' })
  handle(r: RouteRequest): HttpAnswer {
    const source = this.admit === undefined ? this.exchanges.open() : r.caller;
    return this.http(this.bidding.bid(r.body!, r.receivedAt, r.arrivedAt, source), r.headers);
  }

  refused(status: 400 | 413, reason: string, r: RouteRequest): HttpAnswer {
    // Counted per exchange as every request its admission let through (a refused body too).
    if (this.admit === undefined) this.exchanges.open();
    return this.http(this.bidding.refuse(status, reason, r.receivedAt), r.headers);
  }

  /** Status, headers and payload for an answer of the bidding service. */
  private http(answer: BidAnswer, h: IncomingHttpHeaders): HttpAnswer {
    const headers: OutgoingHttpHeaders = {};
    const version = h['x-openrtb-version'];
    // OpenRTB 2.6 §2.5: echoing the version is recommended.
    if (version !== undefined) headers['x-openrtb-version'] = version;
    if (answer.status === 204) {
      // Shed under overload: said apart, so that a load test (or an exchange) can tell it from a no-bid.
      if (answer.reason === SHED) headers['x-bidder-shed'] = '1';
      return { status: 204, headers, payload: undefined };
    }
    headers['content-type'] = JSON_TYPE;
    // Bytes (never null on a 200, 400 or 413): Node neither measures nor encodes a text.
    const bytes = answer.bytes ?? Buffer.alloc(0);
    const accept = h['accept-encoding'];
    if (answer.status === 200 && typeof accept === 'string' && accept.includes('gzip')) {
      // OpenRTB 2.6 §2.4: gzip the response when the exchange asks for it.
      headers['content-encoding'] = 'gzip';
      headers.vary = 'accept-encoding';
      return { status: 200, headers, payload: gzipSync(bytes) };
    }
    return { status: answer.status, headers, payload: bytes };
  }
}
