/**
 * Pieces of the bid response's JSON text, so that a bid is serialized by concatenation instead of
 * JSON.stringify of an object. JSON.stringify has to scan every character of every string for
 * what needs escaping, about 1.5 ns a character here: 3–4 µs for the ~2 KB of a bid, most of it
 * the markup and the tracking URLs, which are known to need no escaping. What comes from the
 * campaigns is checked once per candidate; what comes from the request is short and goes through
 * JSON.stringify; the tracking payload is base64url.
 */
import { NativeAssetKind, type NativeImp } from '../openrtb/types';
import type { Candidate, NativeFill } from '../targeting/types';
import { escapeHtml, EVENT_IMPRESSION, METHOD_IMG, nativeAdm, nativeVersion, type TrackingUrls } from './markup';

// Quote, backslash, control characters, surrogates (JSON.stringify escapes lone ones).
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** True when `JSON.stringify(s)` is `"` + s + `"`. */
export function isJsonSafe(s: string): boolean {
  return !NEEDS_ESCAPE.test(s);
}

export interface CandidateJson {
  /** `,"adomain":[…],"crid":…,"cid":…,"cat":[…],"attr":[…]`. */
  readonly fields: string;
  /** The banner markup's campaign parts need no JSON escaping. */
  readonly bannerSafe: boolean;
  /** The VAST markup's campaign parts need no JSON escaping. */
  readonly vastSafe: boolean;
}

const cache = new WeakMap<Candidate, CandidateJson>();

/** Built on a candidate's first bid, then kept as long as the candidate (a campaign reload makes new ones). */
export function candidateJson(c: Candidate): CandidateJson {
  let j = cache.get(c);
  if (j === undefined) {
    j = {
      fields:
        ',"adomain":' +
        JSON.stringify(c.adomain) +
        ',"crid":' +
        JSON.stringify(c.id) +
        ',"cid":' +
        JSON.stringify(c.campaignId) +
        ',"cat":' +
        JSON.stringify(c.cat) +
        ',"attr":' +
        JSON.stringify(c.attr),
      bannerSafe: c.banner !== null && isJsonSafe(escapeHtml(c.banner.imageUrl)),
      vastSafe:
        c.video !== null &&
        [c.id, c.campaignId, c.native?.title ?? '', c.adomain[0] ?? '', c.video.mediaUrl, ...c.video.mimes].every(isJsonSafe),
    };
    cache.set(c, j);
  }
  return j;
}

/**
 * `JSON.stringify(nativeAdm(n, fills, urls))`: the native markup as the JSON string literal of
 * `bid.adm`. When the tracking URLs are known safe (`urlsSafe`) and every text and image URL of
 * the fills needs no JSON escaping, the markup's only characters to escape are its own quotes, so
 * it is written directly in that form (`\"`), instead of building an object, serializing it and
 * then scanning the result again to quote it. Anything else takes the two JSON.stringify calls.
 */
export function nativeAdmLiteral(n: NativeImp, fills: readonly NativeFill[], urls: TrackingUrls, urlsSafe: boolean): string {
  if (!urlsSafe) return JSON.stringify(nativeAdm(n, fills, urls));
  let assets = '';
  for (let i = 0; i < fills.length; i++) {
    const f = fills[i];
    let a: string;
    switch (f.kind) {
      case NativeAssetKind.Title:
        if (!isJsonSafe(f.text)) return JSON.stringify(nativeAdm(n, fills, urls));
        a = `{\\"id\\":${f.assetId},\\"title\\":{\\"text\\":\\"${f.text}\\"}}`;
        break;
      case NativeAssetKind.Img:
        if (f.img === null) continue;
        if (!isJsonSafe(f.img.url)) return JSON.stringify(nativeAdm(n, fills, urls));
        a = `{\\"id\\":${f.assetId},\\"img\\":{\\"url\\":\\"${f.img.url}\\",\\"w\\":${f.img.w},\\"h\\":${f.img.h}}}`;
        break;
      case NativeAssetKind.Data:
        if (!isJsonSafe(f.text)) return JSON.stringify(nativeAdm(n, fills, urls));
        a = `{\\"id\\":${f.assetId},\\"data\\":{\\"value\\":\\"${f.text}\\"}}`;
        break;
      default:
        continue;
    }
    assets = assets === '' ? a : `${assets},${a}`;
  }
  const v = nativeVersion(n);
  let body = `{\\"ver\\":\\"${v.ver}\\",\\"assets\\":[${assets}],\\"link\\":{\\"url\\":\\"${urls.click}\\"}`;
  if (v.tracker === 'eventtracker') body += `,\\"eventtrackers\\":[{\\"event\\":${EVENT_IMPRESSION},\\"method\\":${METHOD_IMG},\\"url\\":\\"${urls.imp}\\"}]`;
  else if (v.tracker === 'imptrackers') body += `,\\"imptrackers\\":[\\"${urls.imp}\\"]`;
  return v.legacy ? `"{\\"native\\":${body}}}"` : `"${body}}"`;
}
