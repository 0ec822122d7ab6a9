import { gzipSync } from 'node:zlib';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { BiddingService } from './bidding.service';

export const BID_PATH = '/openrtb2/bid';

/**
 * `POST /openrtb2/bid` (INTERFACE.md), registered on the Fastify instance itself rather than as a
 * Nest controller: the hot path skips Nest's router (its execution context, guards, pipes and
 * interceptors machinery), which cost ~15 µs per request under load (bench/README.md). Thin: HTTP
 * in and out; the work is in BiddingService.
 */
@Injectable()
export class BidRoute implements OnModuleInit {
  constructor(
    private readonly host: HttpAdapterHost,
    private readonly bidding: BiddingService,
  ) {}

  onModuleInit(): void {
    // An application context without HTTP (the micro-benchmark, some tests) has no adapter.
    const adapter = this.host.httpAdapter as HttpAdapterHost['httpAdapter'] | null;
    if (adapter === null) return;
    const fastify = adapter.getInstance<FastifyInstance>();
    // The handler sends the reply itself.
    fastify.post(BID_PATH, (req, reply) => {
      this.handle(req, reply);
    });
  }

  handle(req: FastifyRequest, reply: FastifyReply): void {
    const startedAt = performance.now();
    const h = req.headers;
    const answer = this.bidding.bid(req.body, h['content-encoding'], startedAt);
    const version = h['x-openrtb-version'];
    // OpenRTB 2.6 §2.5: echoing the version is recommended.
    if (version !== undefined) void reply.header('x-openrtb-version', version);
    if (answer.status === 204) {
      void reply.code(204).send();
      return;
    }
    void reply.code(answer.status).header('content-type', 'application/json; charset=utf-8');
    const accept = h['accept-encoding'];
    if (answer.status === 200 && typeof accept === 'string' && accept.includes('gzip')) {
      // OpenRTB 2.6 §2.4: gzip the response when the exchange asks for it.
      void reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding').send(gzipSync(answer.bytes ?? answer.body));
      return;
    }
    // Bytes when the bidding service has them: Fastify then neither measures nor encodes the text.
    void reply.send(answer.bytes ?? answer.body);
  }
}
