import { Module } from '@nestjs/common';
import { CampaignStore } from './campaign-store';

@Module({ providers: [CampaignStore], exports: [CampaignStore] })
export class TargetingModule {}
