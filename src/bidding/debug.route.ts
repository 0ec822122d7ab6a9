import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { PacingGate } from '../delivery/pacing.gate';
import { errorAnswer, type HttpAnswer, jsonAnswer } from '../http/answer';
import { HttpServers } from '../http/http.module';
import type { HttpRoute, RouteRequest } from '../http/server';
import { readJson } from '../openrtb/json';
import { InvalidRequestError, parseBidRequest } from '../openrtb/parse';
import { CurrencyService } from '../currency/currency.service';
import { PrivacyPolicy } from '../privacy/policy';
import { readPrivacySignals } from '../privacy/signals';
import { Auction, CampaignStore } from '../targeting/campaign-store';

export const EXPLAIN_PATH = '/debug/explain';

/**
 * `POST /debug/explain` on the admin port (only with DEBUG_ENDPOINTS=true): for a bid request, every
 * candidate of each imp with the filter that rejected it, or null when it was eligible — the no-bid
 * reasons an operator needs to see why a campaign does not bid. Read-only: no log record, no budget taken.
 */
@Injectable()
export class DebugRoute implements HttpRoute, OnModuleInit {
  private readonly auction: Auction;

  constructor(
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
    @Inject(CONFIG) private readonly config: Config,
    private readonly store: CampaignStore,
    gate: PacingGate,
    private readonly currency: CurrencyService,
    private readonly policy: PrivacyPolicy,
  ) {
    this.auction = new Auction(currency.current(), gate);
  }

  onModuleInit(): void {
    this.servers?.admin.route({ method: 'POST', path: EXPLAIN_PATH, route: this });
  }

  handle(r: RouteRequest): HttpAnswer {
    if (!this.config.debugEndpoints) return errorAnswer(404, 'debug endpoints are off (DEBUG_ENDPOINTS=true turns them on)');
    try {
      const body = readJson(r.body!);
      const privacy = this.policy.decide(readPrivacySignals(body));
      const br = parseBidRequest(body);
      br.userKey = privacy.userData ? br.userId : '';
      const rates = this.currency.current();
      this.auction.rates = rates;
      const cur = rates.chooseBidCurrency(br.cur);
      const index = this.store.current();
      const imps = br.imps.map((imp) => ({
        impid: imp.id,
        ...(cur === null ? { reason: 'currency', candidates: [] } : this.auction.explain(index, imp, br, cur, privacy.userData)),
      }));
      return jsonAnswer(200, { id: br.id, cur, privacy: privacy.reason, imps });
    } catch (e) {
      if (e instanceof InvalidRequestError) return errorAnswer(400, e.reason);
      throw e;
    }
  }
}
