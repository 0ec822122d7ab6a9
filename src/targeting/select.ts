/**
 * The auction for one imp: filters the index's candidates against the request and picks the best.
 * Pure and synchronous; no allocation per candidate, no closures per request. Only the winner
 * allocates (its Match, and for native its NativeFill[]).
 *
 * Filters, in the order they run for each candidate (cheap first; this order is also the "stage"
 * used for the no-bid reason, see below):
 *   size (banner, by index lookup) → inventory → device → os → country → secure → battr → bcat →
 *   badv → bapp → video (mimes, duration, protocols) | native_assets → deal → currency → floor
 *   → the optional gate (budget, frequency_cap: asked only about a would-be winner)
 *
 * No-bid reason: every rejected candidate is rejected at one stage (the first filter it fails).
 * The imp's reason is the stage of the candidate that got FURTHEST down that list (ties: the
 * first one met, i.e. the highest priced), so "floor" means "something matched everything but
 * price", "bcat" means "nothing survived bcat, and some survived everything before it",
 * "budget" means "something would have won but its campaign is out of budget", etc.
 * Imp-level reasons come before any candidate is looked at: an empty index → "no_candidates";
 * no banner/video/native object → "media_type"; a requested media type with no candidates →
 * "media_type"; a banner size nobody has → "size"; an unknown bid currency, or an unknown
 * `bidfloorcur` with a floor above 0 → "currency"; a private auction without deals → "deal"; a
 * native request without assets → "native_assets".
 *
 * Deals (OpenRTB 2.6 §3.2.11-12): with `pmp.private_auction` only deal bids count; the deal's
 * floor is `deal.bidfloor` in `deal.bidfloorcur` (USD when absent, never the imp's currency) and
 * replaces the imp floor. Without private_auction a deal bid is preferred: the best candidate
 * eligible for one of the imp's deals wins even over a higher open-market price (deals are
 * negotiated commitments); otherwise the best open-market candidate (price ≥ imp floor, campaign
 * not `dealsOnly`) wins. When an imp carries several media types (banner + video), all are
 * searched and the highest price wins.
 */
import { MType, NativeAssetKind, type BidRequest, type Imp, type NativeAssetReq, type Size, type VideoImp } from '../openrtb/types';
import { Bucket, CandidateIndex, Entry, Kind, NativeShape, sizeKey } from './candidate-index';
import { convert, unitsPerUsd } from './currency';
import type { CandidateGate, Match, NativeFill, NoBidReason } from './types';

const enum Stage {
  None = 0,
  MediaType,
  Size,
  Inventory,
  Device,
  Os,
  Country,
  Secure,
  Battr,
  Bcat,
  Badv,
  Bapp,
  Video,
  NativeAssets,
  Deal,
  Currency,
  Floor,
  Budget,
  FrequencyCap,
}

/** Stage → reason; the index is the stage. */
const REASONS: readonly NoBidReason[] = [
  'no_candidates',
  'media_type',
  'size',
  'inventory',
  'device',
  'os',
  'country',
  'secure',
  'battr',
  'bcat',
  'badv',
  'bapp',
  'video',
  'native_assets',
  'deal',
  'currency',
  'floor',
  'budget',
  'frequency_cap',
];

/** The order in which filters run and rank for the no-bid reason (documentation and tests). */
export const FILTER_ORDER: readonly NoBidReason[] = REASONS.slice(1);

// ---- per-candidate filters (no allocation) -------------------------------------------------------

function attrBlocked(e: Entry, battr: readonly number[]): boolean {
  for (let i = 0; i < battr.length; i++) {
    const a = battr[i];
    if (a >= 1 && a <= 30) {
      if ((e.attrMask & (1 << a)) !== 0) return true;
    } else if (e.attrsOver30.length !== 0 && e.attrsOver30.includes(a)) {
      return true;
    }
  }
  return false;
}

/** bcat holds top-level ("IAB1") or sub ("IAB1-2") categories; the entry's set holds both its own and their parents. */
function catBlocked(e: Entry, bcat: readonly string[]): boolean {
  for (let i = 0; i < bcat.length; i++) if (e.cats.has(bcat[i])) return true;
  return false;
}

/**
 * A blocked "apple.com" blocks "apple.com" and its subdomains ("store.apple.com"); a blocked
 * "www.apple.com" blocks "apple.com" too (candidate domains are stored without "www.").
 * badv arrives lower-cased from the parser.
 */
