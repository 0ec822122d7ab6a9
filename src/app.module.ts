import { DynamicModule, Module } from '@nestjs/common';
import { BiddingModule } from './bidding/bidding.module';
import type { Config } from './config/config';
import { ConfigModule } from './config/config.module';
import { CurrencyModule } from './currency/currency.module';
import { HealthModule } from './health/health.module';
import type { HttpFront } from './http/front';
import { FrontModule } from './http/front.module';
import { LogModule } from './log/log.module';
import { MetricsModule } from './metrics/metrics.module';
import { PrivacyModule } from './privacy/privacy.module';
import { TargetingModule } from './targeting/targeting.module';

@Module({})
export class AppModule {
  /** `front`: the HTTP front createApp built; null for an application context without HTTP (the micro-benchmark). */
  static forRoot(config: Config, front: HttpFront | null = null): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        FrontModule.forRoot(front),
        MetricsModule,
        HealthModule,
        PrivacyModule.forRoot({ tcfVendorId: config.tcfVendorId, piiHashSecret: config.piiHashSecret }),
        CurrencyModule.forRoot({
          file: config.currencyRatesFile,
          url: config.currencyRatesUrl,
          refreshSeconds: config.currencyRefreshSeconds,
          maxAgeSeconds: config.currencyMaxAgeSeconds,
        }),
        LogModule,
        TargetingModule,
        BiddingModule,
      ],
    };
  }
}
