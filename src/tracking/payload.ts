/**
 * The tracking payload: one compact record per bid, encoded and signed once, shared by nurl, burl,
 * lurl, the impression tracker and the click URL; each URL adds only its event (in the path) and
 * the exchange's macros (in the query): `p=<payload>&s=<signature>`.
 *
 * Format 2 (written): a packed binary record in base64url. Format 1 (read only): a JSON array
 * compressed with lz-string (`compressToEncodedURIComponent`), which earlier versions wrote; its
 * URLs stay valid for as long as exchanges send notices for old bids. Format 2 replaced it because
 * it is both cheaper and shorter for what a payload holds (mostly random ids, which lz-string
 * cannot compress): 1–2 µs instead of 6–7 µs for the encoding, about 200 instead of 240
 * characters for a typical bid, and bench/README.md has what that did under HTTP load.
 *
 * Format 2 layout: version (1 byte, 2), flags (1 byte; bit 0: the bid id is a UUID stored as 16
 * bytes), time in epoch ms (6 bytes, big-endian), price (float64, big-endian), the bid id (16 bytes,
 * or a string), then the strings request id, imp id, creative id, campaign id, currency, deal id,
 * publisher, user id, each as a LEB128 length and UTF-8 bytes. A format-2 payload starts with 'A'
 * (its first byte is 2); a format-1 payload never does (it always starts with the code of `[1,`).
 *
 * The signature is HMAC-SHA256 of the payload text with TRACKING_SECRET, first 128 bits, base64url.
 */
import { timingSafeEqual } from 'node:crypto';
import * as lz from 'lz-string';
import { HmacSha256 } from './hmac-sha256';

/** The format this version writes. */
export const PAYLOAD_VERSION = 2;

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
const FLAG_UUID = 1;
/** version, flags, ts (6), price (8). */
const FIXED_BYTES = 16;

const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const NIBBLE = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) NIBBLE[48 + i] = i;
for (let i = 0; i < 6; i++) {
  NIBBLE[97 + i] = 10 + i;
  NIBBLE[65 + i] = 10 + i;
}

/** Writes a UUID's 16 bytes at `off`; false (nothing usable written) when `s` is not a UUID. */
function writeUuid(s: string, buf: Buffer, off: number): boolean {
  if (s.length !== 36) return false;
  let o = off;
  for (let i = 0; i < 36; ) {
    if (i === 8 || i === 13 || i === 18 || i === 23) {
      if (s.charCodeAt(i) !== 45) return false;
      i++;
      continue;
    }
    const a = s.charCodeAt(i);
    const b = s.charCodeAt(i + 1);
    const hi = a < 128 ? NIBBLE[a] : -1;
    const lo = b < 128 ? NIBBLE[b] : -1;
    if (hi < 0 || lo < 0) return false;
    buf[o++] = (hi << 4) | lo;
    i += 2;
  }
  return true;
}

/** The lowercase UUID text of 16 bytes at `off`. */
function readUuid(buf: Buffer, off: number): string {
  let s = '';
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) s += '-';
    s += HEX[buf[off + i]];
  }
  return s;
}

/** Upper bound of the encoded size: a UTF-16 unit takes at most 3 UTF-8 bytes, plus 5 length bytes. */
function maxSize(p: TrackingPayload): number {
  return (
    FIXED_BYTES +
    5 +
    3 *
      (p.bidId.length +
        p.requestId.length +
        p.impId.length +
        p.crid.length +
        p.cid.length +
        p.cur.length +
        p.dealId.length +
        p.publisher.length +
        p.userId.length) +
    9 * 5
  );
}

export class PayloadCodec {
  /** HMAC-SHA256 with the key blocks hashed once (see hmac-sha256.ts for why not node:crypto). */
  private readonly mac: HmacSha256;
  /** Encoding scratch space, reused (the result leaves as a string). */
  private scratch = Buffer.allocUnsafe(2048);

  constructor(secret: string) {
    this.mac = new HmacSha256(Buffer.from(secret, 'utf8'));
  }

