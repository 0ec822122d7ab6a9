/**
 * The compact fields of the bid path's records (docs/log-pipeline.md, "Records"), written straight
 * from the typed request and the auction's bids as JSON text (`,"key":value…`) that
 * `LogService.log()` places after a record's own fields: no object is built per record, and every
 * request gets them, whether or not its redacted body is kept (LOG_REQUEST_SAMPLE).
 * The field names and types are `CompactRequest` and `CompactResponse` in records.ts.
 */
import { hash } from 'node:crypto';
import type { BidRequest } from '../openrtb/types';
import type { CandidateIndex } from '../targeting/campaign-store';

function str(s: string): string {
  return JSON.stringify(s);
}

/**
 * The request's compact fields: inventory, domain, bundle, device type, OS, country, imps, media,
 * sizes, floors (in their currency), deal ids, currencies, `at`, `tmax`, the user key, the body's
 * byte size and hash, and whether the body follows (`body`).
 */
export function requestFields(req: BidRequest, raw: Uint8Array, bodyKept: boolean): string {
  let media = '';
  let sizes = '';
  let floors = '';
  let floorcurs = '';
  let deals = '';
  let banner = false;
  let video = false;
  let native = false;
  for (let i = 0; i < req.imps.length; i++) {
    const imp = req.imps[i];
    if (imp.banner !== null) {
      banner = true;
      const s = imp.banner.sizes;
      for (let k = 0; k < s.length; k++) sizes += `${sizes === '' ? '' : ','}"${s[k].w}x${s[k].h}"`;
    }
    if (imp.video !== null) {
      video = true;
      if (imp.video.w > 0 && imp.video.h > 0) sizes += `${sizes === '' ? '' : ','}"${imp.video.w}x${imp.video.h}"`;
    }
    if (imp.native !== null) native = true;
    floors += `${i === 0 ? '' : ','}${Number.isFinite(imp.bidfloor) ? imp.bidfloor : 0}`;
    floorcurs += `${i === 0 ? '' : ','}${str(imp.bidfloorcur)}`;
    if (imp.pmp !== null) for (const d of imp.pmp.deals) deals += `${deals === '' ? '' : ','}${str(d.id)}`;
  }
  if (banner) media = '"banner"';
  if (video) media += `${media === '' ? '' : ','}"video"`;
  if (native) media += `${media === '' ? '' : ','}"native"`;
  let curs = '';
  for (let i = 0; i < req.cur.length; i++) curs += `${i === 0 ? '' : ','}${str(req.cur[i])}`;
  return (
    `,"inv":"${req.inventory}","domain":${str(req.domain)},"bundle":${str(req.bundle)},"devicetype":${req.deviceType},` +
    `"os":${str(req.os)},"country":${str(req.country)},"imps":${req.imps.length},"media":[${media}],"sizes":[${sizes}],` +
    `"floors":[${floors}],"floorcurs":[${floorcurs}],"deals":[${deals}],"curs":[${curs}],"at":${req.at},"tmax":${req.tmax},` +
    `"user":${str(req.userKey)},"bytes":${raw.length},"hash":"${bodyHash(raw)}","body":${bodyKept}`
  );
}

/** The request body's identity: SHA-1 (one native call, ~1 µs for a few KB), first 16 bytes, base64url. */
export function bodyHash(raw: Uint8Array): string {
  return hash('sha1', raw, 'base64url').slice(0, 22);
}

/** The compact fields of a request whose typed view could not be made (a 400, or shed unread). */
export function untypedRequestFields(raw: Uint8Array, bodyKept: boolean): string {
  return `,"bytes":${raw.length},"hash":"${bodyHash(raw)}","body":${bodyKept}`;
}

const versions = new WeakMap<CandidateIndex, string>();

/**
 * The campaign set's version: a hash of every candidate as loaded, made once per index. A bid's
 * markup is a function of its campaign and creative (in that set), the tracking payload (the bid's
 * fields) and the bidder's version: with the version, the compact response keeps what rebuilds it.
 */
export function markupVersion(index: CandidateIndex): string {
  let v = versions.get(index);
  if (v === undefined) {
    v = hash('sha1', JSON.stringify(index.candidates), 'base64url').slice(0, 12);
    versions.set(index, v);
  }
  return v;
}
