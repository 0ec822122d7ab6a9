import { Inject, Injectable, Module, type OnApplicationBootstrap, type OnModuleInit, Optional } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { Health } from '../health/health.service';
import { MetricsService } from '../metrics/metrics.service';
import { DeliveryRedis } from './delivery-redis';
import { RedisModule } from '../redis/redis.module';
import { TargetingModule } from '../targeting/targeting.module';
import { CapsRepository, RedisCapsRepository } from './caps.repository';
import { CapsService } from './caps.service';
import { Clock } from './clock';
import { PacingGate } from './pacing.gate';
import { Random } from './random';
import { RedisShadingRepository, ShadingRepository } from './shading.repository';
import { ShadingService } from './shading.service';
import { RedisSpendRepository, SpendRepository } from './spend.repository';
import { SpendService } from './spend.service';

/** Budgets not read from Redis for this long (or max(10 refresh periods, this)) make the worker not ready. */
export const BUDGETS_STALE_MS = 5_000;

/**
 * Registers delivery's figures with the worker's registry (read at scrape time), and its readiness
 * check: budgets read from Redis within max(10 × BUDGET_REFRESH_MS, BUDGETS_STALE_MS) of now (or of
 * the start), else every budgeted campaign stops bidding once its lease is spent.
 */
@Injectable()
class DeliveryMetrics implements OnModuleInit, OnApplicationBootstrap {
  constructor(
    private readonly metrics: MetricsService,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly shading: ShadingService,
    @Inject(CONFIG) private readonly config: Config,
    // The union type emits no usable metadata: the token is named.
    @Optional() @Inject(Health) private readonly health: Health | null = null,
  ) {}

  onApplicationBootstrap(): void {
    if (this.health === null) return;
    const bootstrappedAt = Date.now();
    const staleMs = Math.max(10 * this.config.budgetRefreshMs, BUDGETS_STALE_MS);
    this.health.register({
      name: 'budgets',
      problem: () => {
        const now = Date.now();
        const age = Math.min(this.spend.staleness(), now - bootstrappedAt);
        return age > staleMs ? { level: 'not_ready', text: `budgets not read from Redis for ${Math.round(age / 1000)} s: budgeted campaigns stop bidding once their leases are spent` } : null;
      },
    });
    // Every worker sees the same loss: degraded (still serving), for an operator to look at.
    this.health.register({
      name: 'money keys',
      problem: () => {
        const text = this.spend.moneyKeys.problem(Date.now());
        return text === null ? null : { level: 'degraded', text };
      },
    });
  }

