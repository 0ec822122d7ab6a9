/**
 * The auction for one imp: filters the index's candidates against the request and picks the best.
 * Synchronous and free of I/O; one `Auction` object (the bid path's, which explain also runs) holds
 * the gate and the scan's state, reused call after call: no allocation per candidate,
 * no closures per request. Only the winner allocates (its Match, and for native its NativeFill[]).
 *
 * Filters, in the order they run for each candidate (cheap first; this order is also the "stage"
 * used for the no-bid reason, see below):
 *   size (banner, by index lookup) → native shape (native, by index lookup) → inventory → device →
 *   os → country → coppa → consent → dsa → secure → battr → bcat → badv → bapp → video (mimes,
 *   duration, protocols) | native_assets → deal → currency → floor → the optional gate (budget,
 *   frequency_cap: asked only about a would-be winner)
 *
 * Policy filters: `coppa`: a campaign with `coppa: false` on child-directed inventory (`regs.coppa`);
 * `consent`: a `personalized` campaign where the request does not allow user-level data (the
 * caller's `userData` argument); `dsa`: DSA information required (`dsarequired` ≥ 2) and the
 * campaign has none, or cannot render the notice where the publisher cannot either (dsa.ts).
 *
 * No-bid reason: every rejected candidate is rejected at one stage (the first filter it fails).
 * The imp's reason is the stage of the candidate that got FURTHEST down that list (ties: the
 * first one met, i.e. the highest priced), so "floor" means "something matched everything but
 * price", "bcat" means "nothing survived bcat, and some survived everything before it",
 * "budget" means "something would have won but its campaign is out of budget", etc.
 * The index rejects some candidates before any filter, and these rank first: a banner of a size
 * the imp does not name ("size"), a native without the image or icon a required asset asks for
 * ("native_assets", ranked with size; the same reason later in the list means an asset the
 * candidate cannot fill).
 * Imp-level reasons come before any candidate is looked at: an empty index → "no_candidates";
 * no banner/video/native object → "media_type"; a requested media type with no candidates →
 * "media_type"; an unknown bid currency, or an unknown `bidfloorcur` with a floor above 0 →
 * "currency"; a private auction without deals → "deal".
 *
 * Deals (OpenRTB 2.6 §3.2.11-12): with `pmp.private_auction` only deal bids count; the deal's
 * floor is `deal.bidfloor` in `deal.bidfloorcur` (USD when absent, never the imp's currency) and
 * replaces the imp floor. Without private_auction a deal bid is preferred: the best candidate
 * eligible for one of the imp's deals wins even over a higher open-market price (deals are
 * negotiated commitments); otherwise the best open-market candidate (price ≥ imp floor, campaign
 * not `dealsOnly`) wins. When an imp carries several media types (banner + video), all are
 * searched and the highest price wins.
 *
 * Work per candidate does not grow with the request's lists: bcat, badv and bapp are sets the
 * candidate looks its own few keys up in; battr, video protocols and mimes are turned into a
 * bitmask (and, for what a bitmask cannot hold, a set) once per imp; a banner size named twice is
 * scanned once. (The imp's deals and native assets are still walked per candidate: their counts
 * are bounded by the request parser.)
 *
 * `explain()` lists every candidate with its verdict. It runs the same bucket walk and the same
 * per-candidate stage functions as the auction, without the auction's shortcuts (which never
 * change the winner or the reason), so the two cannot disagree.
 */
import { MType, type BidRequest, type Imp } from '../openrtb/types';
import { Bucket, CandidateIndex, Entry, Kind, sizeKey } from './candidate-index';
import { dsaMinRender } from './dsa';
import { nativeFills, nativeFits, nativeNeed } from './native-fit';
import { priceIn } from '../currency/rates';
import type { CandidateGate, Match, NoBidReason, Rates } from './types';

