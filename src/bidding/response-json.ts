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
import { EVENT_IMPRESSION, METHOD_IMG, nativeAdm, nativeVersion, type TrackingUrls } from './markup';

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
