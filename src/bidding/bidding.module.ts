import { Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { TargetingModule } from '../targeting/targeting.module';
import { BiddingController } from './bidding.controller';
import { BiddingService } from './bidding.service';

@Module({ imports: [LogModule, TargetingModule], controllers: [BiddingController], providers: [BiddingService] })
export class BiddingModule {}
