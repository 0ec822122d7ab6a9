import { Controller, Inject, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { InvalidRequestError, parseBidRequest } from '../openrtb/parse';
import { Auction, CampaignStore, chooseBidCurrency, staticRates } from '../targeting/campaign-store';
import { PacingGate } from '../tracking/pacing.gate';
import { BodyError, decodeBody, parseJson } from './body';

/**
 * `POST /debug/explain` (only with DEBUG_ENDPOINTS=true): for a bid request, every candidate of
 * each imp with the filter that rejected it, or null when it was eligible — the no-bid reasons an
 * operator needs to see why a campaign does not bid. Read-only: no log record, no budget taken.
 */
@Controller('debug')
export class DebugController {
  private readonly auction: Auction;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly store: CampaignStore,
    gate: PacingGate,
  ) {
    this.auction = new Auction(staticRates, gate);
  }

  @Post('explain')
  explain(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    if (!this.config.debugEndpoints) {
      void reply.code(404).send({ error: 'debug endpoints are off (DEBUG_ENDPOINTS=true turns them on)' });
      return;
    }
    try {
      const body = parseJson(decodeBody(req.body, req.headers['content-encoding'], this.config.bodyLimitBytes).toString('utf8'));
      const br = parseBidRequest(body);
      const cur = chooseBidCurrency(br.cur, staticRates);
      const index = this.store.current();
      const imps = br.imps.map((imp) => ({
        impid: imp.id,
        ...(cur === null ? { reason: 'currency', candidates: [] } : this.auction.explain(index, imp, br, cur, !br.coppa)),
      }));
      void reply.code(200).send({ id: br.id, cur, imps });
    } catch (e) {
      if (e instanceof BodyError) void reply.code(e.status).send({ error: e.reason });
      else if (e instanceof InvalidRequestError) void reply.code(400).send({ error: e.reason });
      else throw e;
    }
  }
}
