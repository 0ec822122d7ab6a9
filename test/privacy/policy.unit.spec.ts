import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PRIVACY_REASONS, PrivacyPolicy, type PrivacyDecision, type PrivacyReason } from '../../src/privacy/policy';
import { MAX_PRIVACY_STRING_CHARS, readPrivacySignals } from '../../src/privacy/signals';
import { gppString, OTHER_VENDOR, OUR_VENDOR, RestrictionType, tcString } from './consent-strings';

const TC_CONSENT = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4] });
const TC_ALL = tcString({ vendors: [OUR_VENDOR, OTHER_VENDOR], purposes: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] });
const TC_NO_PURPOSES = tcString({ vendors: [OUR_VENDOR], purposes: [] });
const TC_OTHER_VENDOR = tcString({ vendors: [OTHER_VENDOR], purposes: [1, 3, 4] });
const TC_NO_PURPOSE_4 = tcString({ vendors: [OUR_VENDOR], purposes: [1, 2, 3] });
const TC_NO_PURPOSE_1 = tcString({ vendors: [OUR_VENDOR], purposes: [2, 3, 4] });
const TC_ONLY_CONTEXTUAL = tcString({ vendors: [OUR_VENDOR], purposes: [2, 7] });
const TC_RESTRICTED = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4], restrictions: [[4, RestrictionType.NOT_ALLOWED]] });
const TC_OTHER_RESTRICTION = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4], restrictions: [[2, RestrictionType.REQUIRE_LI]] });

const GPP_SALE = gppString({ usnat: { SaleOptOutNotice: 1, SaleOptOut: 1 } });
const GPP_SHARING = gppString({ usnat: { SharingOptOutNotice: 1, SharingOptOut: 1 } });
const GPP_TARGETED = gppString({ usnat: { TargetedAdvertisingOptOutNotice: 1, TargetedAdvertisingOptOut: 1 } });
const GPP_NO_OPT_OUT = gppString({ usnat: { SaleOptOut: 2, SharingOptOut: 2, TargetedAdvertisingOptOut: 2 } });
const GPP_NOT_APPLICABLE = gppString({ usnat: { SaleOptOut: 0 } });
const GPP_GPC = gppString({ usnat: { SaleOptOut: 2, Gpc: true } });
const GPP_CA_SALE = gppString({ usca: { SaleOptOut: 1 } });
const GPP_CA_NONE = gppString({ usca: { SaleOptOut: 2, SharingOptOut: 2 } });
const GPP_VA_TARGETED = gppString({ usva: { TargetedAdvertisingOptOut: 1 } });
/** usnat opts out, usca does not. */
const GPP_NAT_SALE_CA_NONE = gppString({ usnat: { SaleOptOut: 1 }, usca: { SaleOptOut: 2 } });
const GPP_USP_OPT_OUT = gppString({ uspv1: { Notice: 'Y', OptOutSale: 'Y' } });
const GPP_USP_NONE = gppString({ uspv1: { Notice: 'Y', OptOutSale: 'N' } });
/** Sections 6 (uspv1), 7 (usnat, undecodable) and 8 (usca, no opt-out). */
const GPP_BAD_USNAT = (() => {
  const good = gppString({ uspv1: { Notice: 'Y', OptOutSale: 'N' }, usnat: { SaleOptOut: 2 }, usca: { SaleOptOut: 2 } });
  const parts = good.split('~');
  parts[2] = '!!!!';
  return parts.join('~');
})();

type Case = { why: string; body: object; want: PrivacyReason; consent?: boolean; coppa?: boolean; vendor?: number | null };

const gdpr = (consent: string | undefined, extra: object = {}): object => ({ regs: { gdpr: 1 }, user: consent === undefined ? {} : { consent }, ...extra });
const gpp = (s: string, sid?: unknown): object => ({ regs: sid === undefined ? { gpp: s } : { gpp: s, gpp_sid: sid } });

