/**
 * Pieces of the bid response's JSON text, so that a bid is serialized by concatenation instead of
 * JSON.stringify of an object. JSON.stringify has to scan every character of every string for
 * what needs escaping, about 1.5 ns a character here: 3–4 µs for the ~2 KB of a bid, most of it
 * the markup and the tracking URLs, which are known to need no escaping. What comes from the
 * campaigns is written and checked once per candidate when the index is built
 * (src/targeting/candidate-json.ts); what comes from the request is short and goes through
 * JSON.stringify; the tracking payload is base64url.
 */
import { v4 as uuidv4 } from 'uuid';
import { MType, NativeAssetKind, type BidRequest, type DsaRequest, type Imp, type NativeImp } from '../openrtb/types';
import { isJsonSafe } from '../targeting/candidate-json';
import { bidAdrender } from '../targeting/dsa';
import type { Match, NativeFill } from '../targeting/types';
import type { PayloadCodec } from '../tracking/payload';
import { bannerAdm, escapeHtml, EVENT_IMPRESSION, METHOD_IMG, nativeVersion, renderBanner, renderVast, trackingUrls, vastAdm, type TrackingUrls } from './markup';

export { isJsonSafe };

/** `{"id":…,"cur":"…","seatbid":[{"bid":[…]}]}` around the bids, besides the id and the currency. */
export const ENVELOPE_BYTES = 40;

// Exchange macros (OpenRTB 2.6 §4.4), substituted by the exchange before it calls the URL. The
// price to win (where the exchange tells it) is what bid shading learns best from.
const WIN_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&mtw=${AUCTION_MIN_TO_WIN}';
const LOSS_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&loss=${AUCTION_LOSS}&mtw=${AUCTION_MIN_TO_WIN}';

/**
 * The bid response's JSON text, every part of it: each bid (OpenRTB 2.6 §4.3.3: id, impid, price,
 * adm, adomain, crid, cid, cat, attr, mtype, nurl, burl, lurl, w, h, dealid, ext.dsa) with its
 * tracking payload, and the envelope around the bids.
 */
export class BidWriter {
  /** The tracking URLs' fixed parts for plain and secure imps, built once (`bid` appends the payload). */
  private readonly routes: TrackingRoutes;
  private readonly secureRoutes: TrackingRoutes;
  /** The tracking base URLs need neither HTML nor JSON escaping (checked once; true for any usual URL). */
  private readonly baseSafe: boolean;
  private readonly dsa: DsaWriter;

  constructor(
    trackingBaseUrl: string,
    dsaDomain: string,
    private readonly codec: PayloadCodec,
  ) {
    // imp.secure = 1 needs https everywhere; TLS is expected to be terminated in front of the bidder.
    const secureBase = trackingBaseUrl.replace(/^http:/, 'https:');
    this.baseSafe = [trackingBaseUrl, secureBase].every((b) => isJsonSafe(b) && escapeHtml(b) === b);
    this.routes = trackingRoutes(trackingBaseUrl);
    this.secureRoutes = trackingRoutes(secureBase);
    this.dsa = new DsaWriter(dsaDomain);
  }

  /** The response around the bids (`bids`: their JSON texts joined by commas); `idJson` is the request id as a JSON string. */
  envelope(idJson: string, cur: string, bids: string): string {
    return `{"id":${idJson},"cur":${JSON.stringify(cur)},"seatbid":[{"bid":[${bids}]}]}`;
  }

