/**
 * Nest wiring of the live currency rates: `CurrencyModule.forRoot({ file, url, refreshSeconds,
 * maxAgeSeconds })` provides one CurrencyService to every module (global), over the rates source the
 * settings name (RatesSource: a file or a URL), and registers the rates' figures and health check.
 */
import { DynamicModule, Global, Inject, Injectable, Module, type OnModuleInit, Optional } from '@nestjs/common';
import { Health } from '../health/health.service';
import { MetricsService } from '../metrics/metrics.service';
import { CURRENCY_SETTINGS, CurrencyService, type CurrencySettings } from './currency.service';
import { RatesSource, ratesSourceOf } from './rates-source';

/** The rates' figures and health check, in an application that has metrics and health (the bidder does). */
@Injectable()
class CurrencyObservability implements OnModuleInit {
  constructor(
    private readonly currency: CurrencyService,
    @Optional() @Inject(MetricsService) private readonly metrics: MetricsService | undefined,
    @Optional() @Inject(Health) private readonly health: Health | undefined,
  ) {}

  onModuleInit(): void {
    if (!this.metrics || !this.health) return;
    const c = this.currency;
    this.metrics.gauge('bidder_currency_rates_age_seconds', 'Age of the currency rates in use (now minus their dataAsOf).', 'max', ['source'], () => [
      { value: c.ageSeconds(), labels: { source: c.source === 'static' ? 'static' : 'configured' } },
    ]);
    this.metrics.counter('bidder_currency_refreshes_total', 'Reads of the rates file or URL, by outcome.', ['outcome'], () => {
      const r = c.stats().refreshes;
      return [
        { value: r.updated, labels: { outcome: 'updated' } },
        { value: r.unchanged, labels: { outcome: 'unchanged' } },
        { value: r.failed, labels: { outcome: 'failed' } },
        // A table read well but refused: an implausible rate, a jump past CURRENCY_MAX_CHANGE_PCT, or a move past CURRENCY_MAX_DRIFT_PCT of the reference.
        { value: r.rejected, labels: { outcome: 'rejected' } },
      ];
    });
    // Stale rates degrade the worker (200, with a warning): every worker has the same rates, so
    // taking them out of the load balancer would help nothing.
    this.health.register({
      name: 'currency rates',
      problem: () => {
        const why = c.health();
        return why === null ? null : { level: 'degraded', text: why };
      },
    });
  }
}

@Global()
@Module({})
export class CurrencyModule {
  static forRoot(settings: CurrencySettings): DynamicModule {
    return {
      module: CurrencyModule,
      providers: [
        { provide: CURRENCY_SETTINGS, useValue: settings },
        // The file or URL the settings name (none: the static table).
        { provide: RatesSource, useFactory: (s: CurrencySettings) => ratesSourceOf(s), inject: [CURRENCY_SETTINGS] },
        CurrencyService,
        CurrencyObservability,
      ],
      exports: [CurrencyService],
    };
  }
}
