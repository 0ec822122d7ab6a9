/**
 * Nest wiring of the privacy library: one PrivacyPolicy and one PiiHasher per process, built from
 * the settings the caller passes (`PrivacyModule.forRoot({...})`, or a PRIVACY_SETTINGS provider).
 */
import { DynamicModule, Global, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { MetricsService } from '../metrics/metrics.service';
import { PiiHasher } from './pii-hasher';
import { PRIVACY_REASONS, PrivacyPolicy, type PrivacyReason } from './policy';

/** Privacy decisions by reason (the bid path counts one per request; O(1), no allocation). */
@Injectable()
export class PrivacyStats implements OnModuleInit {
  private readonly slots = new Map<string, number>(PRIVACY_REASONS.map((r, i) => [r, i]));
  private readonly counts = new Float64Array(PRIVACY_REASONS.length);

  constructor(private readonly metrics: MetricsService) {}

  count(reason: PrivacyReason): void {
    this.counts[this.slots.get(reason)!]++;
  }

  onModuleInit(): void {
    this.metrics.counter('bidder_privacy_decisions_total', 'Bid requests by privacy decision: none (user data may be used) or why not (coppa, gdpr_no_consent, us_opt_out, lmt, ...).', ['reason'], () => PRIVACY_REASONS.map((reason, i) => ({ value: this.counts[i], labels: { reason } })));
  }
}

export interface PrivacySettings {
  /** Our IAB TCF vendor id (TCF_VENDOR_ID); null: none, so requests under GDPR never have consent. */
  readonly tcfVendorId: number | null;
  /** PII_HASH_SECRET, at least 16 bytes. */
  readonly piiHashSecret: string | Uint8Array;
}

export const PRIVACY_SETTINGS = Symbol('PRIVACY_SETTINGS');

@Global()
@Module({})
export class PrivacyModule {
  static forRoot(settings: PrivacySettings): DynamicModule {
    return {
      module: PrivacyModule,
      providers: [
        { provide: PRIVACY_SETTINGS, useValue: settings },
        { provide: PrivacyPolicy, useFactory: (s: PrivacySettings) => new PrivacyPolicy(s.tcfVendorId), inject: [PRIVACY_SETTINGS] },
        { provide: PiiHasher, useFactory: (s: PrivacySettings) => new PiiHasher(s.piiHashSecret), inject: [PRIVACY_SETTINGS] },
        PrivacyStats,
      ],
      exports: [PrivacyPolicy, PiiHasher, PrivacyStats],
    };
  }
}