function advBlocked(e: Entry, badv: readonly string[]): boolean {
  const doms = e.adomain;
  for (let i = 0; i < badv.length; i++) {
    const b = badv[i];
    for (let j = 0; j < doms.length; j++) {
      const d = doms[j];
      if (d === b) return true;
      if (d.length > b.length && d.charCodeAt(d.length - b.length - 1) === 46 /* . */ && d.endsWith(b)) return true;
      if (b.length === d.length + 4 && b.startsWith('www.') && b.endsWith(d)) return true;
    }
  }
  return false;
}

/** ASCII case-insensitive equality against an already lower-case string, without allocating. */
function eqLower(s: string, lower: string): boolean {
  if (s === lower) return true;
  if (s.length !== lower.length) return false;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== lower.charCodeAt(i)) return false;
  }
  return true;
}

function videoFits(e: Entry, v: VideoImp): boolean {
  if (v.minduration > 0 && e.vDuration < v.minduration) return false;
  if (v.maxduration > 0 && e.vDuration > v.maxduration) return false;
  const protocols = v.protocols;
  if (protocols.length !== 0) {
    let ok = false;
    for (let i = 0; i < protocols.length; i++) {
      const p = protocols[i];
      if (p >= 1 && p <= 30 && (e.vProtoMask & (1 << p)) !== 0) {
        ok = true;
        break;
      }
    }
    if (!ok) return false;
  }
  const mimes = v.mimes;
  if (mimes.length !== 0) {
    const mine = e.vMimes;
    for (let i = 0; i < mimes.length; i++) {
      for (let j = 0; j < mine.length; j++) if (eqLower(mimes[i], mine[j])) return true;
    }
    return false;
  }
  return true;
}

/**
 * Native 1.2 image size: `wmin`/`hmin` are minimums; without them `w`/`h` ask for that exact size;
 * with neither any size fits. Each dimension is checked on its own.
 */
function imgFits(w: number, h: number, a: NativeAssetReq): boolean {
  if (w === 0) return false;
  if (a.wmin > 0 ? w < a.wmin : a.w > 0 && w !== a.w) return false;
  if (a.hmin > 0 ? h < a.hmin : a.h > 0 && h !== a.h) return false;
  return true;
}

const IMG_NONE = 0;
const IMG_MAIN = 1;
const IMG_ICON = 2;

/** Which image answers an img asset: type 3 main, type 1 icon (2, "logo" in Native 1.0/1.1, too), no type: main else icon. */
function imgChoice(e: Entry, a: NativeAssetReq): number {
  switch (a.type) {
    case 3:
      return imgFits(e.nImgW, e.nImgH, a) ? IMG_MAIN : IMG_NONE;
    case 1:
    case 2:
      return imgFits(e.nIconW, e.nIconH, a) ? IMG_ICON : IMG_NONE;
    case 0:
      if (imgFits(e.nImgW, e.nImgH, a)) return IMG_MAIN;
      return imgFits(e.nIconW, e.nIconH, a) ? IMG_ICON : IMG_NONE;
    default:
      return IMG_NONE;
  }
}

/** Length of the candidate's value for a Native data type (1 sponsored, 2 desc, 12 ctatext); 0 when it has none or we don't support the type. */
function dataLen(e: Entry, type: number): number {
  switch (type) {
    case 1:
      return e.nSponsoredLen;
    case 2:
      return e.nDescLen;
    case 12:
      return e.nCtaLen;
    default:
      return 0;
  }
}

/** Can this candidate fill this asset? A value longer than `len` cannot (it is not cut). */
function assetFits(e: Entry, a: NativeAssetReq): boolean {
  switch (a.kind) {
    case NativeAssetKind.Title:
      return e.nTitleLen > 0 && (a.len === 0 || e.nTitleLen <= a.len);
    case NativeAssetKind.Img:
      return imgChoice(e, a) !== IMG_NONE;
    case NativeAssetKind.Data: {
      const n = dataLen(e, a.type);
      return n > 0 && (a.len === 0 || n <= a.len);
    }
    default:
      // Native video assets (and anything unknown) are not supported.
      return false;
  }
}

/** Every required asset fillable, and at least one asset filled in all. */
function nativeFits(e: Entry, assets: readonly NativeAssetReq[]): boolean {
  let filled = 0;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (assetFits(e, a)) filled++;
    else if (a.required) return false;
  }
  return filled > 0;
}

/** The shape (NativeShape bits) a creative must have to fill the required image assets. */
function nativeNeed(assets: readonly NativeAssetReq[]): number {
  let need = 0;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (!a.required || a.kind !== NativeAssetKind.Img) continue;
    if (a.type === 3) need |= NativeShape.Image;
    else if (a.type === 1 || a.type === 2) need |= NativeShape.Icon;
  }
  return need;
}

