import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MAX_GPP_SIDS, readPrivacySignals, type PrivacySignals } from '../../src/privacy/signals';

const NONE: PrivacySignals = { gdpr: null, consent: null, coppa: null, usPrivacy: null, gpp: null, gppSid: null, lmt: null, dnt: null };

describe('privacy: readPrivacySignals', () => {
  const cases: { why: string; body: unknown; want: Partial<PrivacySignals> }[] = [
    { why: 'no signals', body: { id: 'r', imp: [] }, want: {} },
    { why: 'OpenRTB 2.6 places', body: { regs: { gdpr: 1, coppa: 0, us_privacy: '1YNN', gpp: 'DBAA', gpp_sid: [7, 8] }, user: { consent: 'CQ' }, device: { lmt: 1, dnt: 0 } }, want: { gdpr: 1, coppa: 0, usPrivacy: '1YNN', gpp: 'DBAA', gppSid: [7, 8], consent: 'CQ', lmt: 1, dnt: 0 } },
    { why: 'OpenRTB 2.5 ext places', body: { regs: { ext: { gdpr: 1, us_privacy: '1YYN' } }, user: { ext: { consent: 'CQ' } } }, want: { gdpr: 1, usPrivacy: '1YYN', consent: 'CQ' } },
    { why: '2.6 place wins over ext', body: { regs: { gdpr: 0, ext: { gdpr: 1 } }, user: { consent: 'A', ext: { consent: 'B' } } }, want: { gdpr: 0, consent: 'A' } },
    { why: 'an absent 2.6 value falls back to ext', body: { regs: { gdpr: null, ext: { gdpr: '1' } }, user: { consent: 7, ext: { consent: 'B' } } }, want: { gdpr: 1, consent: 'B' } },
    { why: 'an unreadable 2.6 value applies, whatever ext says', body: { regs: { gdpr: 'yes', ext: { gdpr: '0' } } }, want: { gdpr: 1 } },
    { why: 'numbers as strings, flags as booleans', body: { regs: { gdpr: '1', coppa: true, gpp_sid: ['7', '8'] }, device: { lmt: 'true', dnt: false } }, want: { gdpr: 1, coppa: 1, gppSid: [7, 8], lmt: 1, dnt: 0 } },
    { why: 'a lone gpp_sid', body: { regs: { gpp_sid: 7 } }, want: { gppSid: [7] } },
    { why: 'odd types of strings and lists are absent', body: { regs: { us_privacy: 1, gpp: ['x'], gpp_sid: 'seven' }, user: { consent: {} } }, want: {} },
    { why: 'flags of odd types apply (fail closed)', body: { regs: { gdpr: 2, coppa: {} }, device: { lmt: 'no', dnt: [] } }, want: { gdpr: 1, coppa: 1, lmt: 1, dnt: 1 } },
    { why: 'an empty string flag is not said', body: { regs: { gdpr: '', coppa: '' }, device: { lmt: '', dnt: '' } }, want: {} },
    { why: 'empty strings are absent', body: { regs: { us_privacy: '', gpp: '' }, user: { consent: '' } }, want: {} },
    { why: 'a non-integer sid makes the list absent', body: { regs: { gpp_sid: [7, 7.5] } }, want: {} },
    { why: 'a sid that is not a number makes the list absent', body: { regs: { gpp_sid: [7, null] } }, want: {} },
    { why: 'too many sids', body: { regs: { gpp_sid: Array.from({ length: MAX_GPP_SIDS + 1 }, (_, i) => i) } }, want: {} },
    { why: `${MAX_GPP_SIDS} sids are fine`, body: { regs: { gpp_sid: Array.from({ length: MAX_GPP_SIDS }, (_, i) => i) } }, want: { gppSid: Array.from({ length: MAX_GPP_SIDS }, (_, i) => i) } },
    { why: 'regs, user, device of the wrong type', body: { regs: [1], user: 'u', device: 5 }, want: {} },
    { why: 'body is null', body: null, want: {} },
    { why: 'body is an array', body: [{ regs: { gdpr: 1 } }], want: {} },
    { why: 'body is a string', body: 'regs', want: {} },
  ];
  for (const c of cases) {
    it(c.why, () => {
      assert.deepEqual(readPrivacySignals(c.body), { ...NONE, ...c.want });
    });
  }

  // Spellings exchanges were seen to send, or an attacker may: present but not 0/1 means the flag applies.
  const UNREADABLE: unknown[] = ['yes', 'no', 'Y', 'TRUE', ' 1', '1 ', '01', '0.0', 2, -1, 0.5, 1.0000001, Number.MAX_VALUE, '\u0661', [1], [], {}, { v: 1 }];
  for (const v of UNREADABLE) {
    it(`an unreadable flag (${JSON.stringify(v)}) applies: gdpr, ext.gdpr, coppa, lmt, dnt`, () => {
      assert.deepEqual(readPrivacySignals({ regs: { gdpr: v, coppa: v }, device: { lmt: v, dnt: v } }), { ...NONE, gdpr: 1, coppa: 1, lmt: 1, dnt: 1 });
      assert.equal(readPrivacySignals({ regs: { ext: { gdpr: v } } }).gdpr, 1);
    });
  }

  it('keeps an overlong string as sent (the policy counts it as malformed)', () => {
    const long = 'C'.repeat(10_000);
    assert.equal(readPrivacySignals({ user: { consent: long } }).consent, long);
  });

  it('gives every result the same keys in the same order (one shape)', () => {
    const a = Object.keys(readPrivacySignals({}));
    const b = Object.keys(readPrivacySignals({ regs: { gdpr: 1, ext: { us_privacy: '1YNN' } }, user: { ext: { consent: 'x' } }, device: { lmt: 1 } }));
    assert.deepEqual(a, b);
    assert.deepEqual(a, Object.keys(NONE));
  });
});