const CASES: Case[] = [
  // GDPR / TCF
  { why: 'TCF: consent for our vendor and purposes 1, 3, 4', body: gdpr(TC_CONSENT), want: 'none', consent: true },
  { why: 'TCF: consent for everything', body: gdpr(TC_ALL), want: 'none', consent: true },
  { why: 'TCF: 2.5 places (regs.ext.gdpr, user.ext.consent)', body: { regs: { ext: { gdpr: 1 } }, user: { ext: { consent: TC_CONSENT } } }, want: 'none', consent: true },
  { why: 'TCF: our vendor but no purposes', body: gdpr(TC_NO_PURPOSES), want: 'gdpr_no_consent' },
  { why: 'TCF: another vendor only', body: gdpr(TC_OTHER_VENDOR), want: 'gdpr_no_consent' },
  { why: 'TCF: vendor consent but purpose 4 missing', body: gdpr(TC_NO_PURPOSE_4), want: 'gdpr_no_consent' },
  { why: 'TCF: vendor consent but purpose 1 missing', body: gdpr(TC_NO_PURPOSE_1), want: 'gdpr_no_consent' },
  { why: 'TCF: only the contextual purposes 2 and 7', body: gdpr(TC_ONLY_CONTEXTUAL), want: 'gdpr_no_consent' },
  { why: 'TCF: publisher forbids purpose 4 to our vendor', body: gdpr(TC_RESTRICTED), want: 'gdpr_no_consent' },
  { why: 'TCF: a publisher restriction on a purpose we do not need', body: gdpr(TC_OTHER_RESTRICTION), want: 'none', consent: true },
  { why: 'TCF: no consent string', body: gdpr(undefined), want: 'gdpr_no_consent' },
  { why: 'TCF: empty consent string', body: gdpr(''), want: 'gdpr_no_consent' },
  { why: 'TCF: junk', body: gdpr('not a consent string'), want: 'gdpr_malformed' },
  { why: 'TCF: base64url junk', body: gdpr('garbage'), want: 'gdpr_malformed' },
  { why: 'TCF: a truncated string', body: gdpr(TC_CONSENT.slice(0, 12)), want: 'gdpr_malformed' },
  { why: 'TCF: a v1 string', body: gdpr('BOEFEAyOEFEAyAHABDENAI4AAAB9vABAASA'), want: 'gdpr_malformed' },
  { why: `TCF: longer than ${MAX_PRIVACY_STRING_CHARS} characters`, body: gdpr(`${TC_CONSENT}.${'A'.repeat(MAX_PRIVACY_STRING_CHARS)}`), want: 'gdpr_malformed' },
  { why: 'TCF: GDPR applies, no vendor id configured', body: gdpr(TC_CONSENT), want: 'gdpr_no_vendor_id', vendor: null },
  { why: 'TCF: no vendor id, but GDPR does not apply', body: { regs: { gdpr: 0 } }, want: 'none', consent: true, vendor: null },
  { why: 'gdpr 0: consent (GDPR known not to apply)', body: { regs: { gdpr: 0 }, user: { consent: 'junk' } }, want: 'none', consent: true },
  { why: 'gdpr not said: user data, but no consent to keep it raw', body: { user: { consent: 'junk' } }, want: 'none', consent: false },
  // GPP
  { why: 'GPP usnat: opted out of sale', body: gpp(GPP_SALE, [7]), want: 'gpp_opt_out' },
  { why: 'GPP usnat: opted out of sharing', body: gpp(GPP_SHARING, [7]), want: 'gpp_opt_out' },
  { why: 'GPP usnat: opted out of targeted ads', body: gpp(GPP_TARGETED, [7]), want: 'gpp_opt_out' },
  { why: 'GPP usnat: no opt-out', body: gpp(GPP_NO_OPT_OUT, [7]), want: 'none' },
  { why: 'GPP usnat: opt-outs not applicable', body: gpp(GPP_NOT_APPLICABLE, [7]), want: 'none' },
  { why: 'GPP usnat: Global Privacy Control', body: gpp(GPP_GPC, [7]), want: 'gpp_opt_out' },
  { why: 'GPP usca: opted out of sale', body: gpp(GPP_CA_SALE, [8]), want: 'gpp_opt_out' },
  { why: 'GPP usca: no opt-out', body: gpp(GPP_CA_NONE, [8]), want: 'none' },
  { why: 'GPP usva: opted out of targeted ads', body: gpp(GPP_VA_TARGETED, [9]), want: 'gpp_opt_out' },
  { why: 'GPP: only the sections in gpp_sid apply', body: gpp(GPP_NAT_SALE_CA_NONE, [8]), want: 'none' },
  { why: 'GPP: an opt-out in any applicable section wins', body: gpp(GPP_NAT_SALE_CA_NONE, [8, 7]), want: 'gpp_opt_out' },
  { why: 'GPP: no gpp_sid → every US section applies', body: gpp(GPP_NAT_SALE_CA_NONE), want: 'gpp_opt_out' },
  { why: 'GPP: unreadable gpp_sid → every US section applies', body: gpp(GPP_NAT_SALE_CA_NONE, ['x']), want: 'gpp_opt_out' },
  { why: 'GPP uspv1 section: opted out of sale', body: gpp(GPP_USP_OPT_OUT, [6]), want: 'gpp_opt_out' },
  { why: 'GPP uspv1 section: no opt-out', body: gpp(GPP_USP_NONE, [6]), want: 'none' },
  { why: 'GPP: junk', body: gpp('garbage', [7]), want: 'gpp_malformed' },
  { why: 'GPP: junk, no gpp_sid', body: gpp('garbage'), want: 'gpp_malformed' },
  { why: 'GPP: an applicable section that cannot be decoded', body: gpp(GPP_BAD_USNAT, [7]), want: 'gpp_malformed' },
  { why: 'GPP: the undecodable section does not apply', body: gpp(GPP_BAD_USNAT, [8]), want: 'none' },
  { why: 'GPP: undecodable section, no gpp_sid', body: gpp(GPP_BAD_USNAT), want: 'gpp_malformed' },
  { why: 'GPP: gpp_sid names a US section missing from the string', body: gpp(GPP_CA_NONE, [7]), want: 'gpp_malformed' },
  { why: 'GPP: gpp_sid names only non-US sections (TCF EU)', body: gpp('garbage', [2]), want: 'none' },
  { why: 'GPP: gpp_sid names a section unknown to the library', body: gpp(GPP_CA_NONE, [8, 99]), want: 'none' },
  { why: `GPP: longer than ${MAX_PRIVACY_STRING_CHARS} characters`, body: gpp(`${GPP_NO_OPT_OUT}${'A'.repeat(MAX_PRIVACY_STRING_CHARS)}`, [7]), want: 'gpp_malformed' },
  // US Privacy
  { why: 'us_privacy 1YYN: opted out of sale', body: { regs: { us_privacy: '1YYN' } }, want: 'us_opt_out' },
  { why: 'us_privacy 1NYY: opted out of sale', body: { regs: { us_privacy: '1NYY' } }, want: 'us_opt_out' },
  { why: 'us_privacy 1yyn: lower case', body: { regs: { us_privacy: '1yyn' } }, want: 'us_opt_out' },
  { why: 'us_privacy in regs.ext', body: { regs: { ext: { us_privacy: '1YYN' } } }, want: 'us_opt_out' },
  { why: 'us_privacy 1YNN: no opt-out', body: { regs: { us_privacy: '1YNN' } }, want: 'none' },
  { why: 'us_privacy 1---: not applicable', body: { regs: { us_privacy: '1---' } }, want: 'none' },
  { why: 'us_privacy junk is ignored', body: { regs: { us_privacy: 'junk' } }, want: 'none' },
  { why: 'us_privacy of another version is ignored', body: { regs: { us_privacy: '2YYN' } }, want: 'none' },
  { why: 'us_privacy too long is ignored', body: { regs: { us_privacy: '1YYNN' } }, want: 'none' },
  { why: 'us_privacy with a control character is ignored', body: { regs: { us_privacy: '1Y\rN' } }, want: 'none' },
  // COPPA, lmt, dnt
  { why: 'COPPA', body: { regs: { coppa: 1 } }, want: 'coppa', coppa: true },
  { why: 'COPPA as a string', body: { regs: { coppa: '1' } }, want: 'coppa', coppa: true },
  { why: 'COPPA 0', body: { regs: { coppa: 0 } }, want: 'none' },
  { why: 'lmt', body: { device: { lmt: 1 } }, want: 'lmt' },
  { why: 'dnt', body: { device: { dnt: 1 } }, want: 'dnt' },
  { why: 'lmt 0, dnt 0', body: { regs: { gdpr: 0 }, device: { lmt: 0, dnt: 0 } }, want: 'none', consent: true },
  // Unreadable flags fail closed: the flag applies (issue 23, finding 6)
  { why: 'gdpr "yes" with consent for our vendor: GDPR applies', body: { regs: { gdpr: 'yes' }, user: { consent: TC_CONSENT } }, want: 'none', consent: true },
  { why: 'gdpr "yes", no consent string', body: { regs: { gdpr: 'yes' } }, want: 'gdpr_no_consent' },
  { why: 'gdpr 2, no consent string', body: { regs: { gdpr: 2 } }, want: 'gdpr_no_consent' },
  { why: 'gdpr " 1", no consent string', body: { regs: { gdpr: ' 1' } }, want: 'gdpr_no_consent' },
  { why: 'gdpr "no" cannot be read either', body: { regs: { gdpr: 'no' } }, want: 'gdpr_no_consent' },
  { why: 'regs.ext.gdpr "yes"', body: { regs: { ext: { gdpr: 'yes' } } }, want: 'gdpr_no_consent' },
  { why: 'gdpr "yes", no vendor id', body: { regs: { gdpr: 'yes' }, user: { consent: TC_CONSENT } }, want: 'gdpr_no_vendor_id', vendor: null },
  { why: 'coppa "yes"', body: { regs: { coppa: 'yes' } }, want: 'coppa', coppa: true },
  { why: 'lmt "yes"', body: { device: { lmt: 'yes' } }, want: 'lmt' },
  { why: 'dnt 2', body: { device: { dnt: 2 } }, want: 'dnt' },
  // Precedence
  { why: 'COPPA beats GDPR without consent and lmt', body: gdpr(TC_NO_PURPOSES, { regs: { gdpr: 1, coppa: 1 }, device: { lmt: 1 } }), want: 'coppa', coppa: true },
  { why: 'COPPA beats GDPR consent', body: gdpr(TC_CONSENT, { regs: { gdpr: 1, coppa: 1 } }), want: 'coppa', coppa: true },
  { why: 'GDPR beats a US opt-out', body: gdpr(TC_OTHER_VENDOR, { regs: { gdpr: 1, us_privacy: '1YYN' } }), want: 'gdpr_no_consent' },
  { why: 'GDPR consent does not lift a US opt-out', body: gdpr(TC_CONSENT, { regs: { gdpr: 1, us_privacy: '1YYN' } }), want: 'us_opt_out' },
  { why: 'GDPR consent does not lift lmt', body: gdpr(TC_CONSENT, { device: { lmt: 1 } }), want: 'lmt' },
  { why: 'a GPP opt-out beats a US Privacy one', body: { regs: { gpp: GPP_SALE, gpp_sid: [7], us_privacy: '1YYN' } }, want: 'gpp_opt_out' },
  { why: 'a US Privacy opt-out beats an unreadable GPP', body: { regs: { gpp: 'garbage', us_privacy: '1YYN' } }, want: 'us_opt_out' },
  { why: 'a US Privacy opt-out counts when GPP says nothing', body: { regs: { gpp: GPP_NO_OPT_OUT, gpp_sid: [7], us_privacy: '1YYN' } }, want: 'us_opt_out' },
  { why: 'an unreadable GPP beats lmt', body: { regs: { gpp: 'garbage' }, device: { lmt: 1 } }, want: 'gpp_malformed' },
  { why: 'lmt beats dnt', body: { device: { lmt: 1, dnt: 1 } }, want: 'lmt' },
];