  /** Returns `p=<payload>&s=<signature>`: URL-safe, ready to append after `?`. */
  encode(p: TrackingPayload): string {
    const need = maxSize(p);
    if (need > this.scratch.length) this.scratch = Buffer.allocUnsafe(need);
    const buf = this.scratch;
    buf[0] = PAYLOAD_VERSION;
    buf.writeUIntBE(Math.max(0, Math.min(p.ts, 2 ** 48 - 1)), 2, 6);
    buf.writeDoubleBE(p.price, 8);
    let off = FIXED_BYTES;
    if (writeUuid(p.bidId, buf, off)) {
      buf[1] = FLAG_UUID;
      off += 16;
    } else {
      buf[1] = 0;
      off = writeString(buf, off, p.bidId);
    }
    off = writeString(buf, off, p.requestId);
    off = writeString(buf, off, p.impId);
    off = writeString(buf, off, p.crid);
    off = writeString(buf, off, p.cid);
    off = writeString(buf, off, p.cur);
    off = writeString(buf, off, p.dealId);
    off = writeString(buf, off, p.publisher);
    off = writeString(buf, off, p.userId);
    const packed = buf.toString('base64url', 0, off);
    return `p=${packed}&s=${this.sign(packed)}`;
  }

  /** The signature of a payload text: HMAC-SHA256 with TRACKING_SECRET, first 16 bytes, base64url. */
  sign(packed: string): string {
    return this.mac.macOfText(packed).toString('base64url', 0, SIG_BYTES);
  }

  /** Verifies and decodes; throws PayloadError. `packed` and `sig` are the `p` and `s` query values. */
  decode(packed: string | undefined, sig: string | undefined): TrackingPayload {
    if (!packed || !sig) throw new PayloadError('missing');
    // Query parsers (Fastify's, URLSearchParams) decode '+' as a space; format 1's alphabet has
    // '+' and never a space (format 2's has neither), so this undoes it exactly.
    if (packed.includes(' ')) packed = packed.replace(/ /g, '+');
    const expected = Buffer.from(this.sign(packed), 'utf8');
    const given = Buffer.from(sig, 'utf8');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new PayloadError('bad_signature');
    return packed.charCodeAt(0) === 65 /* A */ ? decodeBinary(packed) : decodeLegacy(packed);
  }
}

function writeString(buf: Buffer, off: number, s: string): number {
  // Length first: one byte below 128, LEB128 above. Byte length known only after writing, so the
  // common short case writes at off+1 and the rare long one moves the bytes along.
  const n = buf.write(s, off + 1, 'utf8');
  if (n < 128) {
    buf[off] = n;
    return off + 1 + n;
  }
  let len = 0;
  for (let v = n; v > 0; v = Math.floor(v / 128)) len++;
  buf.copyWithin(off + len, off + 1, off + 1 + n);
  let v = n;
  for (let i = 0; i < len; i++) {
    buf[off + i] = (v & 0x7f) | (i < len - 1 ? 0x80 : 0);
    v = Math.floor(v / 128);
  }
  return off + len + n;
}

/** Format 2. Any inconsistency is 'undecodable' (the signature was valid, so only a bug gets here). */
function decodeBinary(packed: string): TrackingPayload {
  const buf = Buffer.from(packed, 'base64url');
  if (buf.length < FIXED_BYTES) throw new PayloadError('undecodable');
  if (buf[0] !== PAYLOAD_VERSION) throw new PayloadError('bad_version');
  let off = FIXED_BYTES;
  const str = (): string => {
    let n = 0;
    let shift = 1;
    for (;;) {
      if (off >= buf.length) throw new PayloadError('undecodable');
      const b = buf[off++];
      n += (b & 0x7f) * shift;
      if (b < 0x80) break;
      shift *= 128;
      if (shift > 2 ** 28) throw new PayloadError('undecodable');
    }
    if (off + n > buf.length) throw new PayloadError('undecodable');
    const s = buf.toString('utf8', off, off + n);
    off += n;
    return s;
  };
  let bidId: string;
  if (buf[1] & FLAG_UUID) {
    if (buf.length < off + 16) throw new PayloadError('undecodable');
    bidId = readUuid(buf, off);
    off += 16;
  } else {
    bidId = str();
  }
  const p: TrackingPayload = {
    ts: buf.readUIntBE(2, 6),
    price: buf.readDoubleBE(8),
    bidId,
    requestId: str(),
    impId: str(),
    crid: str(),
    cid: str(),
    cur: str(),
    dealId: str(),
    publisher: str(),
    userId: str(),
  };
  if (off !== buf.length) throw new PayloadError('undecodable');
  return p;
}

/** Format 1: lz-string of `[1, requestId, bidId, impId, crid, cid, price, cur, ts, dealId, publisher, userId]`. */
function decodeLegacy(packed: string): TrackingPayload {
  let a: unknown;
  try {
    a = JSON.parse(lz.decompressFromEncodedURIComponent(packed) ?? '');
  } catch {
    throw new PayloadError('undecodable');
  }
  if (!Array.isArray(a) || a.length < 12) throw new PayloadError('undecodable');
  if (a[0] !== 1) throw new PayloadError('bad_version');
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
