import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { ComputedCounter, ComputedGauge } from '../metrics/fast-metrics';
import { MetricsService } from '../metrics/metrics.service';
import { RedisModule } from '../redis/redis.module';
import { TargetingModule } from '../targeting/targeting.module';
import { CapsService } from './caps.service';
import { Clock } from './clock';
import { PacingGate } from './pacing.gate';
import { SpendService } from './spend.service';

/** Registers delivery's figures with the worker's registry (read at scrape time). */
@Injectable()
class DeliveryMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
  ) {}

  onModuleInit(): void {
    const m = this.metrics;
    m.addComputed(
      new ComputedCounter('bidder_pacing_blocked_total', 'Would-be winners held back by the budget lease or a frequency cap.', () => [
        { value: this.spend.stats.blockedBids, labels: { by: 'budget' } },
        { value: this.caps.stats.blockedBids, labels: { by: 'frequency_cap' } },
      ]),
    );
    m.addComputed(
      new ComputedCounter('bidder_budget_refreshes_total', 'Budget lease renewals from Redis, by outcome.', () => [
        { value: this.spend.stats.refreshes, labels: { outcome: 'ok' } },
        { value: this.spend.stats.refreshErrors, labels: { outcome: 'error' } },
      ]),
    );
    m.addComputed(
      new ComputedGauge('bidder_budget_view_age_seconds', 'Age of this worker\u2019s view of campaign spend.', 'max', () => {
        const age = this.spend.staleness();
        return [{ value: Number.isFinite(age) ? age / 1000 : -1, labels: {} }];
      }),
    );
    m.addComputed(
      new ComputedGauge('bidder_live_workers', 'Workers of every host sharing the budgets, as this worker counted them at its last refresh.', 'max', () => [
        { value: this.spend.stats.liveWorkers, labels: {} },
      ]),
    );
    m.addComputed(
      new ComputedCounter('bidder_impressions_total', 'Impression trackers by outcome: counted once per bid, or repeated (a replay, not counted).', () => [
        { value: this.caps.stats.impressions, labels: { outcome: 'counted' } },
        { value: this.caps.stats.repeated, labels: { outcome: 'repeated' } },
      ]),
    );
  }
}

/**
 * Delivery: budgets (spend and leases), frequency caps and the pacing gate the auction asks last.
 * Shared truth in Redis, local state on the bid path.
 */
@Module({
  imports: [RedisModule, TargetingModule],
  providers: [Clock, SpendService, CapsService, PacingGate, DeliveryMetrics],
  exports: [Clock, SpendService, CapsService, PacingGate],
})
export class DeliveryModule {}