describe('privacy: PrivacyPolicy.decide', () => {
  const ours = new PrivacyPolicy(OUR_VENDOR);
  const noVendor = new PrivacyPolicy(null);
  for (const c of CASES) {
    it(`${c.why} → ${c.want}`, () => {
      const policy = c.vendor === null ? noVendor : ours;
      const d = policy.decide(readPrivacySignals(c.body));
      const want: PrivacyDecision = { userData: c.want === 'none', reason: c.want, consent: c.consent ?? false, coppa: c.coppa ?? false };
      assert.deepEqual({ ...d }, want);
    });
  }

  it('covers every reason of the vocabulary', () => {
    const seen = new Set(CASES.map((c) => c.want));
    assert.deepEqual([...PRIVACY_REASONS].filter((r) => !seen.has(r)), []);
  });

  it('lists the reasons in precedence order, none last', () => {
    assert.deepEqual(PRIVACY_REASONS, ['coppa', 'gdpr_no_vendor_id', 'gdpr_malformed', 'gdpr_no_consent', 'gpp_opt_out', 'us_opt_out', 'gpp_malformed', 'lmt', 'dnt', 'none']);
  });

  it('returns shared frozen decisions', () => {
    const a = ours.decide(readPrivacySignals({}));
    const b = ours.decide(readPrivacySignals({ device: { lmt: 0 } }));
    assert.equal(a, b);
    assert.ok(Object.isFrozen(a));
  });

  it('rejects a vendor id that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, NaN]) assert.throws(() => new PrivacyPolicy(bad), RangeError);
  });
});