  /** One bid's JSON text at `price`; `noticeParam` goes into the notice URLs (shading's, '' for none). */
  bid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number, noticeParam: string): string {
    const c = m.candidate;
    // uuid's v4 hands the work to node:crypto's randomUUID (0.1-0.2 µs either way, measured).
    const bidId = uuidv4();
    const r = imp.secure ? this.secureRoutes : this.routes;
    const q = this.codec.encode({
      requestId: req.id,
      bidId,
      impId: imp.id,
      crid: c.id,
      cid: c.campaignId,
      price,
      cur,
      ts: now,
      dealId: m.dealId ?? '',
      publisher: req.publisher,
      userKey: req.userKey,
      test: req.test,
      source: req.source,
    });
    // Browser URLs carry the browser signature, notices from the exchange's servers the other one.
    // The payload query is base64url plus `&s=`: only `&` needs HTML escaping, and nothing JSON.
    const qb = q.browser;
    const qHtml = qb.replace('&', '&amp;');
    const urls: TrackingUrls = this.baseSafe
      ? { click: r.click + qb, imp: r.imp + qb, clickHtml: r.click + qHtml, impHtml: r.imp + qHtml }
      : trackingUrls(r.click + qb, r.imp + qb);
    const cj = m.json;
    let adm: string;
    switch (m.mtype) {
      case MType.Native:
        adm = nativeAdmLiteral(imp.native!, m.native ?? [], urls, this.baseSafe);
        break;
      case MType.Video:
        {
          const mime = videoMime(c.video?.mimes ?? [], imp.video?.mimes ?? []);
          adm = quoted(cj.vast !== null ? renderVast(cj.vast, urls, bidId, mime) : vastAdm(c, urls, bidId, mime), cj.vastSafe && this.baseSafe);
        }
        break;
      default:
        adm = quoted(cj.banner !== null ? renderBanner(cj.banner, urls) : bannerAdm(c, urls), cj.bannerSafe && this.baseSafe);
    }
    let bid =
      `{"id":"${bidId}","impid":${JSON.stringify(imp.id)},"price":${JSON.stringify(price)},` +
      `"adm":${adm}${cj.fields},"mtype":${m.mtype},` +
      `"nurl":${quoted(r.win + q.s2s + noticeParam + WIN_QS, this.baseSafe)},` +
      `"burl":${quoted(r.bill + q.s2s + noticeParam + WIN_QS, this.baseSafe)},` +
      `"lurl":${quoted(r.loss + q.s2s + noticeParam + LOSS_QS, this.baseSafe)}`;
    if (m.size !== null) bid += `,"w":${m.size.w},"h":${m.size.h}`;
    else if (m.mtype === MType.Video && c.video !== null) bid += `,"w":${c.video.w},"h":${c.video.h}`;
    if (m.dealId !== null) bid += `,"dealid":${JSON.stringify(m.dealId)}`;
    return `${bid}${this.dsa.fragment(m, req.dsa)}}`;
  }
}

/** The tracking routes of one base URL, up to their query: `<base>/t/<event>?`. */
interface TrackingRoutes {
  readonly click: string;
  readonly imp: string;
  readonly win: string;
  readonly bill: string;
  readonly loss: string;
}

function trackingRoutes(base: string): TrackingRoutes {
  return { click: `${base}/t/click?`, imp: `${base}/t/imp?`, win: `${base}/t/win?`, bill: `${base}/t/bill?`, loss: `${base}/t/loss?` };
}

/** A JSON string literal; `safe` says `s` is known to need no escaping. */
function quoted(s: string, safe: boolean): string {
  return safe ? `"${s}"` : JSON.stringify(s);
}

/** The first of the candidate's mimes the imp accepts (any, when the imp lists none). */
function videoMime(candidate: readonly string[], allowed: readonly string[]): string {
  for (let i = 0; i < candidate.length; i++) {
    if (allowed.length === 0 || allowed.includes(candidate[i])) return candidate[i];
  }
  return candidate[0] ?? 'video/mp4';
}

/** DSA transparency parameters (`dsaparams`): 1 profiling, 2 basic (contextual) targeting. */
const DSA_PROFILING = 1;
const DSA_BASIC = 2;

/**
 * Writes a bid's `ext.dsa` (OpenRTB DSA transparency extension) when the request asks for DSA
 * information: the candidate's `behalf` and `paid` (prebuilt with the index), the `adrender` the
 * rules of src/targeting/dsa.ts give, and our transparency entry.
 *
 * `dsaparams`: 2 (basic targeting) on every bid, since every bid is chosen on what the request
 * says about its context (site or app, device type, OS, country, sizes, categories); 1 (profiling)
 * too for a `personalized` campaign (it bids only where user-level data may be used); never 3
 * (precise geolocation): we target by country only.
 * `transparency` is left out when the request says `datatopub` 0 (send no transparency data to
 * the publisher), and when no transparency domain is configured; with 1 (optional) and 2 it is sent.
 */
export class DsaWriter {
  /** Tails after `dsaHead`, by adrender * 4 + (transparency ? 2 : 0) + (profiling ? 1 : 0). */
  private readonly tails: readonly string[];

  /** @param domain Our transparency domain (where users find the parameters used); '' for none. */
  constructor(domain: string) {
    const tails: string[] = [];
    for (let adrender = 0; adrender <= 1; adrender++) {
      for (const transparency of [false, true]) {
        for (const profiling of [false, true]) {
          const params = profiling ? [DSA_PROFILING, DSA_BASIC] : [DSA_BASIC];
          const t = transparency && domain !== '' ? `"transparency":[{"domain":${JSON.stringify(domain)},"dsaparams":${JSON.stringify(params)}}],` : '';
          tails.push(`${t}"adrender":${adrender}}}`);
        }
      }
    }
    this.tails = tails;
  }

  /** `,"ext":{"dsa":{…}}` for this bid, or '' when it carries no DSA information. */
  fragment(m: Match, dsa: DsaRequest | null): string {
    if (dsa === null || dsa.required < 1 || m.json.dsaHead === '') return '';
    const c = m.candidate;
    const adrender = bidAdrender(c.dsa?.adrender ?? -1, dsa.pubrender);
    if (adrender < 0) return '';
    return m.json.dsaHead + this.tails[adrender * 4 + (dsa.datatopub === 0 ? 0 : 2) + (c.personalized === true ? 1 : 0)];
  }
}

