/**
 * Real TC and GPP strings for the privacy tests, built with the IAB's own encoders (the same
 * libraries that decode them in src/privacy), so the tests exercise real encodings, not fixtures
 * copied from elsewhere.
 */
import { GppModel } from '@iabgpp/cmpapi';
import { GVL, PurposeRestriction, RestrictionType, TCModel, TCString } from '@iabtcf/core';

export const OUR_VENDOR = 42;
export const OTHER_VENDOR = 99;

function gvl(vendorIds: number[]): GVL {
  const purposes: Record<string, object> = {};
  for (let i = 1; i <= 11; i++) purposes[i] = { id: i, name: `purpose ${i}`, description: '', illustrations: [] };
  const vendor = (id: number): object => ({
    id,
    name: `vendor ${id}`,
    purposes: [1, 2, 3, 4, 7],
    legIntPurposes: [],
    flexiblePurposes: [2, 7],
    specialPurposes: [],
    features: [],
    specialFeatures: [],
    policyUrl: 'https://vendor.example/privacy',
    usesCookies: false,
    cookieRefresh: false,
    usesNonCookieAccess: false,
  });
  // A made-up Global Vendor List (the real one is a 1 MB download): the given vendors, 11 purposes.
  const vendors: Record<string, object> = {};
  for (const id of vendorIds) vendors[id] = vendor(id);
  return new GVL({
    gvlSpecificationVersion: 3,
    vendorListVersion: 50,
    tcfPolicyVersion: 4,
    lastUpdated: '2025-01-01T00:00:00Z',
    purposes,
    specialPurposes: {},
    features: {},
    specialFeatures: {},
    vendors,
    stacks: {},
    dataCategories: {},
  } as never);
}

const SMALL_GVL = gvl([OUR_VENDOR, OTHER_VENDOR]);
let largeGvl: GVL | null = null;

export interface TcOptions {
  /** Vendors with consent. */
  vendors: number[];
  /** Purposes with consent. */
  purposes: number[];
  /** Publisher restrictions for OUR_VENDOR: purpose → restriction type. */
  restrictions?: Array<[number, RestrictionType]>;
  /** The CMP's id (default 10): a way to make distinct strings with the same consents. */
  cmpId?: number;
  /** A vendor list of 1000 vendors instead of two (for strings of a realistic length). */
  largeVendorList?: boolean;
}

/** A TCF v2.2 string with the given consents. */
export function tcString(o: TcOptions): string {
  const list = o.largeVendorList === true ? (largeGvl ??= gvl(Array.from({ length: 1000 }, (_, i) => i + 1))) : SMALL_GVL;
  const m = new TCModel(list);
  m.cmpId = o.cmpId ?? 10;
  m.cmpVersion = 1;
  m.vendorConsents.set(o.vendors);
  m.purposeConsents.set(o.purposes);
  for (const [purpose, type] of o.restrictions ?? []) m.publisherRestrictions.add(OUR_VENDOR, new PurposeRestriction(purpose, type));
  return TCString.encode(m);
}

/** A GPP string with the given fields: `{ usnat: { SaleOptOut: 1 }, usca: {…} }`. */
export function gppString(sections: Record<string, Record<string, unknown>>): string {
  const m = new GppModel();
  for (const [section, fields] of Object.entries(sections)) {
    for (const [field, value] of Object.entries(fields)) m.setFieldValue(section, field, value);
  }
  return m.encode();
}

export { RestrictionType };
