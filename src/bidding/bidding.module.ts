import { Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { TargetingModule } from '../targeting/targeting.module';
import { TrackingModule } from '../tracking/tracking.module';
import { BiddingController } from './bidding.controller';
import { BiddingService } from './bidding.service';

@Module({ imports: [LogModule, TargetingModule, TrackingModule], controllers: [BiddingController], providers: [BiddingService] })
export class BiddingModule {}
