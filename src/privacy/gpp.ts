/**
 * US opt-outs from the IAB Global Privacy Platform string (`regs.gpp`, decoded with the IAB's
 * `@iabgpp/cmpapi`) and from the legacy US Privacy string (`regs.us_privacy`).
 *
 * A US section opts the user out of what a DSP does with user data when it says so for sale,
 * sharing or targeted advertising (`SaleOptOut`, `SharingOptOut`, `TargetedAdvertisingOptOut` = 1,
 * "opted out", in the national section and every state section that has the field), when it
 * carries the Global Privacy Control signal (`Gpc`: the browser's opt-out, which California,
 * Colorado, Connecticut and others make binding), or, in the legacy `uspv1` section, when
 * `OptOutSale` is `Y`. Other sections (TCF EU and Canada) are not read here: GDPR is decided from
 * `regs.gdpr` and `user.consent`.
 */
import { GppModel, Sections } from '@iabgpp/cmpapi';

/** Section ids of the US sections the library knows (`uspv1`, `usnat` and the states), from its own table. */
export const US_SECTION_IDS: ReadonlySet<number> = new Set(
  [...Sections.SECTION_ID_NAME_MAP].filter(([, name]) => name.startsWith('us')).map(([id]) => id),
);
const MAX_SID = Math.max(...US_SECTION_IDS);
const USPV1_ID = 6;

export const enum GppOutcome {
  NoOptOut = 0,
  OptOut = 1,
  /** A section that must be read cannot be: see gppOutcome. */
  Malformed = 2,
}

const enum SectionState {
  Absent = 0,
  NoOptOut = 1,
  OptOut = 2,
  Malformed = 3,
}

/** What one GPP string says, section by section: computed once per distinct string (decoding is slow). */
export interface GppReading {
  /** False when the header cannot be decoded: then no section can be read. */
  readonly readable: boolean;
  /** The US section ids present in the string. */
  readonly present: readonly number[];
  /** SectionState by section id (index), for the US sections. */
  readonly states: Uint8Array;
}

const UNREADABLE: GppReading = Object.freeze({ readable: false, present: Object.freeze([]), states: new Uint8Array(0) });

const OPT_OUT_FIELDS = ['SaleOptOut', 'SharingOptOut', 'TargetedAdvertisingOptOut'] as const;

function sectionState(model: GppModel, sid: number): SectionState {
  try {
    if (sid === USPV1_ID) return model.getFieldValueBySectionId(sid, 'OptOutSale') === 'Y' ? SectionState.OptOut : SectionState.NoOptOut;
    for (const f of OPT_OUT_FIELDS) {
      // 0 = not applicable, 1 = opted out, 2 = did not opt out (IAB MSPA US sections).
      if (model.hasFieldBySectionId(sid, f) && model.getFieldValueBySectionId(sid, f) === 1) return SectionState.OptOut;
    }
    if (model.hasFieldBySectionId(sid, 'Gpc')) {
      const gpc: unknown = model.getFieldValueBySectionId(sid, 'Gpc');
      if (gpc === true || gpc === 1) return SectionState.OptOut;
    }
    return SectionState.NoOptOut;
  } catch {
    // Sections decode lazily: a bad section throws here, not in the constructor.
    return SectionState.Malformed;
  }
}

/** Decodes a GPP string once; never throws. */
export function readGpp(gpp: string): GppReading {
  let model: GppModel;
  let ids: unknown[];
  try {
    model = new GppModel(gpp);
    ids = model.getSectionIds();
  } catch {
    return UNREADABLE;
  }
  const states = new Uint8Array(MAX_SID + 1);
  const present: number[] = [];
  for (const id of ids) {
    if (typeof id !== 'number' || !US_SECTION_IDS.has(id)) continue;
    present.push(id);
    states[id] = sectionState(model, id);
  }
  return { readable: true, present, states };
}

/**
 * The outcome for the sections that apply: those in `gpp_sid`, or, when the request does not say
 * (or says it unreadably), every US section of the string. An opt-out in any of them wins. The
 * string counts as malformed when a section that applies cannot be read: an undecodable header, a
 * section that fails to decode, or a US section listed in `gpp_sid` but missing from the string
 * (the CMP's statement cannot be checked, so it is not taken as "no opt-out"). Section ids that are
 * not US sections known to the library (TCF, or a state added to GPP after this library version)
 * are skipped.
 */
export function gppOutcome(reading: GppReading, sids: readonly number[] | null): GppOutcome {
  if (sids === null) {
    if (!reading.readable) return GppOutcome.Malformed;
    sids = reading.present;
  }
  let malformed = false;
  for (let i = 0; i < sids.length; i++) {
    const sid = sids[i];
    if (!US_SECTION_IDS.has(sid)) continue;
    const state = (reading.readable ? reading.states[sid] : SectionState.Malformed) as SectionState;
    if (state === SectionState.OptOut) return GppOutcome.OptOut;
    if (state !== SectionState.NoOptOut) malformed = true;
  }
  return malformed ? GppOutcome.Malformed : GppOutcome.NoOptOut;
}

/**
 * The legacy IAB US Privacy string (CCPA): 4 characters, version `1`, then notice given,
 * opted out of sale, covered by the LSPA, each `Y`, `N` or `-` (not applicable). True when the
 * user opted out of sale (third character `Y`, either case). A string that is not of this form is
 * ignored (no opt-out): exchanges fill the field with placeholders often enough that refusing user
 * data on them would cost fill without honouring any user's choice; GPP is the format that carries
 * a CMP's statement, and a malformed one there is taken seriously.
 */
const US_PRIVACY = /^1[YNyn-]{3}$/;

export function usPrivacyOptOut(s: string): boolean {
  return s.length === 4 && US_PRIVACY.test(s) && (s[2] === 'Y' || s[2] === 'y');
}
