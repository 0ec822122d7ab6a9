/**
 * IAB TCF v2 consent for one vendor, decoded with the IAB's own library (`@iabtcf/core`).
 *
 * A DSP processes personal data (reads a user id, counts a frequency cap, targets a user) only with
 * the vendor's consent for purpose 1 (store and access information on a device), 3 (create a
 * personalised ads profile) and 4 (select personalised ads). Legitimate interest does not count:
 * TCF policy 2.2 forbids it for purposes 3 and 4, and purpose 1 was consent-only from the start, so
 * only the consent bits are read. Purposes 2 (basic ads) and 7 (measurement) cover contextual
 * buying and need no check here: without consent the request is still bid on, contextually.
 *
 * Also honoured: publisher restrictions (a publisher may forbid a purpose to our vendor, or allow it
 * only under legitimate interest, which we do not use: either way no consent). Not honoured, on
 * purpose: `purposeOneTreatment` (it lets a vendor skip purpose 1 in some countries; being strict
 * costs little, as purpose 1 is almost always asked for).
 */
import { RestrictionType, TCString } from '@iabtcf/core';

export const enum TcfOutcome {
  Consent = 0,
  NoConsent = 1,
  /** Not a TC string the library can decode, or not TCF v2. */
  Malformed = 2,
}

/** The purposes that need the vendor's consent for user-level data. */
export const REQUIRED_PURPOSES: readonly number[] = [1, 3, 4];

export function evaluateTcf(tcString: string, vendorId: number): TcfOutcome {
  // Only the core segment (before the first '.') holds what we read: version, purpose and vendor
  // consents, publisher restrictions. The disclosed-vendors segment that TCF 2.2 strings carry is a
  // bit per vendor of the whole list, and decoding it cost nearly half of a decode (tools/bench/privacy.bench.ts).
  const dot = tcString.indexOf('.');
  let tc;
  try {
    tc = TCString.decode(dot === -1 ? tcString : tcString.slice(0, dot));
  } catch {
    // The library throws its own errors, and plain TypeErrors on some junk: all mean "unreadable".
    return TcfOutcome.Malformed;
  }
  // TCF v1 strings were retired in 2020; the library decodes their core segment but their fields differ.
  if (Number(tc.version) !== 2) return TcfOutcome.Malformed;
  if (!tc.vendorConsents.has(vendorId)) return TcfOutcome.NoConsent;
  for (const p of REQUIRED_PURPOSES) if (!tc.purposeConsents.has(p)) return TcfOutcome.NoConsent;
  const restrictions = tc.publisherRestrictions.getRestrictions(vendorId);
  for (const r of restrictions) {
    if (REQUIRED_PURPOSES.includes(r.purposeId) && r.restrictionType !== RestrictionType.REQUIRE_CONSENT) {
      return TcfOutcome.NoConsent;
    }
  }
  return TcfOutcome.Consent;
}