describe('privacy: PrivacyPolicy caches', () => {
  it('decodes a TC string once, then serves the cached outcome', () => {
    const p = new PrivacyPolicy(OUR_VENDOR);
    const s = readPrivacySignals(gdpr(TC_CONSENT));
    for (let i = 0; i < 5; i++) assert.equal(p.decide(s).reason, 'none');
    assert.equal(p.decide(readPrivacySignals(gdpr(TC_NO_PURPOSE_4))).reason, 'gdpr_no_consent');
    assert.equal(p.decide(readPrivacySignals(gdpr(TC_NO_PURPOSE_4))).reason, 'gdpr_no_consent');
    const st = p.cacheStats();
    assert.equal(st.tcfMisses, 2);
    assert.equal(st.tcfHits, 5);
    assert.equal(st.tcfSize, 2);
  });

  it('caches a GPP string once for every gpp_sid', () => {
    const p = new PrivacyPolicy(OUR_VENDOR);
    assert.equal(p.decide(readPrivacySignals(gpp(GPP_NAT_SALE_CA_NONE, [8]))).reason, 'none');
    assert.equal(p.decide(readPrivacySignals(gpp(GPP_NAT_SALE_CA_NONE, [7]))).reason, 'gpp_opt_out');
    assert.equal(p.decide(readPrivacySignals(gpp('garbage'))).reason, 'gpp_malformed');
    assert.equal(p.decide(readPrivacySignals(gpp('garbage'))).reason, 'gpp_malformed');
    const st = p.cacheStats();
    assert.deepEqual([st.gppMisses, st.gppHits, st.gppSize], [2, 2, 2]);
  });

  it('keeps at most the configured number of entries, least recently used out', () => {
    const p = new PrivacyPolicy(OUR_VENDOR, { tcfCacheEntries: 2 });
    const a = readPrivacySignals(gdpr(TC_CONSENT));
    const b = readPrivacySignals(gdpr(TC_NO_PURPOSES));
    const c = readPrivacySignals(gdpr(TC_OTHER_VENDOR));
    p.decide(a);
    p.decide(b);
    p.decide(a); // a is now the most recent: c evicts b
    p.decide(c);
    assert.equal(p.cacheStats().tcfSize, 2);
    const misses = p.cacheStats().tcfMisses;
    p.decide(a);
    assert.equal(p.cacheStats().tcfMisses, misses, 'a stayed');
    p.decide(b);
    assert.equal(p.cacheStats().tcfMisses, misses + 1, 'b was evicted');
  });

  it('never stores keys longer than the bound, but still decides them', () => {
    const p = new PrivacyPolicy(OUR_VENDOR, { cacheKeyChars: 10 });
    assert.equal(p.decide(readPrivacySignals(gdpr(TC_CONSENT))).reason, 'none');
    assert.equal(p.decide(readPrivacySignals(gdpr(TC_CONSENT))).reason, 'none');
    assert.equal(p.cacheStats().tcfSize, 0);
    assert.equal(p.cacheStats().tcfMisses, 2);
  });

  it('skips decoding when COPPA already decides', () => {
    const p = new PrivacyPolicy(OUR_VENDOR);
    p.decide(readPrivacySignals(gdpr(TC_CONSENT, { regs: { gdpr: 1, coppa: 1, gpp: GPP_SALE } })));
    const st = p.cacheStats();
    assert.equal(st.tcfMisses + st.gppMisses, 0);
  });

  it('holds no state between policy objects', () => {
    const a = new PrivacyPolicy(OUR_VENDOR);
    const b = new PrivacyPolicy(OTHER_VENDOR);
    assert.equal(a.decide(readPrivacySignals(gdpr(TC_CONSENT))).reason, 'none');
    assert.equal(b.decide(readPrivacySignals(gdpr(TC_CONSENT))).reason, 'gdpr_no_consent');
    assert.equal(b.cacheStats().tcfMisses, 1);
  });
});
