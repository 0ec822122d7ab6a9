import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { PacingGate } from '../delivery/pacing.gate';
import { errorAnswer, type HttpAnswer, jsonAnswer } from '../http/answer';
import { type FrontRequest, type FrontRoute, HttpFront } from '../http/front';
import { readJson } from '../openrtb/json';
import { InvalidRequestError, parseBidRequest } from '../openrtb/parse';
import { Auction, CampaignStore, chooseBidCurrency, staticRates } from '../targeting/campaign-store';

export const EXPLAIN_PATH = '/debug/explain';

/**
 * `POST /debug/explain` on the admin port (only with DEBUG_ENDPOINTS=true): for a bid request, every
 * candidate of each imp with the filter that rejected it, or null when it was eligible — the no-bid
 * reasons an operator needs to see why a campaign does not bid. Read-only: no log record, no budget taken.
 */
@Injectable()
export class DebugRoute implements FrontRoute, OnModuleInit {
  private readonly auction: Auction;

  constructor(
    @Optional() @Inject(HttpFront) private readonly front: HttpFront | null,
    @Inject(CONFIG) private readonly config: Config,
    private readonly store: CampaignStore,
    gate: PacingGate,
  ) {
    this.auction = new Auction(staticRates, gate);
  }

  onModuleInit(): void {
    this.front?.route({ method: 'POST', path: EXPLAIN_PATH, port: 'admin', route: this });
  }

  handle(r: FrontRequest): HttpAnswer {
    if (!this.config.debugEndpoints) return errorAnswer(404, 'debug endpoints are off (DEBUG_ENDPOINTS=true turns them on)');
    try {
      const br = parseBidRequest(readJson(r.body!));
      br.userKey = br.userId;
      const cur = chooseBidCurrency(br.cur, staticRates);
      const index = this.store.current();
      const imps = br.imps.map((imp) => ({
        impid: imp.id,
        ...(cur === null ? { reason: 'currency', candidates: [] } : this.auction.explain(index, imp, br, cur, !br.coppa)),
      }));
      return jsonAnswer(200, { id: br.id, cur, imps });
    } catch (e) {
      if (e instanceof InvalidRequestError) return errorAnswer(400, e.reason);
      throw e;
    }
  }
}