function battrFor(kind: Kind, imp: Imp): readonly number[] {
  if (kind === Kind.Banner) return imp.banner !== null ? imp.banner.battr : EMPTY;
  if (kind === Kind.Video) return imp.video !== null ? imp.video.battr : EMPTY;
  return imp.native !== null ? imp.native.battr : EMPTY;
}
const EMPTY: readonly number[] = [];

/** 0 when the candidate passes targeting, blocking and creative-shape filters, else the stage that rejected it. */
function candidateStage(e: Entry, imp: Imp, req: BidRequest, battr: readonly number[]): Stage {
  const inv = e.inventory;
  if (inv === null ? req.inventory === 'dooh' : inv !== req.inventory) return Stage.Inventory;
  if (e.deviceMask !== 0) {
    const d = req.deviceType;
    if (d < 1 || d > 30 || (e.deviceMask & (1 << d)) === 0) return Stage.Device;
  }
  if (e.os.length !== 0 && (req.os === '' || !e.os.includes(req.os))) return Stage.Os;
  if (e.countries.length !== 0 && (req.country === '' || !e.countries.includes(req.country))) return Stage.Country;
  if (imp.secure && !e.secure) return Stage.Secure;
  if (battr.length !== 0 && attrBlocked(e, battr)) return Stage.Battr;
  if (req.bcat.length !== 0 && catBlocked(e, req.bcat)) return Stage.Bcat;
  if (req.badv.length !== 0 && advBlocked(e, req.badv)) return Stage.Badv;
  // bapp lists advertised apps the publisher does not want promoted (OpenRTB 2.6 §3.2.1).
  if (e.bundle !== '' && req.bapp.length !== 0 && req.bapp.includes(e.bundle)) return Stage.Bapp;
  if (e.kind === Kind.Video) {
    if (imp.video === null || !videoFits(e, imp.video)) return Stage.Video;
  } else if (e.kind === Kind.Native) {
    if (imp.native === null || !nativeFits(e, imp.native.assets)) return Stage.NativeAssets;
  }
  return Stage.None;
}

// ---- the scan ------------------------------------------------------------------------------------

/**
 * State of one selectForImp call. One module-level instance, reset at the start of each call:
 * selectForImp is synchronous, so calls never interleave (per worker), and nothing is allocated.
 */
class Scan {
  stage: Stage = Stage.None;
  best: Entry | null = null;
  bestPrice = 0;
  bestDeal: string | null = null;
  rate = 1;
  floor = 0;
  bidCur = 'USD';
  priv = false;
  gate: CandidateGate | null = null;

  reset(rate: number, floor: number, bidCur: string, priv: boolean, gate: CandidateGate | null): void {
    this.stage = Stage.None;
    this.best = null;
    this.bestPrice = 0;
    this.bestDeal = null;
    this.rate = rate;
    this.floor = floor;
    this.bidCur = bidCur;
    this.priv = priv;
    this.gate = gate;
  }

  rec(stage: Stage): void {
    if (stage > this.stage) this.stage = stage;
  }
}
const S = new Scan();

/**
 * The first of the imp's deals this candidate may bid on at this price, or null; `S.rec` gets
 * why not ("deal": no deal in common, "currency": its floor's currency is unknown, "floor").
 */
function matchDeal(e: Entry, imp: Imp, price: number, recordNoDeal: boolean): string | null {
  const deals = imp.pmp !== null ? imp.pmp.deals : null;
  if (deals === null) return null;
  let why = Stage.Deal;
  for (let i = 0; i < deals.length; i++) {
    const d = deals[i];
    if (!e.deals.includes(d.id)) continue;
    if (d.bidfloor > 0) {
      const f = convert(d.bidfloor, d.bidfloorcur, S.bidCur);
      if (f === null) {
        if (why < Stage.Currency) why = Stage.Currency;
        continue;
      }
      if (price < f) {
        why = Stage.Floor;
        continue;
      }
    }
    return d.id;
  }
  if (recordNoDeal || why !== Stage.Deal) S.rec(why);
  return null;
}

function scanDeals(list: readonly Entry[], imp: Imp, req: BidRequest, battr: readonly number[]): void {
  if (list.length === 0) {
    if (S.priv) S.rec(Stage.Deal);
    return;
  }
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    const price = e.price * S.rate;
    // Sorted by price: nothing further down can beat what we have.
    if (S.best !== null && price <= S.bestPrice) return;
    const st = candidateStage(e, imp, req, battr);
    if (st !== Stage.None) {
      S.rec(st);
      continue;
    }
    // Outside a private auction a candidate without a matching deal is no rejection yet: the open pass sees it.
    const dealId = matchDeal(e, imp, price, S.priv);
    if (dealId === null || gated(e, req)) continue;
    S.best = e;
    S.bestPrice = price;
    S.bestDeal = dealId;
    return;
  }
}

