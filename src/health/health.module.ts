import { Global, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { RedisModule } from '../redis/redis.module';
import { HealthRoutes } from './health.routes';
import { Health } from './health.service';
import { Lifecycle } from './lifecycle';
import { WorkerChecks } from './worker-checks';

@Injectable()
class HealthMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly health: Health,
  ) {}

  onModuleInit(): void {
    this.metrics.gauge('bidder_ready', '1 when this worker answers /health/ready with 200.', 'sum', [], () => [
      { value: this.health.state().status === 'not ready' ? 0 : 1, labels: {} },
    ]);
    this.metrics.gauge('bidder_degraded', '1 while /health/ready lists warnings (serving, but look at them).', 'max', [], () => [
      { value: this.health.state().status === 'degraded' ? 1 : 0, labels: {} },
    ]);
  }
}

/** Health: the registry of checks (Health), the worker's own checks (Redis, the spill directory), the worker's lifecycle, and the probes' routes. */
@Global()
@Module({ imports: [RedisModule], providers: [Health, WorkerChecks, Lifecycle, HealthMetrics, HealthRoutes], exports: [Health, Lifecycle] })
export class HealthModule {}
