import { Module } from '@nestjs/common';
import { DeliveryModule } from '../delivery/delivery.module';
import { ExchangesModule } from '../exchanges/exchanges.module';
import { LogModule } from '../log/log.module';
import { TargetingModule } from '../targeting/targeting.module';
import { TrackingModule } from '../tracking/tracking.module';
import { BidRoute } from './bid-route';
import { BiddingService } from './bidding.service';
import { DebugRoute } from './debug.route';

@Module({ imports: [LogModule, TargetingModule, DeliveryModule, TrackingModule, ExchangesModule], providers: [BiddingService, BidRoute, DebugRoute] })
export class BiddingModule {}