function scanOpen(list: readonly Entry[], imp: Imp, req: BidRequest, battr: readonly number[]): void {
  for (let i = 0; i < list.length; i++) {
    const e = list[i];
    const price = e.price * S.rate;
    if (S.best !== null && price <= S.bestPrice) return;
    const st = candidateStage(e, imp, req, battr);
    if (st !== Stage.None) {
      S.rec(st);
      continue;
    }
    if (e.dealsOnly) {
      S.rec(Stage.Deal);
      continue;
    }
    if (price < S.floor) {
      // Everything further down is cheaper: it would stop at the floor at the latest (the gate comes after it).
      S.rec(Stage.Floor);
      return;
    }
    if (gated(e, req)) continue;
    S.best = e;
    S.bestPrice = price;
    S.bestDeal = null;
    return;
  }
}

/** Asks the gate (if any) about a would-be winner; true (and the stage recorded) when it says no. */
function gated(e: Entry, req: BidRequest): boolean {
  if (S.gate === null) return false;
  const why = S.gate.check(e.c, req);
  if (why === null) return false;
  S.rec(why === 'budget' ? Stage.Budget : Stage.FrequencyCap);
  return true;
}

function scanBucket(b: Bucket, imp: Imp, req: BidRequest, battr: readonly number[], deals: boolean): void {
  if (deals) scanDeals(b.withDeals, imp, req, battr);
  else scanOpen(b.all, imp, req, battr);
}

/** Runs one pass (deal or open) over every bucket the imp asks for. */
function scanImp(index: CandidateIndex, imp: Imp, req: BidRequest, deals: boolean): void {
  const banner = imp.banner;
  if (banner !== null) {
    if (index.bannerAny.all.length === 0) {
      S.rec(Stage.MediaType);
    } else if (banner.sizes.length === 0) {
      scanBucket(index.bannerAny, imp, req, banner.battr, deals);
    } else {
      const sizes = banner.sizes;
      for (let i = 0; i < sizes.length; i++) {
        const b = index.bannerBySize.get(sizeKey(sizes[i].w, sizes[i].h));
        if (b === undefined) S.rec(Stage.Size);
        else scanBucket(b, imp, req, banner.battr, deals);
      }
    }
  }
  const video = imp.video;
  if (video !== null) {
    if (index.video.all.length === 0) S.rec(Stage.MediaType);
    else scanBucket(index.video, imp, req, video.battr, deals);
  }
  const native = imp.native;
  if (native !== null) {
    if (index.native[0].all.length === 0) {
      S.rec(Stage.MediaType);
    } else if (native.assets.length === 0) {
      S.rec(Stage.NativeAssets);
    } else {
      const b = index.native[nativeNeed(native.assets)];
      if (b.all.length === 0) S.rec(Stage.NativeAssets);
      else scanBucket(b, imp, req, native.battr, deals);
    }
  }
}

/** Imp-level checks shared by selectForImp and explain: the reason, or null to go on. */
function impLevel(index: CandidateIndex, imp: Imp, bidCur: string): NoBidReason | null {
  if (index.count === 0) return 'no_candidates';
  if (imp.banner === null && imp.video === null && imp.native === null) return 'media_type';
  if (unitsPerUsd(bidCur) === null) return 'currency';
  if (imp.bidfloor > 0 && unitsPerUsd(imp.bidfloorcur) === null) return 'currency';
  if (imp.pmp !== null && imp.pmp.privateAuction && imp.pmp.deals.length === 0) return 'deal';
  return null;
}

/** The imp floor in the bid currency (call after impLevel said the currencies are known). */
function impFloor(imp: Imp, bidCur: string): number {
  return imp.bidfloor > 0 ? (convert(imp.bidfloor, imp.bidfloorcur, bidCur) ?? 0) : 0;
}

/**
 * Picks the best eligible candidate for one imp, or says why there is none.
 * `bidCur` is the response currency (see chooseBidCurrency); prices and floors are compared in it.
 */
