/**
 * The privacy signals of an OpenRTB 2.5/2.6 bid request, read once per request into one fixed
 * shape. Lenient like `src/openrtb/parse.ts` (numbers as strings, flags as booleans), but it never
 * throws: a privacy signal must never turn a request into a 400.
 *
 * Flags (gdpr, coppa, lmt, dnt) fail closed: absent, null or "" is "not said"; 0/1, true/false,
 * "0"/"1", "true"/"false" are read as said; any other value (`"yes"`, `2`, `" 1"`, an object) is
 * present but unreadable and counts as 1, the flag applies. An unreadable `regs.gdpr` applies
 * whatever `regs.ext.gdpr` says. Strings and lists of an odd type (a numeric consent string, an
 * array for `gpp`) count as absent: a missing TC string under GDPR already means no consent, and a
 * us_privacy string the policy cannot read is ignored (docs/privacy.md says why).
 *
 * Where each signal lives (OpenRTB 2.6 moved them out of `ext`; older exchanges still use `ext`):
 *   gdpr       `regs.gdpr`, else `regs.ext.gdpr`
 *   consent    `user.consent`, else `user.ext.consent` (IAB TCF v2 "TC string")
 *   coppa      `regs.coppa`
 *   usPrivacy  `regs.us_privacy`, else `regs.ext.us_privacy` (IAB CCPA string, e.g. `1YNN`)
 *   gpp        `regs.gpp` (IAB Global Privacy Platform string)
 *   gppSid     `regs.gpp_sid` (the GPP sections that apply)
 *   lmt, dnt   `device.lmt`, `device.dnt`
 */

/** Consent and GPP strings longer than this (characters) count as malformed; real ones are a few hundred. */
export const MAX_PRIVACY_STRING_CHARS = 4096;
/** `regs.gpp_sid` with more entries than this is treated as absent (the spec expects one, rarely a few). */
export const MAX_GPP_SIDS = 32;

export type Flag = 0 | 1 | null;

export interface PrivacySignals {
  /** 1: GDPR applies (or the flag is unreadable); 0: it does not; null: not said. */
  readonly gdpr: Flag;
  /** The TC string as sent, null when absent or empty; longer than MAX_PRIVACY_STRING_CHARS means malformed. */
  readonly consent: string | null;
  readonly coppa: Flag;
  /** The US Privacy string as sent, null when absent or empty. */
  readonly usPrivacy: string | null;
  /** The GPP string as sent, null when absent or empty; longer than MAX_PRIVACY_STRING_CHARS means malformed. */
  readonly gpp: string | null;
  /** Section ids that apply; null when absent or not a list of at most MAX_GPP_SIDS integers. */
  readonly gppSid: readonly number[] | null;
  readonly lmt: Flag;
  readonly dnt: Flag;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : null;
}

/** 1/0, true/false, "1"/"0"/"true"/"false"; absent, null or "" is null; anything else is 1 (fail closed). */
function flag(v: unknown): Flag {
  if (v === 1 || v === true || v === '1' || v === 'true') return 1;
  if (v === 0 || v === false || v === '0' || v === 'false') return 0;
  return v === undefined || v === null || v === '' ? null : 1;
}

/** A non-empty string, else null. */
function text(v: unknown): string | null {
  return typeof v === 'string' && v !== '' ? v : null;
}

/** An integer, or a string holding one, else NaN. */
function int(v: unknown): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
  return Number.isInteger(n) ? n : NaN;
}

function sids(v: unknown): readonly number[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) {
    // A lone integer is a one-element list, as parse.ts reads other integer lists.
    const n = int(v);
    return Number.isNaN(n) ? null : [n];
  }
  if (v.length > MAX_GPP_SIDS) return null;
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    const n = int(v[i]);
    if (Number.isNaN(n)) return null;
    out.push(n);
  }
  return out;
}

/** Reads the privacy signals of a parsed request body (any value; a non-object has none). */
export function readPrivacySignals(body: unknown): PrivacySignals {
  const b = obj(body);
  const regs = b === null ? null : obj(b.regs);
  const regsExt = regs === null ? null : obj(regs.ext);
  const user = b === null ? null : obj(b.user);
  const userExt = user === null ? null : obj(user.ext);
  const device = b === null ? null : obj(b.device);

  let gdpr = regs === null ? null : flag(regs.gdpr);
  if (gdpr === null && regsExt !== null) gdpr = flag(regsExt.gdpr);
  let consent = user === null ? null : text(user.consent);
  if (consent === null && userExt !== null) consent = text(userExt.consent);
  let usPrivacy = regs === null ? null : text(regs.us_privacy);
  if (usPrivacy === null && regsExt !== null) usPrivacy = text(regsExt.us_privacy);

  return {
    gdpr,
    consent,
    coppa: regs === null ? null : flag(regs.coppa),
    usPrivacy,
    gpp: regs === null ? null : text(regs.gpp),
    gppSid: regs === null ? null : sids(regs.gpp_sid),
    lmt: device === null ? null : flag(device.lmt),
    dnt: device === null ? null : flag(device.dnt),
  };
}
