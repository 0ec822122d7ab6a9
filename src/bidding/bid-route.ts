import type { IncomingHttpHeaders, IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { gzipSync } from 'node:zlib';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { type HttpAnswer, internalError, JSON_TYPE, sendFastify, sendRaw } from '../http-answer';
import { type BidAnswer, BiddingService } from './bidding.service';
import { readBody } from './body';

export const BID_PATH = '/openrtb2/bid';

/** Whether a request line's target is the bid route (its path, with or without a query string). */
export function isBidTarget(url: string | undefined): boolean {
  return url !== undefined && url.startsWith(BID_PATH) && (url.length === BID_PATH.length || url.charCodeAt(BID_PATH.length) === 63 /* ? */);
}

/**
 * `POST /openrtb2/bid` (INTERFACE.md). Thin: HTTP in and out; the work is in BiddingService.
 *
 * Two ways in, with the same answers. `handleRaw` takes the request straight from the HTTP server
 * (src/app.ts routes bid POSTs to it before Fastify sees them): it skips Fastify's request and
 * reply objects, its hooks (five of them Nest's) and its content-type parsing: ~35 µs per request
 * on one process in a closed loop, 60–85 µs in the full load test (bench/README.md). The Fastify
 * route answers when the access log is on (so that Fastify logs every request) and to `inject()`.
 */
@Injectable()
export class BidRoute implements OnModuleInit {
  private readonly logger = new Logger('BidRoute');
  private readonly limit: number;

  constructor(
    private readonly host: HttpAdapterHost,
    private readonly bidding: BiddingService,
    @Inject(CONFIG) config: Config,
  ) {
    this.limit = config.bodyLimitBytes;
  }

  onModuleInit(): void {
    // An application context without HTTP (the micro-benchmark, some tests) has no adapter.
    const adapter = this.host.httpAdapter as HttpAdapterHost['httpAdapter'] | null;
    if (adapter === null) return;
    const fastify = adapter.getInstance<FastifyInstance>();
    fastify.post(BID_PATH, (req, reply) => {
      sendFastify(reply, this.answer(req.body, req.headers, performance.now()));
    });
  }

  /** The bid route without Fastify: reads the body (limit, Content-Length), bids, answers. */
  readonly handleRaw = (req: IncomingMessage, res: ServerResponse): void => {
    readBody(req, this.limit, (err, body) => {
      const startedAt = performance.now();
      let a: HttpAnswer;
      try {
        if (err === null) {
          a = this.answer(body, req.headers, startedAt);
        } else {
          a = this.http(this.bidding.refuse(err.status, err.reason, startedAt), req.headers);
          // The rest of a body over the limit is not worth reading before the next request would:
          // the connection closes after this answer instead.
          if (err.status === 413) a.headers.connection = 'close';
        }
      } catch (e) {
        // A bug, not the client's doing: what Fastify would make of it, without the process dying.
        this.logger.error({ msg: 'bid request failed', err: e });
        a = internalError();
      }
      sendRaw(res, a);
    });
  };

  private answer(body: unknown, h: IncomingHttpHeaders, startedAt: number): HttpAnswer {
    return this.http(this.bidding.bid(body, h['content-encoding'], startedAt), h);
  }

  /** Status, headers and payload for an answer of the bidding service. */
  private http(answer: BidAnswer, h: IncomingHttpHeaders): HttpAnswer {
    const headers: OutgoingHttpHeaders = {};
    const version = h['x-openrtb-version'];
    // OpenRTB 2.6 §2.5: echoing the version is recommended.
    if (version !== undefined) headers['x-openrtb-version'] = version;
    if (answer.status === 204) return { status: 204, headers, payload: undefined };
    headers['content-type'] = JSON_TYPE;
    const accept = h['accept-encoding'];
    if (answer.status === 200 && typeof accept === 'string' && accept.includes('gzip')) {
      // OpenRTB 2.6 §2.4: gzip the response when the exchange asks for it.
      headers['content-encoding'] = 'gzip';
      headers.vary = 'accept-encoding';
      return { status: 200, headers, payload: gzipSync(answer.bytes ?? answer.body) };
    }
    // Bytes when the bidding service has them: neither Fastify nor Node measures or encodes the text.
    return { status: answer.status, headers, payload: answer.bytes ?? answer.body };
  }
}
