/**
 * The tracking payload: one compact record per bid, packed once and shared by the five URLs of a bid
 * (nurl, burl, lurl, the impression tracker, the click URL): `p=<payload>&s=<signature>`, each URL
 * adding only its event (in the path) and the exchange's macros (in the query).
 *
 * Two signatures, one per audience: the notices an exchange calls from its servers (win, bill, loss)
 * carry one, the URLs a page or player calls (impression, click) carry the other. The browser URLs are
 * in the ad markup anyone who sees the ad can read; with one signature for all, anyone could turn an
 * impression URL into a bill. The two signatures are the two halves of one HMAC-SHA256 of the payload
 * text (base64url, 128 bits each) under a key derived from the tracking secret: the server-to-server
 * one the first 16 bytes, the browser one the last 16. The output of HMAC is indistinguishable from
 * random bits without the key, so one half tells nothing about the other, and one MAC per bid costs
 * half of two (bench/README.md). The payload names the key it was signed with (its id), so keys can
 * rotate: one signing key (TRACKING_SECRET, TRACKING_KEY_ID), earlier ones still accepted
 * (TRACKING_OLD_KEYS).
 *
 * Format 3 (written): a packed binary record in base64url: version (1 byte, 3), flags (1 byte; bit 0:
 * the bid id is a UUID stored as 16 bytes, bit 1: a test bid, bits 2-7: the exchange's index), key id (1 byte), time in epoch ms (6 bytes, big-endian),
 * price (float64, big-endian), the bid id (16 bytes, or a string), then the strings request id, imp id,
 * creative id, campaign id, currency, deal id, publisher, user key, each as a LEB128 length and UTF-8
 * bytes. The user key is a keyed hash of the user's id, never the id itself ('' without one, or
 * without consent to use it).
 *
 * Formats 1 (lz-string-compressed JSON array) and 2 (format 3 without the key id) were written by
 * earlier versions with ONE signature (HMAC of the payload under the secret itself) for every URL of a
 * bid. They are still read while TRACKING_LEGACY_PAYLOADS is true, so that bids made before an upgrade
 * are still billed; the notice age limit (BILL_DEDUPE_TTL_S) ends them a week later, after which the
 * setting can be turned off. Their user ids are not used (user key '').
 */
import { timingSafeEqual } from 'node:crypto';
import * as lz from 'lz-string';
import type { Config } from '../config/config';
import { deriveKey, Hmac } from '../crypto/hmac';

/** The format this version writes. */
export const PAYLOAD_VERSION = 3;

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
  /** Keyed hash of the user's id ('' when none may be used): frequency caps count on it. */
  readonly userKey: string;
  /** A bid to a `test` = 1 request: its notices spend no budget and count no caps (false when absent). */
  readonly test?: boolean;
  /** The exchange the bid went to (src/exchanges/exchanges.ts; 0: open or an earlier format). */
  readonly source?: number;
}

/** Who calls a URL: the exchange's servers (win, bill, loss) or a browser or player (impression, click). */
export type Audience = 's2s' | 'browser';

export interface TrackingKey {
  readonly id: number;
  readonly secret: string;
}

export interface TrackingKeys {
  /** The signing key. */
  readonly current: TrackingKey;
  /** Every key accepted when verifying, the signing key first. */
  readonly accepted: readonly TrackingKey[];
  /** Whether payload formats 1 and 2 are still read. */
  readonly legacy: boolean;
}

export function trackingKeys(config: Config): TrackingKeys {
  const current = { id: config.trackingKeyId, secret: config.trackingSecret };
  return { current, accepted: [current, ...config.trackingOldKeys], legacy: config.trackingLegacyPayloads };
}

export class PayloadError extends Error {
  constructor(readonly reason: 'missing' | 'bad_signature' | 'unknown_key' | 'undecodable' | 'bad_version') {
    super(`tracking payload: ${reason}`);
    this.name = 'PayloadError';
  }
}

/** Signature length: 16 bytes of HMAC-SHA256 (128 bits), base64url. */
const SIG_BYTES = 16;
export const SIG_CHARS = 22;
const FLAG_UUID = 1;
const FLAG_TEST = 2;
/** The exchange's index (0-63) sits above the two flag bits. */
const SOURCE_SHIFT = 2;
/** version, flags, key id, ts (6), price (8). */
const FIXED_BYTES = 17;
/** Longest payload text read: a format-3 payload of the longest fields the request limits allow is ~3 KB. */
const MAX_PACKED_CHARS = 8 * 1024;

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

