import type { BidRequest, MType, NativeAssetKind, Size } from '../openrtb/types';
import type { BannerTemplate, VastTemplate } from './markup-template';

export type { Rates } from '../currency/rates';


/** DSA transparency information of a campaign (OpenRTB DSA extension, `bid.ext.dsa`). */
export interface CampaignDsa {
  /** On whose behalf the ad is shown; 1..100 UTF-8 bytes. */
  readonly behalf: string;
  /** Who paid for the ad; 1..100 UTF-8 bytes. */
  readonly paid: string;
  /** 1: the advertiser can render the DSA notice itself; 0: it cannot. */
  readonly adrender: 0 | 1;
}

/**
 * A candidate ad: one creative of one campaign, as loaded from CAMPAIGNS_FILE and validated.
 * Everything a filter needs is precomputed at load time (category parents, https-ness, domains).
 */
export interface Candidate {
  /** Creative id (`bid.crid`). */
  readonly id: string;
  /** Campaign id (`bid.cid`). */
  readonly campaignId: string;
  readonly kind: 'banner' | 'native' | 'video';
  /** Advertiser domains (`bid.adomain`), lower-case. */
  readonly adomain: readonly string[];
  /** IAB content categories (`bid.cat`). */
  readonly cat: readonly string[];
  /** Creative attributes (`bid.attr`, OpenRTB list 5.3). */
  readonly attr: readonly number[];
  /** Maximum bid, CPM in USD. */
  readonly price: number;
  /** Where a click lands. */
  readonly landingUrl: string;
  /** True when every URL of the creative (assets, landing) is https. */
  readonly secure: boolean;
  readonly banner: { readonly w: number; readonly h: number; readonly imageUrl: string } | null;
  readonly native: {
    readonly title: string;
    readonly description: string;
    readonly sponsoredBy: string;
    readonly cta: string;
    readonly image: { readonly url: string; readonly w: number; readonly h: number } | null;
    readonly icon: { readonly url: string; readonly w: number; readonly h: number } | null;
  } | null;
  readonly video: {
    readonly mimes: readonly string[];
    readonly duration: number;
    readonly protocols: readonly number[];
    readonly w: number;
    readonly h: number;
    readonly mediaUrl: string;
    readonly bitrate: number;
  } | null;
  readonly targeting: {
    /** null = site and app. */
    readonly inventory: 'site' | 'app' | null;
    /** Empty = any. OpenRTB device types (list 5.21). */
    readonly deviceTypes: readonly number[];
    /** Empty = any. Lower-case OS names. */
    readonly os: readonly string[];
    /** Empty = any. ISO-3166-1 alpha-3. */
    readonly countries: readonly string[];
  };
  /** Deal ids this candidate may bid on. */
  readonly deals: readonly string[];
  // The fields below were added with the campaign loader. They are optional in the type only so
  // that hand-written Candidate literals elsewhere keep compiling; the loader always sets them.
  /** Only bid through one of `deals` (never in the open market). Default false. */
  readonly dealsOnly?: boolean;
  /** Bundle of the advertised app (checked against `bapp`), null when the ad is not for an app. */
  readonly bundle?: string | null;
  /** Campaign budget in USD (spend tracking is the tracking module's). */
  readonly budget?: { readonly total: number; readonly daily: number };
  /** "even": the daily budget spread along the campaign's day (src/delivery/pacer.ts); "asap": as fast as traffic allows. Default "asap". */
  readonly pacing?: 'even' | 'asap';
  /** An even campaign's curve: "uniform" (default) or "traffic" (shaped by its eligible requests of previous days). */
  readonly pacingCurve?: 'uniform' | 'traffic';
  /** IANA time zone of the campaign's day (daily budget and pacing curve). Default "UTC". */
  readonly timeZone?: string;
  /** Impressions per user per day, null when uncapped. */
  readonly frequencyCap?: { readonly perDay: number } | null;
  /** false: never bid on child-directed inventory (`regs.coppa` = 1). Default true. */
  readonly coppa?: boolean;
  /** true: the campaign relies on user-level data, so it bids only where the request allows its use. Default false (contextual). */
  readonly personalized?: boolean;
  /** DSA transparency information, null when the campaign has none. */
  readonly dsa?: CampaignDsa | null;
}

/** What the markup needs to fill one native asset of the request. */
export interface NativeFill {
  /** The request asset's id, echoed in the response. */
  readonly assetId: number;
  readonly kind: NativeAssetKind;
  /** Title text or data value (already cut to `len`); '' for images. */
  readonly text: string;
  /** Image for img assets, else null. */
  readonly img: { readonly url: string; readonly w: number; readonly h: number } | null;
}

/** The winner for one imp. */
export interface Match {
  readonly candidate: Candidate;
  readonly mtype: MType;
  /** Bid price, CPM in the response currency. */
  readonly price: number;
  readonly dealId: string | null;
  /** Banner size bid on (from the candidate), null for other kinds. */
  readonly size: Size | null;
  /** Native assets to return, null for other kinds. */
  readonly native: readonly NativeFill[] | null;
  /** The candidate's parts of the bid's JSON text, built with the index (candidate-json.ts). */
  readonly json: CandidateJsonParts;
}

/** The parts of a bid's JSON text that depend only on its candidate (CandidateJson, candidate-json.ts). */
export interface CandidateJsonParts {
  /** `,"adomain":[…],"crid":…,"cid":…,"cat":[…],"attr":[…]`. */
  readonly fields: string;
  /** The banner markup's campaign parts need no JSON escaping. */
  readonly bannerSafe: boolean;
  /** The VAST markup's campaign parts need no JSON escaping. */
  readonly vastSafe: boolean;
  /** `,"ext":{"dsa":{"behalf":…,"paid":…,` (the writer adds the rest), or '' when the campaign has no DSA information. */
  readonly dsaHead: string;
  /** `"cid":…,"crid":…` of the response record's compact bid (src/bidlog/records.ts, CompactBid). */
  readonly recordIds: string;
  /** The banner markup's template (markup-template.ts), or null when the candidate has no banner. */
  readonly banner: BannerTemplate | null;
  /** The VAST markup's template, or null when the candidate has no video. */
  readonly vast: VastTemplate | null;
}

/** Why an imp (or a candidate) got no bid; stable strings used in logs, metrics and debug output. */
export type NoBidReason =
  | 'no_candidates'
  | 'media_type'
  | 'size'
  | 'native_assets'
  | 'video'
  | 'bcat'
  | 'badv'
  | 'bapp'
  | 'battr'
  | 'secure'
  | 'inventory'
  | 'device'
  | 'os'
  | 'country'
  // Policy: child-directed inventory, user-level data not allowed, DSA information required.
  | 'coppa'
  | 'consent'
  | 'dsa'
  | 'floor'
  | 'currency'
  | 'deal'
  // The candidate gate (see CandidateGate): campaign out of budget, user capped.
  | 'budget'
  | 'frequency_cap';

/**
 * Optional last check of the auction, for state that lives outside the campaign file (spend,
 * frequency caps). Asked only about a candidate that passed every filter and would win (so a few
 * times per imp at most); answering non-null makes the auction try the next best candidate.
 * Implement it as a singleton object, not a per-request closure; it must not do I/O.
 */
export interface CandidateGate {
  check(candidate: Candidate, req: BidRequest): 'budget' | 'frequency_cap' | null;
}
