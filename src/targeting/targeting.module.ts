import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { CampaignFile, CampaignSource } from './campaign-file';
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
    this.metrics.gauge('bidder_candidates', 'Candidate ads (creatives) loaded for bidding.', 'max', [], () => [{ value: this.store.count, labels: {} }]);
    this.metrics.counter('bidder_campaign_reloads_total', 'Campaign file reloads, by outcome (a rejected file keeps the old set).', ['outcome'], () => [
      { value: this.watcher.stats.reloads, labels: { outcome: 'ok' } },
      { value: this.watcher.stats.rejected, labels: { outcome: 'rejected' } },
    ]);
  }
}

/** Campaigns: the campaign file (CampaignSource), the candidate index in use (CampaignStore), its reload (CampaignWatcher). */
@Module({ providers: [{ provide: CampaignSource, useClass: CampaignFile }, CampaignStore, CampaignWatcher, TargetingMetrics], exports: [CampaignStore, CampaignWatcher] })
export class TargetingModule {}
