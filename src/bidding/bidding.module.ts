import { Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { TargetingModule } from '../targeting/targeting.module';
import { TrackingModule } from '../tracking/tracking.module';
import { BidRoute } from './bid-route';
import { BiddingService } from './bidding.service';
import { DebugController } from './debug.controller';

@Module({ imports: [LogModule, TargetingModule, TrackingModule], controllers: [DebugController], providers: [BiddingService, BidRoute] })
export class BiddingModule {}
