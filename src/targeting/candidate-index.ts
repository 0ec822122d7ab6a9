/**
 * The candidate index: built once per campaign load, read-only afterwards, swapped in as one
 * reference. Candidates are grouped by media type and shape (banner size, native image/icon) and
 * sorted by price, highest first, so that an auction walks one short list per requested shape and
 * stops at the first eligible candidate. Everything a filter needs is precomputed here (category
 * and domain keys to look up in the request's block lists, bitmasks of attributes, protocols,
 * device types), and so is what a bid writes that depends only on the candidate (CandidateJson).
 */
import type { Size } from '../openrtb/types';
import { CandidateJson } from './candidate-json';
import type { Candidate } from './types';
import { normalizeDomain } from './loader';

export const enum Kind {
  Banner = 1,
  Video = 2,
  Native = 4,
}

/** Native shape bits: what a creative has, what a request's required assets need. */
export const enum NativeShape {
  Image = 1,
  Icon = 2,
}

/** Bit `n` set for every n in 1..30 in `values`; larger values are ignored (see `attrsOver30`). */
function mask(values: readonly number[]): number {
  let m = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v >= 1 && v <= 30) m |= 1 << v;
  }
  return m;
}

// OpenRTB 2.x list 5.21 device types: 1 Mobile/Tablet (generic), 4 Phone, 5 Tablet.
const DEVICE_MOBILE_TABLET = 1;
const DEVICE_PHONE = 4;
const DEVICE_TABLET = 5;

/**
 * One candidate with its filter data precomputed. A class with every field set in the
 * constructor, so all entries share one hidden class (monomorphic property reads on the hot path).
 */
export class Entry {
  readonly kind: Kind;
  /** CPM in USD. */
  readonly price: number;
  /** null = site and app (not DOOH). */
  readonly inventory: 'site' | 'app' | null;
  /** Device types as a bitmask, 0 = any. "Mobile/Tablet" (1) and Phone/Tablet (4, 5) imply each other. */
  readonly deviceMask: number;
  readonly os: readonly string[];
  readonly countries: readonly string[];
  readonly secure: boolean;
  readonly attrMask: number;
  /** Attributes above 30 (exchange-specific); usually empty. */
  readonly attrsOver30: readonly number[];
  /** Categories and their parents ("IAB3-1" adds "IAB3"), lower-case, each once: looked up in bcat. */
  readonly catKeys: readonly string[];
  /** Advertiser domains (lower-case, without "www.") and their parent domains, each once: looked up in badv. */
  readonly advKeys: readonly string[];
  /** Advertised app bundle, '' when none. */
  readonly bundle: string;
  readonly deals: readonly string[];
  readonly dealsOnly: boolean;
  /** Banner size (Match.size), null for other kinds. */
  readonly size: Size | null;
  /** sizeKey of the banner size, -1 for other kinds (or a size no request can name). */
  readonly sizeKey: number;
  /** false: does not bid on child-directed inventory. */
  readonly coppaOk: boolean;
  /** Relies on user-level data. */
  readonly personalized: boolean;
  /** The campaign's DSA `adrender` (0, 1), -1 without DSA information. */
  readonly dsaRender: number;
  readonly json: CandidateJson;
  // video
  readonly vMimes: readonly string[];
  readonly vDuration: number;
  readonly vProtoMask: number;
  // native: text lengths (0 = absent) and image sizes (0 = absent)
  readonly nTitleLen: number;
  readonly nDescLen: number;
  readonly nSponsoredLen: number;
  readonly nCtaLen: number;
  readonly nImgW: number;
  readonly nImgH: number;
  readonly nIconW: number;
  readonly nIconH: number;
  readonly nShape: number;

  constructor(readonly c: Candidate) {
    this.kind = c.kind === 'banner' ? Kind.Banner : c.kind === 'video' ? Kind.Video : Kind.Native;
    this.price = c.price;
    this.inventory = c.targeting.inventory;
    let dm = mask(c.targeting.deviceTypes);
    if (dm & (1 << DEVICE_MOBILE_TABLET)) dm |= (1 << DEVICE_PHONE) | (1 << DEVICE_TABLET);
    if (dm & ((1 << DEVICE_PHONE) | (1 << DEVICE_TABLET))) dm |= 1 << DEVICE_MOBILE_TABLET;
    this.deviceMask = dm;
    this.os = c.targeting.os.map((s) => s.toLowerCase());
    this.countries = c.targeting.countries.map((s) => s.toUpperCase());
    this.secure = c.secure;
    this.attrMask = mask(c.attr);
    this.attrsOver30 = c.attr.filter((a) => a > 30);
    // The request's block lists are sets (lower-case bcat, normalized badv): a candidate looks up
    // its own few keys, so the work does not grow with the length of the lists.
    const cats = new Set<string>();
    for (const cat of c.cat) {
      const l = cat.toLowerCase();
      cats.add(l);
      const dash = l.indexOf('-');
      if (dash > 0) cats.add(l.slice(0, dash));
    }
    this.catKeys = [...cats];
    const doms = new Set<string>();
    for (const d of c.adomain) {
      // "store.apple.com" is blocked by "store.apple.com", "apple.com" and "com".
      let k = normalizeDomain(d);
      for (;;) {
        doms.add(k);
        const dot = k.indexOf('.');
        if (dot < 0) break;
        k = k.slice(dot + 1);
      }
    }
    this.advKeys = [...doms];
    this.bundle = c.bundle ?? '';
    this.deals = c.deals;
    this.dealsOnly = c.dealsOnly === true && c.deals.length > 0;
    this.size = c.banner ? Object.freeze({ w: c.banner.w, h: c.banner.h }) : null;
    this.sizeKey = c.banner ? sizeKey(c.banner.w, c.banner.h) : -1;
    this.coppaOk = c.coppa !== false;
    this.personalized = c.personalized === true;
    this.dsaRender = c.dsa ? c.dsa.adrender : -1;
    this.json = new CandidateJson(c);
    const v = c.video;
    this.vMimes = v ? v.mimes.map((m) => m.toLowerCase()) : [];
    this.vDuration = v ? v.duration : 0;
    this.vProtoMask = v ? mask(v.protocols) : 0;
    const n = c.native;
    this.nTitleLen = n ? n.title.length : 0;
    this.nDescLen = n ? n.description.length : 0;
    this.nSponsoredLen = n ? n.sponsoredBy.length : 0;
    this.nCtaLen = n ? n.cta.length : 0;
    this.nImgW = n && n.image ? n.image.w : 0;
    this.nImgH = n && n.image ? n.image.h : 0;
    this.nIconW = n && n.icon ? n.icon.w : 0;
    this.nIconH = n && n.icon ? n.icon.h : 0;
    this.nShape = (this.nImgW > 0 ? NativeShape.Image : 0) | (this.nIconW > 0 ? NativeShape.Icon : 0);
  }
}

