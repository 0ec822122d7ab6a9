import { Injectable, type OnModuleInit } from '@nestjs/common';
import { ComputedCounter, ComputedGauge } from '../metrics/fast-metrics';
import type { MetricSample } from '../metrics/fast-metrics';
import { MetricsService } from '../metrics/metrics.service';
import { CampaignWatcher } from '../targeting/campaign-watcher';
import { CapsService } from './caps.service';
import { NoticeStats } from './notice-stats';
import { SpendService } from './spend.service';

/** Registers the tracking module's figures with this worker's Prometheus registry (read at scrape time). */
@Injectable()
export class TrackingMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly notices: NoticeStats,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly watcher: CampaignWatcher,
  ) {}

  onModuleInit(): void {
    const m = this.metrics;
    m.addComputed(
      new ComputedCounter('bidder_notices_total', 'Notice and tracker calls by type (win, bill, loss, imp, click) and outcome (ok, duplicate, rejected, error).', () => {
        const out: MetricSample[] = [];
        for (const [k, v] of this.notices.counts) {
          const [type, outcome] = k.split('\u0000');
          out.push({ value: v, labels: { type: type, outcome: outcome } });
        }
        return out;
      }),
    );
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
      new ComputedCounter('bidder_campaign_reloads_total', 'Campaign file reloads, by outcome (a rejected file keeps the old set).', () => [
        { value: this.watcher.stats.reloads, labels: { outcome: 'ok' } },
        { value: this.watcher.stats.rejected, labels: { outcome: 'rejected' } },
      ]),
    );
  }
}
