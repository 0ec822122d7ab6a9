import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

/**
 * HMAC-SHA256 under one key, fixed at construction, through node:crypto. Every bid signs its
 * tracking payload once and every request with a user id hashes it once (src/privacy/
 * pii-hasher.ts), so this is on the bid path twice per bid.
 *
 * The key is imported once as a `KeyObject`: `createHmac` with a raw Buffer or string key imports
 * it again on every call. bench/RESULTS-bid.md has the figures against the hand-written SHA-256 this
 * replaced and against `Hash.copy()` of prepared pad states.
 */
export class Hmac {
  private readonly key: KeyObject;

  constructor(key: Uint8Array) {
    this.key = createSecretKey(key);
  }

  /** The MAC of the UTF-8 bytes of `text`: 32 bytes. */
  mac(text: string): Buffer {
    return createHmac('sha256', this.key).update(text, 'utf8').digest();
  }
}

/** A key for one purpose derived from a secret, so that one secret gives independent keys: HMAC(secret, label). */
export function deriveKey(secret: string, label: string): Buffer {
  return createHmac('sha256', secret).update(label).digest();
}
