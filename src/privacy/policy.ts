/**
 * What a request may be used for, from its privacy signals (`signals.ts`): one decision per
 * request, made once, that the bid path, the log and the metrics read.
 *
 * - `userData`: whether user-level data may be used or stored for this request (frequency-cap
 *   lookups and counts, a user key in tracking payloads, user-targeted campaigns). When false the
 *   request is still bid on, contextually.
 * - `reason`: why not (`none` when it may); one of PRIVACY_REASONS, a fixed vocabulary for metrics.
 * - `consent`: the request carries a basis for keeping its personal data as sent, which is what
 *   LOG_RAW_PII may act on: true only when user data is allowed AND GDPR's status is known, i.e.
 *   GDPR applies and our vendor has consent (TCF purposes 1, 3, 4), or the exchange says GDPR does
 *   not apply (`gdpr` = 0). A request that says nothing about GDPR is bid on with user data (as
 *   exchanges and Prebid Server treat it) but its personal data is never logged raw.
 * - `coppa`: the request is child-directed (`regs.coppa` = 1), whatever else applies; campaigns
 *   that refuse such inventory are filtered on it.
 *
 * Precedence when several signals forbid user data (the first one found is the reason, and the
 * later, costlier checks are then skipped): the order of PRIVACY_REASONS below, that is COPPA (a
 * law about children, and the inventory filter), then GDPR (consent is the only basis we use), then
 * a US opt-out stated in GPP, then in the legacy US Privacy string, then a GPP string we cannot
 * read, then the device's limit-ad-tracking and do-not-track flags.
 */
import { BoundedCache } from './bounded-cache';
import { gppOutcome, GppOutcome, readGpp, usPrivacyOptOut, type GppReading } from './gpp';
import { MAX_PRIVACY_STRING_CHARS, type PrivacySignals } from './signals';
import { evaluateTcf, TcfOutcome } from './tcf';

/** Every reason a decision can give, in precedence order; `none` means user data may be used. */
export const PRIVACY_REASONS = [
  'coppa',
  /** GDPR applies but no TCF vendor id is configured: we cannot have consent. */
  'gdpr_no_vendor_id',
  /** GDPR applies and the TC string cannot be decoded (or is longer than MAX_PRIVACY_STRING_CHARS). */
  'gdpr_malformed',
  /** GDPR applies and there is no TC string, or it lacks our vendor's consent for purpose 1, 3 or 4. */
  'gdpr_no_consent',
  /** A US section of the GPP string that applies says opted out of sale, sharing or targeted ads (or GPC). */
  'gpp_opt_out',
  /** `us_privacy` says opted out of sale (`1-Y-`). */
  'us_opt_out',
  /** A GPP section that applies cannot be read (see gppOutcome): no opt-out can be ruled out. */
  'gpp_malformed',
  'lmt',
  'dnt',
  'none',
] as const;

export type PrivacyReason = (typeof PRIVACY_REASONS)[number];

export interface PrivacyDecision {
  readonly userData: boolean;
  readonly reason: PrivacyReason;
  readonly consent: boolean;
  readonly coppa: boolean;
}

/** Every possible decision, frozen and shared: deciding allocates nothing. */
const DECISIONS: readonly PrivacyDecision[] = (() => {
  const out: PrivacyDecision[] = [];
  for (const reason of PRIVACY_REASONS) {
    for (const consent of [false, true]) {
      for (const coppa of [false, true]) out.push(Object.freeze({ userData: reason === 'none', reason, consent: reason === 'none' && consent, coppa }));
    }
  }
  return out;
})();

function decision(reason: number, consent: boolean, coppa: boolean): PrivacyDecision {
  return DECISIONS[reason * 4 + (consent ? 2 : 0) + (coppa ? 1 : 0)];
}

const R_COPPA = PRIVACY_REASONS.indexOf('coppa');
const R_GDPR_NO_VENDOR_ID = PRIVACY_REASONS.indexOf('gdpr_no_vendor_id');
const R_GDPR_MALFORMED = PRIVACY_REASONS.indexOf('gdpr_malformed');
const R_GDPR_NO_CONSENT = PRIVACY_REASONS.indexOf('gdpr_no_consent');
const R_GPP_OPT_OUT = PRIVACY_REASONS.indexOf('gpp_opt_out');
const R_US_OPT_OUT = PRIVACY_REASONS.indexOf('us_opt_out');
const R_GPP_MALFORMED = PRIVACY_REASONS.indexOf('gpp_malformed');
const R_LMT = PRIVACY_REASONS.indexOf('lmt');
const R_DNT = PRIVACY_REASONS.indexOf('dnt');
const R_NONE = PRIVACY_REASONS.indexOf('none');

