/**
 * Nest wiring of the privacy library: one PrivacyPolicy and one PiiHasher per process, built from
 * the settings the caller passes (`PrivacyModule.forRoot({...})`, or a PRIVACY_SETTINGS provider).
 */
import { DynamicModule, Global, Module } from '@nestjs/common';
import { PiiHasher } from './pii-hasher';
import { PrivacyPolicy } from './policy';

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
      ],
      exports: [PrivacyPolicy, PiiHasher],
    };
  }
}
