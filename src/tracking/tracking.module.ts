import { Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { RedisModule } from '../redis/redis.module';
import { TargetingModule } from '../targeting/targeting.module';
import { CapsService } from './caps.service';
import { PacingGate } from './pacing.gate';
import { SpendService } from './spend.service';
import { TrackingController } from './tracking.controller';

@Module({
  imports: [LogModule, RedisModule, TargetingModule],
  controllers: [TrackingController],
  providers: [SpendService, CapsService, PacingGate],
  exports: [SpendService, CapsService, PacingGate],
})
export class TrackingModule {}
