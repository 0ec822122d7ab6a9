/**
 * The bidder's normalized view of an OpenRTB 2.5/2.6 bid request: only the fields the bidder
 * reads, with defaults applied and loose exchange encodings (numbers as strings, native request as
 * a string or object, the Native 1.0 `{"native": …}` wrapper) already resolved by `parse.ts`.
 * Objects keep one shape: absent values are `null` or empty arrays, never missing keys.
 */

export const enum MType {
  Banner = 1,
  Video = 2,
  Audio = 3,
  Native = 4,
}

/** OpenRTB 2.6 §5.24 / OpenRTB 3.0 no-bid reason codes used in logs and `nbr`. */
export const enum Nbr {
  Unknown = 0,
  TechnicalError = 1,
  InvalidRequest = 2,
  UnsupportedDevice = 6,
  BlockedPublisher = 7,
  UnmatchedUser = 8,
}

export interface Size {
  readonly w: number;
  readonly h: number;
}

export interface BannerImp {
  /** From `format[]`, else `w/h`; empty when neither is given (then any size may bid). */
  readonly sizes: readonly Size[];
  readonly battr: readonly number[];
}

export interface VideoImp {
  readonly mimes: readonly string[];
  /** 0 when absent. */
  readonly minduration: number;
  /** 0 when absent (no upper bound). */
  readonly maxduration: number;
  /** From `protocols[]` plus the deprecated `protocol`; empty means unspecified. */
  readonly protocols: readonly number[];
  readonly w: number;
  readonly h: number;
  readonly battr: readonly number[];
}

export const enum NativeAssetKind {
  Title = 1,
  Img = 2,
  Data = 3,
  Video = 4,
}

export interface NativeAssetReq {
  readonly id: number;
  readonly required: boolean;
  readonly kind: NativeAssetKind;
  /** title.len / data.len; 0 means no limit. */
  readonly len: number;
  /** img.type (1 icon, 3 main) or data.type (1 sponsored, 2 desc, 12 ctatext ...); 0 when absent. */
  readonly type: number;
  /** img exact size (0 when absent) and minimums (0 when absent). */
  readonly w: number;
  readonly h: number;
  readonly wmin: number;
  readonly hmin: number;
}

export interface NativeEventTrackerReq {
  readonly event: number;
  readonly methods: readonly number[];
}

export interface NativeImp {
  /** Native markup version to answer with ("1.2" unless the request says otherwise). */
  readonly ver: string;
  readonly assets: readonly NativeAssetReq[];
  /** `null` when the request lists no eventtrackers (then 1.2 allows impression img pixels). */
  readonly eventtrackers: readonly NativeEventTrackerReq[] | null;
  readonly battr: readonly number[];
}

export interface Deal {
  readonly id: string;
  /** CPM in `bidfloorcur`; 0 when absent. */
  readonly bidfloor: number;
  /** Does NOT inherit the imp's currency (OpenRTB 2.6 §3.2.12): defaults to USD. */
  readonly bidfloorcur: string;
}

export interface Pmp {
  readonly privateAuction: boolean;
  readonly deals: readonly Deal[];
}

export interface Imp {
  readonly id: string;
  readonly secure: boolean;
  readonly bidfloor: number;
  readonly bidfloorcur: string;
  readonly banner: BannerImp | null;
  readonly video: VideoImp | null;
  readonly native: NativeImp | null;
  readonly pmp: Pmp | null;
}

/** One `transparency` entry of `regs.ext.dsa` (OpenRTB DSA transparency extension). */
export interface DsaTransparency {
  readonly domain: string;
  readonly dsaparams: readonly number[];
}

/**
 * `regs.ext.dsa` (EU Digital Services Act transparency extension): whether DSA information is
 * required (0 no, 1 supported, 2 required, 3 required and the publisher is an online platform),
 * whether the publisher renders the notice (0 cannot, 1 might, 2 will), whether to send
 * transparency data to the publisher (0 no, 1 optional, 2 yes) and the publisher's own entries.
 */
export interface DsaRequest {
  readonly required: number;
  readonly pubrender: number;
  readonly datatopub: number;
  readonly transparency: readonly DsaTransparency[];
}

export interface BidRequest {
  readonly id: string;
  readonly imps: readonly Imp[];
  /** Allowed bid currencies, upper-case; empty means unspecified (USD). */
  readonly cur: readonly string[];
  /** Blocked categories, lower-case (a blocked "iab1" also blocks "iab1-2": filters look up the parent). */
  readonly bcat: ReadonlySet<string>;
  /** Blocked advertiser domains, lower-case, without a leading "www." (filters look up parent domains). */
  readonly badv: ReadonlySet<string>;
  /** Blocked app bundles, as given. */
  readonly bapp: ReadonlySet<string>;
  /** 'site', 'app' or 'dooh'; 'site' when none is given. */
  readonly inventory: 'site' | 'app' | 'dooh';
  /** App bundle (app requests), else ''. */
  readonly bundle: string;
  /** Site/app domain or '' . */
  readonly domain: string;
  /** Publisher name (or id, or domain) for logs. */
  readonly publisher: string;
  /** device.devicetype (OpenRTB list 5.21), 0 when absent. */
  readonly deviceType: number;
  /** device.os lower-cased, '' when absent. */
  readonly os: string;
  /** device.geo.country (ISO-3166-1 alpha-3 upper-case), '' when absent. */
  readonly country: string;
  /** user.id or device.ifa, '' when absent. Never copied anywhere: the user key stands for it. */
  readonly userId: string;
  /**
   * The user as frequency caps and tracking payloads know them: a keyed hash of `userId`, or '' when
   * there is none or the request does not allow user-level data. Set by the bidding service once the
   * privacy decision is made ('' from the reader).
   */
  userKey: string;
  /** The calling exchange's index (src/exchanges/exchanges.ts; 0: the endpoint is open). Set by the bidding service (0 from the reader). */
  source: number;
  /** tmax in ms, 0 when absent. */
  readonly tmax: number;
  /** Auction type: 1 first price, 2 second price (also for exchange-specific values above 500). */
  readonly at: 1 | 2;
  /** `test` = 1: the exchange checks its integration; such a bid never reserves or spends budget, nor counts caps. */
  readonly test: boolean;
  /** `regs.coppa` = 1: child-directed inventory (COPPA). */
  readonly coppa: boolean;
  /** `regs.ext.dsa` (or `regs.dsa`), null when absent. */
  readonly dsa: DsaRequest | null;
}
