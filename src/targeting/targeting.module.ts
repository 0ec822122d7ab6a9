import { Module } from '@nestjs/common';
import { CampaignStore } from './campaign-store';
import { CampaignWatcher } from './campaign-watcher';

@Module({ providers: [CampaignStore, CampaignWatcher], exports: [CampaignStore, CampaignWatcher] })
export class TargetingModule {}
