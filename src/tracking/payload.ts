/**
 * The tracking payload: one compact record per bid, compressed once with lz-string and signed
 * once, shared by nurl, burl, lurl, the impression tracker and the click URL; each URL adds only
 * its event (in the path) and the exchange's macros (in the query). Compressing a compact array
 * once instead of three whole URLs is what keeps this cheap (REFERENCE.md: one lz-string
 * compression of a 233-char URL costs ~39 µs; see bench/RESULTS-bid.md for this payload's cost).
 */
import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import * as lz from 'lz-string';
import { compressToEncodedURIComponent } from './lz';

export const PAYLOAD_VERSION = 1;

export interface TrackingPayload {
  /** Bid request id. */
  readonly requestId: string;
  /** Our bid id (`bid.id`). */
  readonly bidId: string;
  readonly impId: string;
  /** Creative id. */
  readonly crid: string;
  /** Campaign id. */
  readonly cid: string;
  /** Our bid price (CPM, in `cur`). */
  readonly price: number;
  readonly cur: string;
  /** When we bid, epoch ms. */
  readonly ts: number;
  /** Deal id, '' for open auction. */
  readonly dealId: string;
  /** Publisher name, for reporting. */
  readonly publisher: string;
  /** User id (user.id or device.ifa), '' when unknown: frequency caps count on it. */
  readonly userId: string;
}

export class PayloadError extends Error {
  constructor(readonly reason: 'missing' | 'bad_signature' | 'undecodable' | 'bad_version') {
    super(`tracking payload: ${reason}`);
    this.name = 'PayloadError';
  }
}

/** Signature length: 16 bytes of HMAC-SHA256 (128 bits), base64url. */
const SIG_BYTES = 16;

export class PayloadCodec {
  // A KeyObject made once: createHmac with a raw Buffer key re-imports it on every call (~7x slower).
  private readonly key: KeyObject;

  constructor(secret: string) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  /** Returns `p=<lz payload>&s=<signature>`: URL-safe, ready to append after `?`. */
  encode(p: TrackingPayload): string {
    const json = JSON.stringify([
      PAYLOAD_VERSION,
      p.requestId,
      p.bidId,
      p.impId,
      p.crid,
      p.cid,
      p.price,
      p.cur,
      p.ts,
      p.dealId,
      p.publisher,
      p.userId,
    ]);
    // lz-string's URI format, from our byte-identical encoder (src/tracking/lz.ts; lz-string decodes it).
    const packed = compressToEncodedURIComponent(json);
    return `p=${packed}&s=${this.sign(packed)}`;
  }

  sign(packed: string): string {
    return createHmac('sha256', this.key).update(packed).digest().subarray(0, SIG_BYTES).toString('base64url');
  }

  /** Verifies and decodes; throws PayloadError. `packed` and `sig` are the `p` and `s` query values. */
  decode(packed: string | undefined, sig: string | undefined): TrackingPayload {
    if (!packed || !sig) throw new PayloadError('missing');
    // Query parsers (Fastify's, URLSearchParams) decode '+' as a space; lz-string's URI alphabet
    // has '+' and never a space, so this undoes it exactly.
    if (packed.includes(' ')) packed = packed.replace(/ /g, '+');
    const expected = Buffer.from(this.sign(packed), 'utf8');
    const given = Buffer.from(sig, 'utf8');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new PayloadError('bad_signature');
    let a: unknown;
    try {
      a = JSON.parse(lz.decompressFromEncodedURIComponent(packed) ?? '');
    } catch {
      throw new PayloadError('undecodable');
    }
    if (!Array.isArray(a) || a.length < 12) throw new PayloadError('undecodable');
    if (a[0] !== PAYLOAD_VERSION) throw new PayloadError('bad_version');
    return {
      requestId: String(a[1]),
      bidId: String(a[2]),
      impId: String(a[3]),
      crid: String(a[4]),
      cid: String(a[5]),
      price: Number(a[6]),
      cur: String(a[7]),
      ts: Number(a[8]),
      dealId: String(a[9]),
      publisher: String(a[10]),
      userId: String(a[11]),
    };
  }
}
