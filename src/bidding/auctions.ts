import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { CurrencyService } from '../currency/currency.service';
import { Clock } from '../delivery/clock';
import { PacingGate } from '../delivery/pacing.gate';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { MetricsService } from '../metrics/metrics.service';
import { CampaignStore } from '../targeting/campaign-store';
import { PayloadCodec } from '../tracking/payload';
import { BidAuction } from './auction';

/** The auction (auction.ts) in its three uses, built once per worker over the same campaigns, spend, shading and codec. */
@Injectable()
export class BidAuctions {
  /** The bid path's: the pacing gate, its effects applied. */
  readonly bid: BidAuction;
  /** The warm-up's (warm-up.ts): the same code without the pacing gate, whose checks count what they see. */
  readonly warm: BidAuction;
  /** `/debug/explain`'s: the bid path's, with the pacing gate's read-only checks (same verdicts, no effects). */
  readonly explain: BidAuction;

  constructor(
    @Inject(CONFIG) config: Config,
    store: CampaignStore,
    metrics: MetricsService,
    gate: PacingGate,
    spend: SpendService,
    codec: PayloadCodec,
    currency: CurrencyService,
    shading: ShadingService,
    clock: Clock,
  ) {
    this.bid = new BidAuction(config, store, metrics, gate, spend, codec, currency, shading, clock);
    this.warm = new BidAuction(config, store, metrics, null, spend, codec, currency, shading, clock, true);
    this.explain = new BidAuction(config, store, metrics, gate.readOnly, spend, codec, currency, shading, clock);
  }
}