/** Upper bound of the encoded size: a UTF-16 unit takes at most 3 UTF-8 bytes, plus 5 length bytes each. */
function maxSize(p: TrackingPayload): number {
  const chars =
    p.bidId.length + p.requestId.length + p.impId.length + p.crid.length + p.cid.length + p.cur.length + p.dealId.length + p.publisher.length + p.userKey.length;
  return FIXED_BYTES + 3 * chars + 9 * 5;
}

export class PayloadCodec {
  private readonly keyId: number;
  private readonly signing: Hmac;
  private readonly byId = new Map<number, Hmac>();
  /** Formats 1 and 2: HMAC under each accepted secret itself; null when they are no longer read. */
  private readonly legacy: readonly Hmac[] | null;
  /** Encoding scratch space, reused (the result leaves as a string). */
  private scratch = Buffer.allocUnsafe(2048);

  constructor(keys: TrackingKeys) {
    for (const k of keys.accepted) {
      this.byId.set(k.id, new Hmac(deriveKey(k.secret, 'tracking:v3')));
    }
    this.keyId = keys.current.id;
    this.signing = this.byId.get(keys.current.id)!;
    this.legacy = keys.legacy ? keys.accepted.map((k) => new Hmac(Buffer.from(k.secret, 'utf8'))) : null;
  }

  /** The query of the server-to-server URLs and of the browser URLs: `p=<payload>&s=<signature>` each. */
  encode(p: TrackingPayload): { s2s: string; browser: string } {
    this.pack(p, null, 0);
    const packed = this.text.toString('latin1', 0, this.packedChars);
    const s2s = this.text.toString('latin1', this.packedChars, this.packedChars + SIG_CHARS);
    const browser = this.text.toString('latin1', this.packedChars + SIG_CHARS, this.packedChars + 2 * SIG_CHARS);
    return { s2s: `p=${packed}&s=${s2s}`, browser: `p=${packed}&s=${browser}` };
  }

  /**
   * The last `pack`'s text, ASCII: the payload (base64url, `packedChars` long), then the
   * server-to-server signature, then the browser one (SIG_CHARS each). `p=<payload>&s=<signature>`
   * is a URL's query.
   */
  text = Buffer.allocUnsafe(4096);
  packedChars = 0;

  /**
   * Packs and signs `p` into `text` (what `encode` joins), making no string: the bid path writes its
   * URLs from these bytes. `uuid`: the bid id as a UUID's 16 bytes at `uuidAt` (then `p.bidId` is not
   * read), or null to read `p.bidId`.
   */
  pack(p: TrackingPayload, uuid: Uint8Array | null, uuidAt: number): void {
    const need = maxSize(p) + 16;
    if (need > this.scratch.length) this.scratch = Buffer.allocUnsafe(need);
    const buf = this.scratch;
    buf[0] = PAYLOAD_VERSION;
    buf[2] = this.keyId;
    buf.writeUIntBE(Math.max(0, Math.min(p.ts, 2 ** 48 - 1)), 3, 6);
    buf.writeDoubleBE(p.price, 9);
    let off = FIXED_BYTES;
    const flags = (p.test === true ? FLAG_TEST : 0) | (((p.source ?? 0) & 63) << SOURCE_SHIFT);
    if (uuid !== null) {
      for (let i = 0; i < 16; i++) buf[off + i] = uuid[uuidAt + i];
      buf[1] = FLAG_UUID | flags;
      off += 16;
    } else if (writeUuid(p.bidId, buf, off)) {
      buf[1] = FLAG_UUID | flags;
      off += 16;
    } else {
      buf[1] = flags;
      off = writeString(buf, off, p.bidId);
    }
    off = writeString(buf, off, p.requestId);
    off = writeString(buf, off, p.impId);
    off = writeString(buf, off, p.crid);
    off = writeString(buf, off, p.cid);
    off = writeString(buf, off, p.cur);
    off = writeString(buf, off, p.dealId);
    off = writeString(buf, off, p.publisher);
    off = writeString(buf, off, p.userKey);
    const chars = Math.ceil((off * 4) / 3) + 2 * SIG_CHARS;
    if (chars > this.text.length) this.text = Buffer.allocUnsafe(chars);
    const text = this.text;
    const packedChars = base64url(buf, 0, off, text, 0);
    const mac = this.signing.macBytes(text, packedChars);
    base64url(mac, 0, SIG_BYTES, text, packedChars);
    base64url(mac, SIG_BYTES, 2 * SIG_BYTES, text, packedChars + SIG_CHARS);
    this.packedChars = packedChars;
  }

