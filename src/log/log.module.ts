import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { Health } from '../health/health.service';
import { ComputedGauge } from '../metrics/fast-metrics';
import { LogStatsMetrics } from '../metrics/log-stats';
import { MetricsService } from '../metrics/metrics.service';
import { RedisModule } from '../redis/redis.module';
import { LogService } from './log.service';

/** The bid log's figures (LogService.stats(), mapped to metric names) and its health check. */
@Injectable()
class LogObservability implements OnModuleInit {
  constructor(
    private readonly log: LogService,
    private readonly metrics: MetricsService,
    private readonly health: Health,
  ) {}

  onModuleInit(): void {
    const stats = new LogStatsMetrics(this.metrics.registry, this.log);
    this.metrics.onScrape(() => stats.refresh());
    this.metrics.addComputed(
      new ComputedGauge('bidder_log_healthy', '1 while the log pipeline is within its memory bound and drops nothing.', 'min', () => [
        { value: this.log.isHealthy() ? 1 : 0, labels: {} },
      ]),
    );
    this.health.register({
      name: 'bid log',
      problem: () => (this.log.isHealthy() ? null : { level: 'not_ready', text: 'log pipeline over its memory bound or dropping records' }),
    });
  }
}

@Module({ imports: [RedisModule], providers: [LogService, LogObservability], exports: [LogService] })
export class LogModule {}
