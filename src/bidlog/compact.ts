/**
 * The compact fields of the bid path's records (docs/log-pipeline.md, "Records"), written straight
 * from the typed request and the auction's bids as JSON text (`,"key":value…`) that
 * `LogService.log()` places after a record's own fields: no object is built per record, and every
 * request gets them, whether or not its redacted body is kept (LOG_REQUEST_SAMPLE).
 * The field names and types are `CompactRequest` and `CompactResponse` in records.ts.
 */
import { hash } from 'node:crypto';
import type { BidRequest } from '../openrtb/types';
import { ByteWriter, type FieldBytes } from './json-bytes';
import type { CandidateIndex } from '../targeting/campaign-store';

/**
 * A reused byte buffer the compact fields are written into, then copied into the log line (or read
 * out as one string, `text`): no string is made per field or per record (the bid benchmark's heap row).
 */
export class FieldWriter extends ByteWriter implements FieldBytes {
  constructor(size = 16 * 1024) {
    super(size);
  }

  /** The bytes written since `reset` (FieldBytes). */
  get length(): number {
    return this.pos;
  }

  /** `,` before every element of a list but the first. */
  comma(first: boolean): void {
    if (!first) this.byte(0x2c);
  }
}

const out = new FieldWriter();
const responseOut = new FieldWriter();

/** `requestFieldBytes` as text. */
export function requestFields(req: BidRequest, raw: Uint8Array, bodyKept: boolean): string {
  requestFieldBytes(req, raw, bodyKept);
  return out.text();
}

/**
 * The request's compact fields: inventory, domain, bundle, device type, OS, country, imps, media,
 * sizes, floors (in their currency), deal ids, currencies, `at`, `tmax`, the user key, the body's
 * byte size and hash, and whether the body follows (`body`). As UTF-8 bytes (well-formed) in a
 * buffer reused by the next call: the bid path logs them before it prepares another request.
 */
export function requestFieldBytes(req: BidRequest, raw: Uint8Array, bodyKept: boolean): FieldBytes {
  const w = out;
  w.reset();
  w.raw(',"inv":');
  w.str(req.inventory);
  w.raw(',"domain":');
  w.str(req.domain);
  w.raw(',"bundle":');
  w.str(req.bundle);
  w.raw(',"devicetype":');
  w.num(req.deviceType);
  w.raw(',"os":');
  w.str(req.os);
  w.raw(',"country":');
  w.str(req.country);
  w.raw(',"imps":');
  w.num(req.imps.length);
  let banner = false;
  let video = false;
  let native = false;
  const imps = req.imps;
  for (let i = 0; i < imps.length; i++) {
    const imp = imps[i];
    banner ||= imp.banner !== null;
    video ||= imp.video !== null;
    native ||= imp.native !== null;
  }
  w.raw(',"media":[');
  let first = true;
  for (let i = 0; i < MEDIA.length; i++) {
    if (!(i === 0 ? banner : i === 1 ? video : native)) continue;
    w.comma(first);
    w.raw(MEDIA[i]);
    first = false;
  }
  w.raw('],"sizes":[');
  first = true;
  for (let i = 0; i < imps.length; i++) {
    const imp = imps[i];
    if (imp.banner !== null) {
      const sizes = imp.banner.sizes;
      for (let j = 0; j < sizes.length; j++) {
        const z = sizes[j];
        w.comma(first);
        first = false;
        w.raw('"');
        w.num(z.w);
        w.raw('x');
        w.num(z.h);
        w.raw('"');
      }
    }
    if (imp.video !== null && imp.video.w > 0 && imp.video.h > 0) {
      w.comma(first);
      first = false;
      w.raw('"');
      w.num(imp.video.w);
      w.raw('x');
      w.num(imp.video.h);
      w.raw('"');
    }
  }
  w.raw('],"floors":[');
  for (let i = 0; i < req.imps.length; i++) {
    w.comma(i === 0);
    const f = req.imps[i].bidfloor;
    w.num(Number.isFinite(f) ? f : 0);
  }
  w.raw('],"floorcurs":[');
  for (let i = 0; i < req.imps.length; i++) {
    w.comma(i === 0);
    w.str(req.imps[i].bidfloorcur);
  }
  w.raw('],"deals":[');
  first = true;
  for (let i = 0; i < imps.length; i++) {
    const pmp = imps[i].pmp;
    if (pmp === null) continue;
    for (let j = 0; j < pmp.deals.length; j++) {
      const d = pmp.deals[j];
      w.comma(first);
      first = false;
      w.str(d.id);
    }
  }
  w.raw('],"curs":[');
  for (let i = 0; i < req.cur.length; i++) {
    w.comma(i === 0);
    w.str(req.cur[i]);
  }
  w.raw('],"at":');
  w.num(req.at);
  w.raw(',"tmax":');
  w.num(req.tmax);
  w.raw(',"user":');
  w.str(req.userKey);
  w.raw(',"bytes":');
  w.num(raw.length);
  w.raw(',"hash":"');
  w.raw(bodyHash(raw));
  w.raw(bodyKept ? '","body":true' : '","body":false');
  return w;
}

/**
 * A bid's compact response fields, `,"cur":…,"mv":…,"bids":[…]` (CompactResponse): `bids` holds the
 * compact bids joined by commas, well-formed (src/bidding/response-json.ts writes them). As UTF-8
 * bytes in a buffer reused by the next call.
 */
export function responseFieldBytes(cur: string, markupVersion: string, bids: FieldBytes): FieldBytes {
  const w = responseOut;
  w.reset();
  w.raw(',"cur":');
  w.str(cur);
  w.raw(',"mv":');
  w.str(markupVersion);
  w.raw(',"bids":[');
  w.bytes(bids.buf, 0, bids.length);
  w.byte(0x5d);
  return w;
}

const MEDIA: readonly string[] = ['"banner"', '"video"', '"native"'];

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