export interface PrivacyPolicyOptions {
  /** Distinct TC strings whose outcome is kept (default 4096). */
  readonly tcfCacheEntries?: number;
  /** Distinct GPP strings whose reading is kept (default 1024). */
  readonly gppCacheEntries?: number;
  /** Longer strings are decoded every time, never kept (default MAX_PRIVACY_STRING_CHARS: all that are not malformed). */
  readonly cacheKeyChars?: number;
}

/**
 * Decides per request; built once with our IAB TCF vendor id (`TCF_VENDOR_ID`), or null when we
 * have none: then a request under GDPR never has consent. Decoding costs 10-25 µs for a TC string
 * and 40-120 µs for a GPP string (tools/bench/privacy.bench.ts), against ~0.1 µs for a cached outcome, so
 * outcomes are cached per distinct string in two bounded LRU maps owned by this object: at most
 * 4096 + 1024 keys of at most 4096 characters, 20 M characters in the worst case (consent strings
 * are ASCII, one byte per character in V8). TC strings carry the time consent was given, so they
 * repeat per user rather than across users; GPP strings carry no time and repeat across users.
 */
export class PrivacyPolicy {
  private readonly tcf: BoundedCache<TcfOutcome>;
  private readonly gpp: BoundedCache<GppReading>;
  private readonly decodeTcf: (tc: string) => TcfOutcome;

  constructor(
    readonly vendorId: number | null,
    options: PrivacyPolicyOptions = {},
  ) {
    if (vendorId !== null && !(Number.isInteger(vendorId) && vendorId > 0)) throw new RangeError(`TCF vendor id must be a positive integer, got ${vendorId}`);
    const keyChars = options.cacheKeyChars ?? MAX_PRIVACY_STRING_CHARS;
    this.tcf = new BoundedCache(options.tcfCacheEntries ?? 4096, keyChars);
    this.gpp = new BoundedCache(options.gppCacheEntries ?? 1024, keyChars);
    const id = vendorId ?? 0;
    this.decodeTcf = (tc) => evaluateTcf(tc, id);
  }

  /** Cache counters, for metrics and the benchmark. */
  cacheStats(): { tcfHits: number; tcfMisses: number; tcfSize: number; gppHits: number; gppMisses: number; gppSize: number } {
    return { tcfHits: this.tcf.hits, tcfMisses: this.tcf.misses, tcfSize: this.tcf.size, gppHits: this.gpp.hits, gppMisses: this.gpp.misses, gppSize: this.gpp.size };
  }

  decide(s: PrivacySignals): PrivacyDecision {
    const coppa = s.coppa === 1;
    if (coppa) return decision(R_COPPA, false, true);
    if (s.gdpr === 1) {
      const r = this.gdprReason(s.consent);
      if (r !== R_NONE) return decision(r, false, false);
    }
    if (s.gpp !== null) {
      const g = s.gpp.length > MAX_PRIVACY_STRING_CHARS ? GppOutcome.Malformed : gppOutcome(this.gpp.get(s.gpp, readGpp), s.gppSid);
      if (g === GppOutcome.OptOut) return decision(R_GPP_OPT_OUT, false, false);
      if (s.usPrivacy !== null && usPrivacyOptOut(s.usPrivacy)) return decision(R_US_OPT_OUT, false, false);
      if (g === GppOutcome.Malformed) return decision(R_GPP_MALFORMED, false, false);
    } else if (s.usPrivacy !== null && usPrivacyOptOut(s.usPrivacy)) {
      return decision(R_US_OPT_OUT, false, false);
    }
    if (s.lmt === 1) return decision(R_LMT, false, false);
    if (s.dnt === 1) return decision(R_DNT, false, false);
    return decision(R_NONE, s.gdpr !== null, false);
  }

  private gdprReason(consent: string | null): number {
    if (this.vendorId === null) return R_GDPR_NO_VENDOR_ID;
    if (consent === null) return R_GDPR_NO_CONSENT;
    if (consent.length > MAX_PRIVACY_STRING_CHARS) return R_GDPR_MALFORMED;
    switch (this.tcf.get(consent, this.decodeTcf)) {
      case TcfOutcome.Consent:
        return R_NONE;
      case TcfOutcome.NoConsent:
        return R_GDPR_NO_CONSENT;
      case TcfOutcome.Malformed:
        return R_GDPR_MALFORMED;
    }
  }
}
