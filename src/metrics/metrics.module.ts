import { Global, Module } from '@nestjs/common';
import { ClusterMetrics } from './cluster-metrics';
import { MetricsRoutes } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * `GET /metrics` (this worker) and `GET /metrics/cluster` (the machine), on the admin port;
 * MetricsService, the registry every module registers its own figures with.
 */
@Global()
@Module({
  providers: [MetricsService, ClusterMetrics, MetricsRoutes],
  exports: [MetricsService],
})
export class MetricsModule {}
