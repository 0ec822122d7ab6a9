import { Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { RedisModule } from '../redis/redis.module';
import { TargetingModule } from '../targeting/targeting.module';
import { CapsService } from './caps.service';
import { NoticeStats } from './notice-stats';
import { TrackingMetrics } from './tracking.metrics';
import { PacingGate } from './pacing.gate';
import { SpendService } from './spend.service';
import { TrackingRoutes } from './tracking.routes';

@Module({
  imports: [LogModule, RedisModule, TargetingModule],
  providers: [TrackingRoutes, SpendService, CapsService, PacingGate, NoticeStats, TrackingMetrics],
  exports: [SpendService, CapsService, PacingGate, NoticeStats],
})
export class TrackingModule {}
