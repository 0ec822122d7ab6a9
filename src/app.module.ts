import { DynamicModule, Module } from '@nestjs/common';
import { BiddingModule } from './bidding/bidding.module';
import type { Config } from './config/config';
import { ConfigModule } from './config/config.module';
import { CurrencyModule } from './currency/currency.module';
import { HealthModule } from './health/health.module';
import { HttpModule, type HttpServers } from './http/http.module';
import { LogModule } from './log/log.module';
import { MetricsModule } from './metrics/metrics.module';
import { PrivacyModule } from './privacy/privacy.module';
import { TargetingModule } from './targeting/targeting.module';

@Module({})
export class AppModule {
  /** `servers`: the HTTP servers createApp built; null for an application context without HTTP (the micro-benchmark). */
  static forRoot(config: Config, servers: HttpServers | null = null): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        HttpModule.forRoot(servers),
        MetricsModule,
        HealthModule,
        PrivacyModule.forRoot({ tcfVendorId: config.tcfVendorId, piiHashSecret: config.piiHashSecret }),
        CurrencyModule.forRoot({
          file: config.currencyRatesFile,
          url: config.currencyRatesUrl,
          refreshSeconds: config.currencyRefreshSeconds,
          maxAgeSeconds: config.currencyMaxAgeSeconds,
          maxChangePct: config.currencyMaxChangePct,
          maxDriftPct: config.currencyMaxDriftPct,
        }),
        LogModule,
        TargetingModule,
        BiddingModule,
      ],
    };
  }
}