/** One list of candidates, highest price first, and the sub-list of those that carry deals. */
export class Bucket {
  readonly all: readonly Entry[];
  readonly withDeals: readonly Entry[];
  /**
   * @param id For banner size buckets, 0 … sizeBucketCount − 1 (an auction marks the buckets it
   *   has scanned by id, so a size listed twice is scanned once); -1 for the others.
   */
  constructor(
    entries: Entry[],
    readonly id = -1,
  ) {
    entries.sort(byPriceDesc);
    this.all = entries;
    this.withDeals = entries.filter((e) => e.deals.length > 0);
  }
}

function byPriceDesc(a: Entry, b: Entry): number {
  // Ties broken by creative id so that the order (and the winner) never depends on file order.
  return b.price - a.price || (a.c.id < b.c.id ? -1 : a.c.id > b.c.id ? 1 : 0);
}

/** Largest banner width or height a size key holds. */
export const MAX_SIZE = 65535;

/**
 * Key of a banner size in `CandidateIndex.bannerBySize` (numbers: no string built per request);
 * -1 for a size outside 1..65535 or not whole, which matches nothing (w * 65536 + h would collide:
 * 299x65786 is 300x250).
 */
export function sizeKey(w: number, h: number): number {
  if (!(Number.isInteger(w) && Number.isInteger(h) && w >= 1 && h >= 1 && w <= MAX_SIZE && h <= MAX_SIZE)) return -1;
  return w * 65536 + h;
}

export class CandidateIndex {
  /** Every candidate, in file order. */
  readonly candidates: readonly Candidate[];
  readonly entries: readonly Entry[];
  readonly bannerBySize: ReadonlyMap<number, Bucket>;
  /** Every banner (for a banner imp that names no size). */
  readonly bannerAny: Bucket;
  readonly video: Bucket;
  /** Indexed by the NativeShape bits a request needs: [0] every native, [1] with a main image, [2] with an icon, [3] both. */
  readonly native: readonly Bucket[];
  /** Number of banner size buckets (their ids are 0 … sizeBucketCount − 1). */
  readonly sizeBucketCount: number;
  /** Banners in no size bucket (a size no request can name). */
  readonly unsizedBanners: number;
  private readonly byId: ReadonlyMap<string, Candidate>;

  constructor(candidates: readonly Candidate[]) {
    this.candidates = candidates;
    const entries: Entry[] = [];
    const sizes = new Map<number, Entry[]>();
    const banners: Entry[] = [];
    const videos: Entry[] = [];
    const natives: Entry[][] = [[], [], [], []];
    const byId = new Map<string, Candidate>();
    for (const c of candidates) {
      const e = new Entry(c);
      entries.push(e);
      byId.set(c.id, c);
      if (e.kind === Kind.Banner && c.banner) {
        banners.push(e);
        const k = e.sizeKey;
        if (k < 0) continue; // only a banner imp that names no size can take it
        let list = sizes.get(k);
        if (!list) sizes.set(k, (list = []));
        list.push(e);
      } else if (e.kind === Kind.Video && c.video) {
        videos.push(e);
      } else if (e.kind === Kind.Native && c.native) {
        for (let need = 0; need < 4; need++) if ((e.nShape & need) === need) natives[need].push(e);
      }
    }
    this.entries = entries;
    const bySize = new Map<number, Bucket>();
    for (const [k, list] of sizes) bySize.set(k, new Bucket(list, bySize.size));
    this.bannerBySize = bySize;
    this.sizeBucketCount = bySize.size;
    this.unsizedBanners = banners.filter((e) => e.sizeKey < 0).length;
    this.bannerAny = new Bucket(banners);
    this.video = new Bucket(videos);
    this.native = natives.map((l) => new Bucket(l));
    this.byId = byId;
  }

  get count(): number {
    return this.candidates.length;
  }

  /** The candidate with this creative id (`crid`), for notices and trackers. */
  get(crid: string): Candidate | undefined {
    return this.byId.get(crid);
  }
}