  /**
   * Verifies the signature for `audience` and decodes; throws PayloadError. `packed` and `sig` are
   * the `p` and `s` query values.
   */
  decode(packed: string | undefined, sig: string | undefined, audience: Audience): TrackingPayload {
    if (!packed || !sig) throw new PayloadError('missing');
    if (packed.length > MAX_PACKED_CHARS || sig.length !== SIG_CHARS) throw new PayloadError('bad_signature');
    // Query parsers decode '+' as a space; format 1's alphabet has '+' and never a space (base64url
    // has neither), so this undoes it exactly.
    if (packed.includes(' ')) packed = packed.replace(/ /g, '+');
    if (packed.charCodeAt(0) === 65 /* A: a binary format's first byte, 2 or 3 */) {
      const buf = Buffer.from(packed, 'base64url');
      if (buf.length >= FIXED_BYTES && buf[0] === PAYLOAD_VERSION) {
        const key = this.byId.get(buf[2]);
        if (key === undefined) throw new PayloadError('unknown_key');
        if (!sameSig(key, packed, sig, audience === 's2s' ? 0 : SIG_BYTES)) throw new PayloadError('bad_signature');
        return decodeBinary(buf, FIXED_BYTES, 9, 3);
      }
      if (buf.length >= FIXED_BYTES - 1 && buf[0] === 2 && this.legacy !== null) {
        this.verifyLegacy(packed, sig);
        return decodeBinary(buf, FIXED_BYTES - 1, 8, 2);
      }
      throw new PayloadError('bad_version');
    }
    if (this.legacy === null) throw new PayloadError('bad_version');
    this.verifyLegacy(packed, sig);
    return decodeLegacy(packed);
  }

  private verifyLegacy(packed: string, sig: string): void {
    for (const s of this.legacy!) if (sameSig(s, packed, sig, 0)) return;
    throw new PayloadError('bad_signature');
  }
}

/** Whether `sig` is the 16 bytes of the payload's MAC from `at` (0: server-to-server or legacy, 16: browser). */
function sameSig(signer: Hmac, packed: string, sig: string, at: number): boolean {
  const expected = Buffer.from(signer.mac(packed).toString('base64url', at, at + SIG_BYTES), 'latin1');
  const given = Buffer.from(sig, 'latin1');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const BASE64URL = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_');

/** `src[start, end)` in base64url without padding (as Buffer#toString('base64url')) at `dst[at]`; returns the characters written. */
function base64url(src: Uint8Array, start: number, end: number, dst: Uint8Array, at: number): number {
  const a = BASE64URL;
  let p = at;
  let i = start;
  for (; i + 2 < end; i += 3) {
    const n = (src[i] << 16) | (src[i + 1] << 8) | src[i + 2];
    dst[p++] = a[n >> 18];
    dst[p++] = a[(n >> 12) & 63];
    dst[p++] = a[(n >> 6) & 63];
    dst[p++] = a[n & 63];
  }
  if (end - i === 1) {
    const n = src[i] << 16;
    dst[p++] = a[n >> 18];
    dst[p++] = a[(n >> 12) & 63];
  } else if (end - i === 2) {
    const n = (src[i] << 16) | (src[i + 1] << 8);
    dst[p++] = a[n >> 18];
    dst[p++] = a[(n >> 12) & 63];
    dst[p++] = a[(n >> 6) & 63];
  }
  return p - at;
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

/**
 * Formats 2 and 3 (`fixed` bytes before the bid id; the time at `tsAt`, the price after it). Any
 * inconsistency is 'undecodable' (the signature was valid, so only a bug gets here).
 */
function decodeBinary(buf: Buffer, fixed: number, priceAt: number, tsAt: number): TrackingPayload {
  let off = fixed;
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
  const requestId = str();
  const impId = str();
  const crid = str();
  const cid = str();
  const cur = str();
  const dealId = str();
  const publisher = str();
  const user = str();
  if (off !== buf.length) throw new PayloadError('undecodable');
  return {
    ts: buf.readUIntBE(tsAt, 6),
    price: buf.readDoubleBE(priceAt),
    bidId,
    requestId,
    impId,
    crid,
    cid,
    cur,
    dealId,
    publisher,
    // Format 2 carried the raw user id: not used.
    userKey: fixed === FIXED_BYTES ? user : '',
    test: (buf[1] & FLAG_TEST) !== 0,
    source: buf[1] >> SOURCE_SHIFT,
  };
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
    userKey: '',
    test: false,
    source: 0,
  };
}
