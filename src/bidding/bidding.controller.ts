import { gzipSync } from 'node:zlib';
import { Controller, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BiddingService } from './bidding.service';

/** `POST /openrtb2/bid` (INTERFACE.md). Thin: HTTP in and out; the work is in BiddingService. */
@Controller('openrtb2')
export class BiddingController {
  constructor(private readonly bidding: BiddingService) {}

  @Post('bid')
  bid(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
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
      void reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding').send(gzipSync(answer.body));
      return;
    }
    void reply.send(answer.body);
  }
}