export function selectForImp(
  index: CandidateIndex,
  imp: Imp,
  req: BidRequest,
  bidCur: string,
  gate: CandidateGate | null = null,
): Match | NoBidReason {
  const early = impLevel(index, imp, bidCur);
  if (early !== null) return early;
  const pmp = imp.pmp;
  const hasDeals = pmp !== null && pmp.deals.length > 0;
  const priv = pmp !== null && pmp.privateAuction;
  S.reset(unitsPerUsd(bidCur) ?? 1, impFloor(imp, bidCur), bidCur, priv, gate);
  if (hasDeals) scanImp(index, imp, req, true);
  if (S.best === null && !priv) scanImp(index, imp, req, false);
  const e = S.best;
  S.gate = null; // don't keep the caller's object reachable between calls
  if (e === null) return REASONS[S.stage];
  return {
    candidate: e.c,
    mtype: e.kind === Kind.Banner ? MType.Banner : e.kind === Kind.Video ? MType.Video : MType.Native,
    price: S.bestPrice,
    dealId: S.bestDeal,
    size: e.size,
    native: e.kind === Kind.Native && imp.native !== null ? nativeFills(e, imp.native.assets) : null,
  };
}

/** The assets to return, in request order: every fillable asset (so every required one). */
export function nativeFills(e: Entry, assets: readonly NativeAssetReq[]): NativeFill[] {
  const n = e.c.native;
  const out: NativeFill[] = [];
  if (n === null) return out;
  for (let i = 0; i < assets.length; i++) {
    const a = assets[i];
    if (!assetFits(e, a)) continue;
    switch (a.kind) {
      case NativeAssetKind.Title:
        out.push({ assetId: a.id, kind: a.kind, text: n.title, img: null });
        break;
      case NativeAssetKind.Img:
        out.push({ assetId: a.id, kind: a.kind, text: '', img: imgChoice(e, a) === IMG_MAIN ? n.image : n.icon });
        break;
      case NativeAssetKind.Data:
        out.push({ assetId: a.id, kind: a.kind, text: a.type === 1 ? n.sponsoredBy : a.type === 2 ? n.description : n.cta, img: null });
        break;
      default:
        break;
    }
  }
  return out;
}

// ---- explain (operator debugging; not on the hot path) -------------------------------------------

export interface Explanation {
  crid: string;
  /** null: eligible (it could bid; the winner is the best eligible one). */
  reason: NoBidReason | null;
}

function hasSize(sizes: readonly Size[], w: number, h: number): boolean {
  for (const s of sizes) if (s.w === w && s.h === h) return true;
  return false;
}

/**
 * Every candidate of the imp's media types, in file order, with the filter that rejects it
 * (the first one it fails, in FILTER_ORDER) or null when it is eligible.
 */
export function explain(index: CandidateIndex, imp: Imp, req: BidRequest, bidCur: string, gate: CandidateGate | null = null): Explanation[] {
  const out: Explanation[] = [];
  const early = impLevel(index, imp, bidCur);
  const rate = unitsPerUsd(bidCur) ?? 1;
  const floor = early === null ? impFloor(imp, bidCur) : 0;
  const pmp = imp.pmp;
  const hasDeals = pmp !== null && pmp.deals.length > 0;
  const priv = pmp !== null && pmp.privateAuction;
  for (const e of index.entries) {
    const kind = e.kind;
    if ((kind === Kind.Banner && imp.banner === null) || (kind === Kind.Video && imp.video === null) || (kind === Kind.Native && imp.native === null)) {
      continue;
    }
    if (early !== null) {
      out.push({ crid: e.c.id, reason: early });
      continue;
    }
    if (kind === Kind.Banner && imp.banner !== null && imp.banner.sizes.length > 0 && e.c.banner !== null && !hasSize(imp.banner.sizes, e.c.banner.w, e.c.banner.h)) {
      out.push({ crid: e.c.id, reason: 'size' });
      continue;
    }
    const st = candidateStage(e, imp, req, battrFor(kind, imp));
    if (st !== Stage.None) {
      out.push({ crid: e.c.id, reason: REASONS[st] });
      continue;
    }
    const price = e.price * rate;
    let why = Stage.None;
    if (hasDeals) {
      S.reset(rate, floor, bidCur, priv, null);
      if (matchDeal(e, imp, price, true) !== null) {
        out.push({ crid: e.c.id, reason: gate !== null ? gate.check(e.c, req) : null });
        continue;
      }
      why = S.stage;
    }
    if (priv) {
      out.push({ crid: e.c.id, reason: REASONS[why] });
    } else if (e.dealsOnly) {
      out.push({ crid: e.c.id, reason: REASONS[why > Stage.Deal ? why : Stage.Deal] });
    } else if (price < floor) {
      out.push({ crid: e.c.id, reason: 'floor' });
    } else {
      out.push({ crid: e.c.id, reason: gate !== null ? gate.check(e.c, req) : null });
    }
  }
  return out;
}