  onModuleInit(): void {
    const m = this.metrics;
    m.counter('bidder_pacing_blocked_total', 'Would-be winners held back by the budget lease or a frequency cap.', ['by'], () => [
      { value: this.spend.stats.blockedBids, labels: { by: 'budget' } },
      { value: this.caps.stats.blockedBids, labels: { by: 'frequency_cap' } },
    ]);
    m.counter('bidder_budget_refreshes_total', 'Budget lease renewals from Redis, by outcome.', ['outcome'], () => [
      { value: this.spend.stats.refreshes, labels: { outcome: 'ok' } },
      { value: this.spend.stats.refreshErrors, labels: { outcome: 'error' } },
    ]);
    m.counter('bidder_money_keys_lost_total', 'Campaigns whose spend total went backwards (what="spend") or whose billing markers vanished (what="markers") in Redis, as this worker saw them: data lost, budgets may be overspent.', ['what'], () => [
      { value: this.spend.moneyKeys.lost.spend, labels: { what: 'spend' } },
      { value: this.spend.moneyKeys.lost.markers, labels: { what: 'markers' } },
    ]);
    m.gauge('bidder_budget_view_age_seconds', 'Age of this worker\u2019s view of campaign spend.', 'max', [], () => {
      const age = this.spend.staleness();
      return [{ value: Number.isFinite(age) ? age / 1000 : -1, labels: {} }];
    });
    m.gauge('bidder_live_workers', 'Workers of every host sharing the budgets, as this worker counted them at its last refresh.', 'max', [], () => [
      { value: this.spend.stats.liveWorkers, labels: {} },
    ]);
    m.gauge('bidder_pacing_share', 'Share of eligible requests each budgeted campaign enters (1 − throttle rate; 1 for asap), as this worker set it at its last refresh.', 'average', ['campaign'], () =>
      this.spend.pacing().map((p) => ({ value: p.share, labels: { campaign: p.campaign } })));
    m.gauge('bidder_pacing_target_usd', 'What the pacing curve says each even campaign should have spent today, USD.', 'max', ['campaign'], () =>
      this.spend.pacing().filter((p) => p.even).map((p) => ({ value: p.target, labels: { campaign: p.campaign } })));
    m.gauge('bidder_pacing_spent_usd', 'What each budgeted campaign has spent today (every worker), USD, as read at the last refresh.', 'max', ['campaign'], () =>
      this.spend.pacing().map((p) => ({ value: p.spent, labels: { campaign: p.campaign } })));
    m.gauge('bidder_pacing_budget_usd', 'What each budgeted campaign may spend today: its daily budget, or less when less of its total is left, USD.', 'max', ['campaign'], () =>
      this.spend.pacing().map((p) => ({ value: p.budget, labels: { campaign: p.campaign } })));
    m.counter('bidder_pacing_throttled_total', 'Eligible requests an even campaign sat out (its pacing draw).', [], () => [{ value: this.spend.stats.throttled, labels: {} }]);
    m.counter('bidder_shading_total', 'First-price bids shaded (of which explored); notices learned from, refused as impossible, past the source\'s rate (limited), or kept out of the pool by its publisher\'s or exchange\'s bound (capped); markets a segment saw move (moves).', ['what'], () => [
      { value: this.shading.stats.shaded, labels: { what: 'shaded' } },
      { value: this.shading.stats.explored, labels: { what: 'explored' } },
      { value: this.shading.stats.learned, labels: { what: 'learned' } },
      { value: this.shading.stats.impossible, labels: { what: 'impossible' } },
      { value: this.shading.stats.limited, labels: { what: 'limited' } },
      { value: this.shading.stats.capped, labels: { what: 'capped' } },
      { value: this.shading.stats.moves, labels: { what: 'moves' } },
    ]);
    m.gauge('bidder_shading_backlog', 'Segments waiting for shading\u2019s tick to fold in what they learned or what the other workers share (a tick spends at most about 2 ms, the rest waits for the next, 100 ms later): worst worker.', 'max', [], () => [
      { value: this.shading.backlog(), labels: {} },
    ]);
    m.counter('bidder_impressions_total', 'Impression trackers by outcome: counted once per bid, or repeated (a replay, not counted).', ['outcome'], () => [
      { value: this.caps.stats.impressions, labels: { outcome: 'counted' } },
      { value: this.caps.stats.repeated, labels: { outcome: 'repeated' } },
    ]);
  }
}

/**
 * Delivery: budgets (spend and leases), frequency caps and the pacing gate the auction asks last.
 * Shared truth in Redis, behind one repository per store (SpendRepository, CapsRepository,
 * ShadingRepository), local state on the bid path.
 */
@Module({
  imports: [RedisModule, TargetingModule],
  providers: [
    Clock,
    Random,
    DeliveryRedis,
    { provide: SpendRepository, useClass: RedisSpendRepository },
    { provide: CapsRepository, useClass: RedisCapsRepository },
    { provide: ShadingRepository, useClass: RedisShadingRepository },
    SpendService,
    CapsService,
    PacingGate,
    ShadingService,
    DeliveryMetrics,
  ],
  exports: [Clock, Random, SpendService, CapsService, PacingGate, ShadingService],
})
export class DeliveryModule {}
