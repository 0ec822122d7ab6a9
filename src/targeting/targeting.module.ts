import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { ComputedCounter, ComputedGauge } from '../metrics/fast-metrics';
import { MetricsService } from '../metrics/metrics.service';
import { CampaignStore } from './campaign-store';
import { CampaignWatcher } from './campaign-watcher';

/** Targeting's figures: candidates loaded and campaign reloads. */
@Injectable()
class TargetingMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly store: CampaignStore,
    private readonly watcher: CampaignWatcher,
  ) {}

  onModuleInit(): void {
    this.metrics.addComputed(
      new ComputedGauge('bidder_candidates', 'Candidate ads (creatives) loaded for bidding.', 'max', () => [{ value: this.store.count, labels: {} }]),
    );
    this.metrics.addComputed(
      new ComputedCounter('bidder_campaign_reloads_total', 'Campaign file reloads, by outcome (a rejected file keeps the old set).', () => [
        { value: this.watcher.stats.reloads, labels: { outcome: 'ok' } },
        { value: this.watcher.stats.rejected, labels: { outcome: 'rejected' } },
      ]),
    );
  }
}

@Module({ providers: [CampaignStore, CampaignWatcher, TargetingMetrics], exports: [CampaignStore, CampaignWatcher] })
export class TargetingModule {}
