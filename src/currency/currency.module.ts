/**
 * Nest wiring of the live currency rates: `CurrencyModule.forRoot({ file, url, refreshSeconds,
 * maxAgeSeconds })` provides one CurrencyService to every module (global).
 */
import { DynamicModule, Global, Module } from '@nestjs/common';
import { CURRENCY_SETTINGS, CurrencyService, type CurrencySettings } from './currency.service';

@Global()
@Module({})
export class CurrencyModule {
  static forRoot(settings: CurrencySettings): DynamicModule {
    return {
      module: CurrencyModule,
      providers: [{ provide: CURRENCY_SETTINGS, useValue: settings }, CurrencyService],
      exports: [CurrencyService],
    };
  }
}