const enum Stage {
  None = 0,
  MediaType,
  Size,
  NativeShape,
  Inventory,
  Device,
  Os,
  Country,
  Coppa,
  Consent,
  Dsa,
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
  'native_assets',
  'inventory',
  'device',
  'os',
  'country',
  'coppa',
  'consent',
  'dsa',
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

/**
 * The order in which filters run and rank for the no-bid reason (documentation and tests), each
 * reason once at its filter's place ("native_assets" also ranks with "size", see above).
 */
export const FILTER_ORDER: readonly NoBidReason[] = REASONS.filter((r, i) => i > 0 && REASONS.lastIndexOf(r) === i);

/** What explain() says about one candidate. */
export interface Explanation {
  crid: string;
  /** null: eligible (it could bid; the winner is the best eligible one). */
  reason: NoBidReason | null;
  /** For an eligible candidate, the deal it would bid in (null: the open market). */
  deal: string | null;
}

/** explain() for one imp: the reason the auction gives (null when it bids) and every candidate. */
export interface ImpExplanation {
  reason: NoBidReason | null;
  candidates: Explanation[];
}

/** One candidate's verdict in explain(). */
interface Verdict {
  stage: Stage;
  deal: string | null;
}

const enum Pass {
  /** The imp's deals: only deal bids (the first pass when the imp has deals). */
  Deals,
  /** The open market. */
  Open,
  /** Every candidate judged, for explain(). */
  Explain,
}

// Request battr values are attributes 1..30 in a bitmask; others (exchange-specific, or not whole) in a set.
const EMPTY_SET: ReadonlySet<number> = new Set<number>();
/** Up to this many request mimes are compared one by one; longer lists go through a set. */
const MIME_LIST_MAX = 8;

/** The request's battr for one media type, in a form a candidate checks in O(its own attributes). */
class AttrBlock {
  mask = 0;
  over: ReadonlySet<number> = EMPTY_SET;
  private own: Set<number> | null = null;

  fill(battr: readonly number[]): void {
    let m = 0;
    let overCount = 0;
    for (let i = 0; i < battr.length; i++) {
      const a = battr[i];
      if (a >= 1 && a <= 30 && Number.isInteger(a)) m |= 1 << a;
      else overCount++;
    }
    this.mask = m;
    if (overCount === 0) {
      this.over = EMPTY_SET;
      return;
    }
    // Rare (list 5.3 stops at 17): a set kept by this object, cleared for each use.
    const s = (this.own ??= new Set<number>());
    s.clear();
    for (let i = 0; i < battr.length; i++) {
      const a = battr[i];
      if (!(a >= 1 && a <= 30 && Number.isInteger(a))) s.add(a);
    }
    this.over = s;
  }

  blocks(e: Entry): boolean {
    if ((e.attrMask & this.mask) !== 0) return true;
    const over = e.attrsOver30;
    if (over.length !== 0 && this.over.size !== 0) {
      for (let i = 0; i < over.length; i++) if (this.over.has(over[i])) return true;
    }
    return false;
  }
}

// ---- per-candidate filters that need no request preparation (no allocation) ---------------------

/** bcat holds categories lower-cased: the candidate's own categories and their parents are looked up. */
function catBlocked(e: Entry, bcat: ReadonlySet<string>): boolean {
  const keys = e.catKeys;
  for (let i = 0; i < keys.length; i++) if (bcat.has(keys[i])) return true;
  return false;
}

/** badv holds domains lower-cased without "www.": a blocked "apple.com" blocks "apple.com" and "store.apple.com". */
function advBlocked(e: Entry, badv: ReadonlySet<string>): boolean {
  const keys = e.advKeys;
  for (let i = 0; i < keys.length; i++) if (badv.has(keys[i])) return true;
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

// ---- the auction ---------------------------------------------------------------------------------

/**
 * Runs auctions (`select`) and explains them (`explain`). Holds the gate it was built with and the
 * scratch state of the call in progress (reset at the start of each call): calls are synchronous, so
 * one object serves every call of its owner, one after the other. The currency rates come with each
 * call, so that a request is priced with one table whoever else holds this object.
 */
export class Auction {
  // ---- the call in progress
  private stage = Stage.None;
  private best: Entry | null = null;
  private bestPrice = 0;
  private bestDeal: string | null = null;
  /** Units of the bid currency per USD. */
  private rate = 1;
  /** The imp floor in the bid currency. */
  private floor = 0;
  private bidCur = 'USD';
  private priv = false;
  private hasDeals = false;
  private userData = true;
  /** See dsaMinRender. */
  private dsaMin = -1;
  /** Why matchDeal last returned null. */
  private dealWhy = Stage.None;
  private readonly bannerAttr = new AttrBlock();
  private readonly videoAttr = new AttrBlock();
  private readonly nativeAttr = new AttrBlock();
  private vProtoMask = 0;
  private vProtoAny = true;
  /** The request's video mimes, lower-cased, when there are more than MIME_LIST_MAX; else null. */
  private vMimeSet: Set<string> | null = null;
  private vMimeSetUsed = false;
  /** Banner size buckets scanned in the current pass: marks[id] === mark. */
  private marks = new Uint32Array(0);
  private mark = 0;
  /** explain() only: each judged candidate's verdict. */
  private verdicts: Map<Entry, Verdict> | null = null;

  constructor(private readonly gate: CandidateGate | null = null) {}

  /**
   * Picks the best eligible candidate for one imp, or says why there is none. `bidCur` is the
   * response currency (see chooseBidCurrency); prices and floors are compared in it, with `rates`.
   * `userData`: whether the request allows user-level data (else `personalized` campaigns do not bid).
   */
  select(index: CandidateIndex, imp: Imp, req: BidRequest, bidCur: string, rates: Rates, userData: boolean): Match | NoBidReason {
    const early = this.impLevel(index, imp, bidCur, rates);
    if (early !== null) return early;
    this.prepare(imp, req, bidCur, rates, userData);
    if (this.hasDeals) this.scanImp(index, imp, req, rates, Pass.Deals);
    if (this.best === null && !this.priv) this.scanImp(index, imp, req, rates, Pass.Open);
    const e = this.best;
    if (e === null) return REASONS[this.stage];
    this.best = null; // don't keep the entry (and its index) reachable between calls
    return {
      candidate: e.c,
      mtype: e.kind === Kind.Banner ? MType.Banner : e.kind === Kind.Video ? MType.Video : MType.Native,
      price: this.bestPrice,
      dealId: this.bestDeal,
      size: e.size,
      native: e.kind === Kind.Native && imp.native !== null ? nativeFills(e, imp.native.assets) : null,
      json: e.json,
    };
  }

  /**
   * Every candidate of the imp's media types, in file order, with the filter that rejects it
   * (the first one it fails, in FILTER_ORDER) or null when it is eligible, and the reason the
   * auction gives the imp. Operator debugging; allocates freely.
   */
  explain(index: CandidateIndex, imp: Imp, req: BidRequest, bidCur: string, rates: Rates, userData: boolean): ImpExplanation {
    const early = this.impLevel(index, imp, bidCur, rates);
    const candidates: Explanation[] = [];
    const wanted = (e: Entry): boolean =>
      (e.kind === Kind.Banner && imp.banner !== null) || (e.kind === Kind.Video && imp.video !== null) || (e.kind === Kind.Native && imp.native !== null);
    if (early !== null) {
      for (const e of index.entries) if (wanted(e)) candidates.push({ crid: e.c.id, reason: early, deal: null });
      return { reason: early, candidates };
    }
    this.prepare(imp, req, bidCur, rates, userData);
    const verdicts = new Map<Entry, Verdict>();
    this.verdicts = verdicts;
    try {
      this.scanImp(index, imp, req, rates, Pass.Explain);
    } finally {
      this.verdicts = null;
    }
    let eligible = false;
    for (const e of index.entries) {
      if (!wanted(e)) continue;
      // Not in a bucket the imp asks for: rejected by the index (a size not named, a native shape not fitting).
      const v = verdicts.get(e) ?? { stage: e.kind === Kind.Banner ? Stage.Size : Stage.NativeShape, deal: null };
      if (v.stage === Stage.None) eligible = true;
      candidates.push({ crid: e.c.id, reason: v.stage === Stage.None ? null : REASONS[v.stage], deal: v.deal });
    }
    return { reason: eligible ? null : REASONS[this.stage], candidates };
  }

  /** Imp-level checks: the reason, or null to go on. */
  private impLevel(index: CandidateIndex, imp: Imp, bidCur: string, rates: Rates): NoBidReason | null {
    if (index.count === 0) return 'no_candidates';
    if (imp.banner === null && imp.video === null && imp.native === null) return 'media_type';
    if (rates.unitsPerUsd(bidCur) === null) return 'currency';
    if (imp.bidfloor > 0 && rates.unitsPerUsd(imp.bidfloorcur) === null) return 'currency';
    if (imp.pmp !== null && imp.pmp.privateAuction && imp.pmp.deals.length === 0) return 'deal';
    return null;
  }

  /** Resets the call's state and turns the imp's lists into what the filters look up (after impLevel said go on). */
  private prepare(imp: Imp, req: BidRequest, bidCur: string, rates: Rates, userData: boolean): void {
    this.stage = Stage.None;
    this.best = null;
    this.bestPrice = 0;
    this.bestDeal = null;
    this.rate = rates.unitsPerUsd(bidCur) ?? 1;
    this.floor = imp.bidfloor > 0 ? (rates.convert(imp.bidfloor, imp.bidfloorcur, bidCur) ?? 0) : 0;
    this.bidCur = bidCur;
    const pmp = imp.pmp;
    this.priv = pmp !== null && pmp.privateAuction;
    this.hasDeals = pmp !== null && pmp.deals.length > 0;
    this.userData = userData;
    this.dsaMin = dsaMinRender(req.dsa);
    if (imp.banner !== null) this.bannerAttr.fill(imp.banner.battr);
    if (imp.native !== null) this.nativeAttr.fill(imp.native.battr);
    const v = imp.video;
    if (v !== null) {
      this.videoAttr.fill(v.battr);
      let pm = 0;
      for (let i = 0; i < v.protocols.length; i++) {
        const p = v.protocols[i];
        if (p >= 1 && p <= 30 && Number.isInteger(p)) pm |= 1 << p;
      }
      this.vProtoMask = pm;
      this.vProtoAny = v.protocols.length === 0;
      this.vMimeSetUsed = v.mimes.length > MIME_LIST_MAX;
      if (this.vMimeSetUsed) {
        const s = (this.vMimeSet ??= new Set<string>());
        s.clear();
        for (let i = 0; i < v.mimes.length; i++) s.add(v.mimes[i].toLowerCase());
      }
    }
  }

  private rec(stage: Stage): void {
    if (stage > this.stage) this.stage = stage;
  }

  // ---- stage functions: shared by the scan and explain

  /** None when the candidate passes targeting, policy, blocking and creative-shape filters, else the stage that rejected it. */
  private candidateStage(e: Entry, imp: Imp, req: BidRequest): Stage {
    const inv = e.inventory;
    if (inv === null ? req.inventory === 'dooh' : inv !== req.inventory) return Stage.Inventory;
    if (e.deviceMask !== 0) {
      const d = req.deviceType;
      if (d < 1 || d > 30 || (e.deviceMask & (1 << d)) === 0) return Stage.Device;
    }
    if (e.os.length !== 0 && (req.os === '' || !e.os.includes(req.os))) return Stage.Os;
    if (e.countries.length !== 0 && (req.country === '' || !e.countries.includes(req.country))) return Stage.Country;
    if (req.coppa && !e.coppaOk) return Stage.Coppa;
    if (e.personalized && !this.userData) return Stage.Consent;
    if (e.dsaRender < this.dsaMin) return Stage.Dsa;
    if (imp.secure && !e.secure) return Stage.Secure;
    const attrs = e.kind === Kind.Banner ? this.bannerAttr : e.kind === Kind.Video ? this.videoAttr : this.nativeAttr;
    if (attrs.blocks(e)) return Stage.Battr;
    if (req.bcat.size !== 0 && catBlocked(e, req.bcat)) return Stage.Bcat;
    if (req.badv.size !== 0 && advBlocked(e, req.badv)) return Stage.Badv;
    // bapp lists advertised apps the publisher does not want promoted (OpenRTB 2.6 §3.2.1).
    if (e.bundle !== '' && req.bapp.size !== 0 && req.bapp.has(e.bundle)) return Stage.Bapp;
    if (e.kind === Kind.Video) {
      if (imp.video === null || !this.videoFits(e, imp.video.minduration, imp.video.maxduration, imp.video.mimes)) return Stage.Video;
    } else if (e.kind === Kind.Native) {
      if (imp.native === null || !nativeFits(e, imp.native.assets)) return Stage.NativeAssets;
    }
    return Stage.None;
  }

  private videoFits(e: Entry, minduration: number, maxduration: number, mimes: readonly string[]): boolean {
    if (minduration > 0 && e.vDuration < minduration) return false;
    if (maxduration > 0 && e.vDuration > maxduration) return false;
    if (!this.vProtoAny && (e.vProtoMask & this.vProtoMask) === 0) return false;
    if (mimes.length === 0) return true;
    const mine = e.vMimes;
    if (this.vMimeSetUsed) {
      for (let j = 0; j < mine.length; j++) if (this.vMimeSet!.has(mine[j])) return true;
      return false;
    }
    for (let i = 0; i < mimes.length; i++) {
      for (let j = 0; j < mine.length; j++) if (eqLower(mimes[i], mine[j])) return true;
    }
    return false;
  }

  /**
   * The first of the imp's deals this candidate may bid on at this price, or null; then `dealWhy`
   * says why not ("deal": no deal in common, "currency": its floor's currency is unknown, "floor").
   */
  private matchDeal(e: Entry, imp: Imp, price: number, rates: Rates): string | null {
    let why = Stage.Deal;
    const deals = imp.pmp !== null ? imp.pmp.deals : null;
    if (deals !== null && e.deals.length !== 0) {
      for (let i = 0; i < deals.length; i++) {
        const d = deals[i];
        if (!e.deals.includes(d.id)) continue;
        if (d.bidfloor > 0) {
          const f = rates.convert(d.bidfloor, d.bidfloorcur, this.bidCur);
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
    }
    this.dealWhy = why;
    return null;
  }

  /** The open market's own checks, after candidateStage: None, Deal (a deals-only campaign) or Floor. */
  private openStage(e: Entry, price: number): Stage {
    if (e.dealsOnly) return Stage.Deal;
    if (price < this.floor) return Stage.Floor;
    return Stage.None;
  }

  /** The gate's verdict on a would-be winner: None, Budget or FrequencyCap. */
  private gateStage(e: Entry, req: BidRequest): Stage {
    if (this.gate === null) return Stage.None;
    const why = this.gate.check(e.c, req);
    return why === null ? Stage.None : why === 'budget' ? Stage.Budget : Stage.FrequencyCap;
  }

  // ---- the walk over the buckets the imp asks for

  /** Runs one pass over every bucket the imp asks for. */
  private scanImp(index: CandidateIndex, imp: Imp, req: BidRequest, rates: Rates, pass: Pass): void {
    const banner = imp.banner;
    if (banner !== null) {
      if (index.bannerAny.all.length === 0) {
        this.rec(Stage.MediaType);
      } else if (banner.sizes.length === 0) {
        this.scanBucket(index.bannerAny, imp, req, rates, pass);
      } else {
        const mark = this.nextMark(index);
        const sizes = banner.sizes;
        let scanned = 0;
        for (let i = 0; i < sizes.length; i++) {
          const k = sizeKey(sizes[i].w, sizes[i].h);
          const b = k < 0 ? undefined : index.bannerBySize.get(k);
          if (b === undefined) {
            this.rec(Stage.Size);
          } else if (this.marks[b.id] !== mark) {
            this.marks[b.id] = mark;
            scanned++;
            this.scanBucket(b, imp, req, rates, pass);
          }
        }
        // Banners of sizes the imp does not name are rejected by the index.
        if (scanned < index.sizeBucketCount || index.unsizedBanners > 0) this.rec(Stage.Size);
      }
    }
    const video = imp.video;
    if (video !== null) {
      if (index.video.all.length === 0) this.rec(Stage.MediaType);
      else this.scanBucket(index.video, imp, req, rates, pass);
    }
    const native = imp.native;
    if (native !== null) {
      const all = index.native[0].all.length;
      if (all === 0) {
        this.rec(Stage.MediaType);
      } else {
        const b = index.native[nativeNeed(native.assets)];
        // Natives without the image or icon a required asset asks for are rejected by the index.
        if (b.all.length < all) this.rec(Stage.NativeShape);
        if (b.all.length !== 0) this.scanBucket(b, imp, req, rates, pass);
      }
    }
  }

  /** A new mark for the banner size buckets of one pass. */
  private nextMark(index: CandidateIndex): number {
    if (this.marks.length < index.sizeBucketCount) {
      this.marks = new Uint32Array(index.sizeBucketCount);
      this.mark = 0;
    }
    if (this.mark === 0xffffffff) {
      this.marks.fill(0);
      this.mark = 0;
    }
    return ++this.mark;
  }

  private scanBucket(b: Bucket, imp: Imp, req: BidRequest, rates: Rates, pass: Pass): void {
    switch (pass) {
      case Pass.Deals:
        // In a private auction a candidate without deals is rejected at "deal": the walk sees them all.
        this.scanDeals(this.priv ? b.all : b.withDeals, imp, req, rates);
        break;
      case Pass.Open:
        this.scanOpen(b.all, imp, req);
        break;
      case Pass.Explain:
        this.judgeAll(b.all, imp, req, rates);
        break;
    }
  }

  private scanDeals(list: readonly Entry[], imp: Imp, req: BidRequest, rates: Rates): void {
    for (let i = 0; i < list.length; i++) {
      const e = list[i];
      const price = priceIn(e.price, this.rate);
      // Sorted by price: nothing further down can beat what we have.
      if (this.best !== null && price <= this.bestPrice) return;
      // Without deals it can reach "deal" at best: nothing to learn once the reason is that far.
      if (e.deals.length === 0 && this.stage >= Stage.Deal) continue;
      const st = this.candidateStage(e, imp, req);
      if (st !== Stage.None) {
        this.rec(st);
        continue;
      }
      const dealId = this.matchDeal(e, imp, price, rates);
      if (dealId === null) {
        // Outside a private auction a candidate without a matching deal is no rejection yet: the open pass sees it.
        if (this.priv || this.dealWhy !== Stage.Deal) this.rec(this.dealWhy);
        continue;
      }
      const g = this.gateStage(e, req);
      if (g !== Stage.None) {
        this.rec(g);
        continue;
      }
      this.best = e;
      this.bestPrice = price;
      this.bestDeal = dealId;
      return;
    }
  }

  private scanOpen(list: readonly Entry[], imp: Imp, req: BidRequest): void {
    for (let i = 0; i < list.length; i++) {
      const e = list[i];
      const price = priceIn(e.price, this.rate);
      if (this.best !== null && price <= this.bestPrice) return;
      let st = this.candidateStage(e, imp, req);
      if (st === Stage.None) st = this.openStage(e, price);
      if (st === Stage.Floor) {
        // Everything further down is cheaper: it would stop at the floor at the latest (the gate comes after it).
        this.rec(st);
        return;
      }
      if (st === Stage.None) st = this.gateStage(e, req);
      if (st !== Stage.None) {
        this.rec(st);
        continue;
      }
      this.best = e;
      this.bestPrice = price;
      this.bestDeal = null;
      return;
    }
  }

  /**
   * explain(): each candidate's verdict over both passes, from the same stage functions: the deal
   * pass when the imp has deals, then (outside a private auction) the open market.
   */
  private judgeAll(list: readonly Entry[], imp: Imp, req: BidRequest, rates: Rates): void {
    const verdicts = this.verdicts!;
    for (let i = 0; i < list.length; i++) {
      const e = list[i];
      const price = priceIn(e.price, this.rate);
      let st = this.candidateStage(e, imp, req);
      let deal: string | null = null;
      if (st === Stage.None) {
        if (this.hasDeals) {
          deal = this.matchDeal(e, imp, price, rates);
          if (deal === null) st = this.dealWhy;
        }
        if (deal === null && !this.priv) {
          // The open market decides (a deal missed on its floor or currency is no rejection if it takes the candidate).
          const open = this.openStage(e, price);
          st = open === Stage.None ? Stage.None : open > st ? open : st;
        }
        if (st === Stage.None) {
          st = this.gateStage(e, req);
          if (st !== Stage.None) deal = null;
        }
      }
      this.rec(st);
      verdicts.set(e, { stage: st, deal });
    }
  }
}
