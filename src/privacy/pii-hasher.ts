/**
 * The keyed hash that stands in for a user's identifiers wherever we keep them without consent to
 * keep them raw: the bid log (`device.ifa`, `user.id`, `user.buyeruid`), and the "hashed user key"
 * that tracking payloads and frequency caps use instead of a raw id.
 *
 * HMAC-SHA256 keyed with PII_HASH_SECRET, truncated to 128 bits, base64url (22 characters). Keyed,
 * because a plain hash of an IFA (a UUID) or an IP can be reversed by hashing every candidate; 128
 * bits, because the key must only be unique per user (collisions are expected after ~2^64 ids).
 * The same id always gives the same key under one secret, so caps and logs can still join on it;
 * rotating the secret unlinks everything before it.
 *
 * Computed with src/crypto/hmac.ts (~1 µs per id). The last few ids and their hashes are kept: one
 * request hashes the user's id for the user key and its ids (`device.ifa`, `user.id`,
 * `user.buyeruid`) for the request record, so each distinct id costs one MAC.
 */
import { Hmac } from '../crypto/hmac';

/** Bytes of the MAC kept. */
export const PII_HASH_BYTES = 16;
/** Ids longer than this (characters) are cut before hashing: real ids are under 100; the cut bounds the work. */
export const PII_HASH_MAX_INPUT_CHARS = 1024;
/** Ids remembered with their hashes: the three a request record hashes, and one more. */
const MEMO = 4;

export class PiiHasher {
  private readonly mac: Hmac;
  /** The last MEMO ids hashed and their hashes, written round-robin. */
  private readonly ids: string[] = new Array<string>(MEMO).fill('');
  private readonly hashes: string[] = new Array<string>(MEMO).fill('');
  private next = 0;

  constructor(secret: Uint8Array | string) {
    const key = typeof secret === 'string' ? Buffer.from(secret, 'utf8') : secret;
    // A short secret makes the hash guessable: 16 bytes is the least HMAC-SHA256 keys should have.
    if (key.length < 16) throw new RangeError(`PII_HASH_SECRET must be at least 16 bytes, got ${key.length}`);
    this.mac = new Hmac(key);
  }

  /** The keyed hash of `id` (its UTF-8 bytes), 22 base64url characters. */
  hash(id: string): string {
    if (id !== '') for (let i = 0; i < MEMO; i++) if (this.ids[i] === id) return this.hashes[i];
    const text = id.length > PII_HASH_MAX_INPUT_CHARS ? id.slice(0, PII_HASH_MAX_INPUT_CHARS) : id;
    const h = this.mac.mac(text).toString('base64url', 0, PII_HASH_BYTES);
    this.ids[this.next] = id;
    this.hashes[this.next] = h;
    this.next = (this.next + 1) % MEMO;
    return h;
  }
}
