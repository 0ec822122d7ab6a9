import { Inject, Injectable, Logger, Module, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { Health } from '../health/health.service';
import { LogStatsMetrics } from '../metrics/log-stats';
import { MetricsService } from '../metrics/metrics.service';
import { RedisModule } from '../redis/redis.module';
import { RedisService } from '../redis/redis.service';
import { type Backlog, readBacklog } from '../bidlog/reader';
import { logListKeys } from '../bidlog/keys';
import { LogService } from './log.service';
import { staggeredInterval, type Periodic } from '../timers';

/** How often each worker looks at what waits in Redis for the shipper: every flush, between 1 and 10 s. */
function backlogEveryMs(config: Config): number {
  return Math.min(10_000, Math.max(1_000, config.logFlushIntervalMs));
}

/**
 * What waits in the Redis log lists for the shipper: read every flush period, 1 to 10 s (three cheap
 * commands per list), in the metrics, and a "degraded" warning on /health/ready past LOG_BACKLOG_WARN_BYTES:
 * the shipper is not keeping up (or not running), and Redis fills until it refuses the pushes.
 */
@Injectable()
class LogBacklog implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('LogBacklog');
  private last: Backlog | null = null;
  private timer: Periodic | null = null;
  private readonly keys: string[];

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly metrics: MetricsService,
    private readonly health: Health,
  ) {
    this.keys = logListKeys(config);
  }

  onModuleInit(): void {
    const warn = this.config.logBacklogWarnBytes;
    this.health.register({
      name: 'log backlog',
      problem: () =>
        warn > 0 && this.last !== null && this.last.bytes > warn
          ? { level: 'degraded', text: `bid log backlog in Redis: ${this.last.bytes} bytes in ${this.last.frames} frames, over LOG_BACKLOG_WARN_BYTES=${warn} (is the shipper running?)` }
          : null,
    });
    this.metrics.gauge('bidder_log_backlog_bytes', 'Bytes of bid log frames waiting in Redis for the shipper (Redis\u2019s estimate); -1 before the first reading.', 'max', [], () => [
      { value: this.last?.bytes ?? -1, labels: {} },
    ]);
    this.metrics.gauge('bidder_log_backlog_frames', 'Bid log frames waiting in Redis for the shipper.', 'max', [], () => [{ value: this.last?.frames ?? -1, labels: {} }]);
    this.metrics.gauge('bidder_log_backlog_age_seconds', 'Age of the oldest record waiting in Redis for the shipper (0 when none).', 'max', [], () => [
      { value: this.last?.oldestTs != null ? (Date.now() - this.last.oldestTs) / 1000 : 0, labels: {} },
    ]);
    this.timer = staggeredInterval(() => void this.read(), backlogEveryMs(this.config));
    this.redis.onReady(() => void this.read());
  }

  onApplicationShutdown(): void {
    this.timer?.stop();
    this.timer = null;
  }

  private async read(): Promise<void> {
    if (!this.redis.isReady()) return;
    try {
      this.last = await readBacklog(this.redis.connection(), this.keys);
    } catch (e) {
      // Keeps the last reading; Redis trouble shows elsewhere (the log pipeline, readiness).
      this.logger.debug(`backlog not read: ${(e as Error).message}`);
    }
  }
}

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
    this.metrics.gauge('bidder_log_healthy', '1 while the log pipeline is within its memory bound and drops nothing.', 'min', [], () => [
      { value: this.log.isHealthy() ? 1 : 0, labels: {} },
    ]);
    this.health.register({
      name: 'bid log',
      problem: () => (this.log.isHealthy() ? null : { level: 'not_ready', text: 'log pipeline over its memory bound or dropping records' }),
    });
    this.health.register({
      name: 'bid log journal',
      problem: () => (this.log.journalProblem === null ? null : { level: 'degraded', text: this.log.journalProblem }),
    });
  }
}

@Module({ imports: [RedisModule], providers: [LogService, LogObservability, LogBacklog], exports: [LogService] })
export class LogModule {}
