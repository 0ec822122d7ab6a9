import { Module } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { DeliveryModule } from '../delivery/delivery.module';
import { ExchangesModule } from '../exchanges/exchanges.module';
import { LogModule } from '../log/log.module';
import { PiiHasher } from '../privacy/pii-hasher';
import { PrivacyPolicy } from '../privacy/policy';
import { TargetingModule } from '../targeting/targeting.module';
import { TrackingModule } from '../tracking/tracking.module';
import { BidAuction } from './auction';
import { BidRoute } from './bid-route';
import { BiddingService } from './bidding.service';
import { DebugRoute } from './debug.route';
import { ExplainService } from './explain.service';
import { RequestPreparer } from './prepare';

/** One preparer per worker: the privacy decision and the keyed hash, shedding and LOG_RAW_PII from the config. */
const preparer = { provide: RequestPreparer, useFactory: (policy: PrivacyPolicy, hasher: PiiHasher, c: Config) => new RequestPreparer(policy, hasher, c), inject: [PrivacyPolicy, PiiHasher, CONFIG] };

/** The bid path (BiddingService, its route) and `/debug/explain` (ExplainService, its route), over one preparer and one auction. */
@Module({
  imports: [LogModule, TargetingModule, DeliveryModule, TrackingModule, ExchangesModule],
  providers: [preparer, BidAuction, BiddingService, ExplainService, BidRoute, DebugRoute],
})
export class BiddingModule {}
