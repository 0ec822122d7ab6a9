import { Global, Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { TargetingModule } from '../targeting/targeting.module';
import { ClusterMetrics } from './cluster-metrics';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/** `GET /metrics` (this worker) and `GET /metrics/cluster` (the machine); MetricsService for the bid path. */
@Global()
@Module({
  imports: [LogModule, TargetingModule],
  controllers: [MetricsController],
  providers: [MetricsService, ClusterMetrics],
  exports: [MetricsService],
})
export class MetricsModule {}
