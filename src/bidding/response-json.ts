/**
 * Pieces of the bid response's JSON text, so that a bid is serialized by concatenation instead of
 * JSON.stringify of an object. JSON.stringify has to scan every character of every string for
 * what needs escaping, about 1.5 ns a character here: 3–4 µs for the ~2 KB of a bid, most of it
 * the markup and the tracking URLs, which are known to need no escaping. What comes from the
 * campaigns is written and checked once per candidate when the index is built
 * (src/targeting/candidate-json.ts); what comes from the request is short and goes through
 * JSON.stringify; the tracking payload is base64url.
 */
import { NativeAssetKind, type DsaRequest, type NativeImp } from '../openrtb/types';
import { isJsonSafe } from '../targeting/candidate-json';
import { bidAdrender } from '../targeting/dsa';
import type { Match, NativeFill } from '../targeting/types';
import { EVENT_IMPRESSION, METHOD_IMG, nativeVersion, type TrackingUrls } from './markup';

export { isJsonSafe };

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
