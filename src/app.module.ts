import { DynamicModule, Module } from '@nestjs/common';
import { BiddingModule } from './bidding/bidding.module';
import type { Config } from './config/config';
import { ConfigModule } from './config/config.module';
import { HealthModule } from './health/health.module';
import { LogModule } from './log/log.module';
import { MetricsModule } from './metrics/metrics.module';
import { TargetingModule } from './targeting/targeting.module';

@Module({})
export class AppModule {
  static forRoot(config: Config): DynamicModule {
    return {
      module: AppModule,
      imports: [ConfigModule.forRoot(config), MetricsModule, LogModule, TargetingModule, BiddingModule, HealthModule],
    };
  }
}