/**
 * The fixed pieces of the native markup in one of its two forms: `q` is the quote of its keys, `"`
 * for the plain JSON text or `\"` for the inside of a JSON string literal. Built once per form, so
 * writing a markup concatenates ready-made strings (as fast as literals in the code).
 */
function nativeKeys(q: string) {
  return {
    /** Plain form: string values go through JSON.stringify; escaped form: they are known safe and only quoted. */
    plain: q === '"',
    q,
    title: `{${q}id${q}:`,
    titleText: `,${q}title${q}:{${q}text${q}:`,
    imgUrl: `,${q}img${q}:{${q}url${q}:`,
    w: `,${q}w${q}:`,
    h: `,${q}h${q}:`,
    dataValue: `,${q}data${q}:{${q}value${q}:`,
    ver: `{${q}ver${q}:`,
    assets: `,${q}assets${q}:[`,
    link: `],${q}link${q}:{${q}url${q}:`,
    eventtracker: `,${q}eventtrackers${q}:[{${q}event${q}:${EVENT_IMPRESSION},${q}method${q}:${METHOD_IMG},${q}url${q}:`,
    imptrackers: `,${q}imptrackers${q}:[`,
    native: `{${q}native${q}:`,
  };
}

type NativeKeys = ReturnType<typeof nativeKeys>;
const PLAIN_KEYS = nativeKeys('"');
const ESCAPED_KEYS = nativeKeys('\\"');

/**
 * The native markup (Native 1.2 §5, a JSON document in `bid.adm`), written once for both forms it
 * takes: `k` holds the keys of the form and says how a string value is written, plain
 * (JSON.stringify) or, known to need no escaping, between the form's quotes (`\"`). Assets echo the request's asset ids;
 * the fills come from the auction and cover every required asset. Impression tracking:
 * `eventtrackers` with method 1 when the request offers it; when the request lists no
 * eventtrackers (Native ≤ 1.1 habit), the legacy `imptrackers`; a request offering impressions only
 * by JS gets none in the markup (nurl/burl still report the win and the billing). Native 1.0
 * requests get the `{"native": …}` root wrapper; 1.1 and later do not (§4.1).
 */
function writeNative(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls, k: NativeKeys): string {
  let assets = '';
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    let a: string;
    switch (f.kind) {
      case NativeAssetKind.Title:
        a = k.title + f.assetId + k.titleText + str(k, f.text) + '}}';
        break;
      case NativeAssetKind.Img:
        if (f.img === null) continue;
        a = k.title + f.assetId + k.imgUrl + str(k, f.img.url) + k.w + f.img.w + k.h + f.img.h + '}}';
        break;
      case NativeAssetKind.Data:
        a = k.title + f.assetId + k.dataValue + str(k, f.text) + '}}';
        break;
      default:
        continue;
    }
    assets = assets === '' ? a : assets + ',' + a;
  }
  const v = nativeVersion(n);
  let body = k.ver + str(k, v.ver) + k.assets + assets + k.link + str(k, urls.click) + '}';
  if (v.tracker === 'eventtracker') body += k.eventtracker + str(k, urls.imp) + '}]';
  else if (v.tracker === 'imptrackers') body += k.imptrackers + str(k, urls.imp) + ']';
  return v.legacy ? k.native + body + '}}' : body + '}';
}

/** A string value of the markup in form `k`. */
function str(k: NativeKeys, s: string): string {
  return k.plain ? JSON.stringify(s) : k.q + s + k.q;
}

/** The native markup as a JSON text (what `bid.adm` holds once the response is parsed). */
export function nativeAdm(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls): string {
  return writeNative(n, fills, urls, PLAIN_KEYS);
}

/**
 * `JSON.stringify(nativeAdm(n, fills, urls))`: the native markup as the JSON string literal of
 * `bid.adm`. When the tracking URLs are known safe (`urlsSafe`) and every text and image URL of the
 * fills needs no JSON escaping, the markup's only characters to escape are its own quotes, so it is
 * written directly in that form (`\"`), instead of writing it, then scanning it again to quote it.
 * Anything else takes the plain form and JSON.stringify.
 */
export function nativeAdmLiteral(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls, urlsSafe: boolean): string {
  if (urlsSafe && fillsSafe(fills)) return `"${writeNative(n, fills, urls, ESCAPED_KEYS)}"`;
  return JSON.stringify(nativeAdm(n, fills, urls));
}

function fillsSafe(fills: readonly NativeFill[]): boolean {
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    if (f.kind === NativeAssetKind.Img ? f.img !== null && !isJsonSafe(f.img.url) : !isJsonSafe(f.text)) return false;
  }
  return true;
}
