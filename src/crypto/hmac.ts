import { createHmac } from 'node:crypto';

/**
 * HMAC-SHA256 (RFC 2104, FIPS 180-4) of short texts under one fixed key, in JavaScript. Every bid
 * signs its tracking payload once and every request with a user id hashes it once (src/privacy/
 * pii-hasher.ts), so this is on the bid path twice per bid.
 *
 * Why not node:crypto: the two key blocks, K ^ ipad and K ^ opad, are compressed once here, in the
 * constructor; a MAC of a message under 56 bytes is then two SHA-256 compressions on reused typed
 * arrays, allocation-free. Alone in a loop node:crypto costs about the same per MAC (`createHmac`
 * with a KeyObject made once, `Hash.copy()` of the pad states, or two one-shot `crypto.hash` calls
 * over pads prepared once); inside the bid path it made every bid dearer, far more than its
 * per-MAC difference: `npm run bench` (its HMAC rows) measures both in
 * alternating runs. The output equals `createHmac('sha256', key)`: test/crypto/hmac.unit.spec.ts
 * compares them at every padding boundary, for keys of every size class, for non-ASCII text and on
 * random keys and messages; test/crypto/golden.unit.spec.ts pins signatures and user keys.
 */

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be,
  0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa,
  0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85,
  0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3,
  0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f,
  0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const H0 = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

const BLOCK = 64;

/**
 * Compresses the 64-byte blocks of `data` from `off` to `end` into `state` (8 words), using `w`
 * (64 words) as the message schedule.
 */
function compress(state: Int32Array, w: Int32Array, data: Uint8Array, off: number, end: number): void {
  let a0 = state[0];
  let b0 = state[1];
  let c0 = state[2];
  let d0 = state[3];
  let e0 = state[4];
  let f0 = state[5];
  let g0 = state[6];
  let h0 = state[7];
  for (let p = off; p < end; p += BLOCK) {
    for (let i = 0; i < 16; i++) {
      const j = p + 4 * i;
      w[i] = (data[j] << 24) | (data[j + 1] << 16) | (data[j + 2] << 8) | data[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const x = w[i - 15];
      const y = w[i - 2];
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let a = a0;
    let b = b0;
    let c = c0;
    let d = d0;
    let e = e0;
    let f = f0;
    let g = g0;
    let h = h0;
    for (let i = 0; i < 64; i++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i] + w[i]) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    a0 = (a0 + a) | 0;
    b0 = (b0 + b) | 0;
    c0 = (c0 + c) | 0;
    d0 = (d0 + d) | 0;
    e0 = (e0 + e) | 0;
    f0 = (f0 + f) | 0;
    g0 = (g0 + g) | 0;
    h0 = (h0 + h) | 0;
  }
  state[0] = a0;
  state[1] = b0;
  state[2] = c0;
  state[3] = d0;
  state[4] = e0;
  state[5] = f0;
  state[6] = g0;
  state[7] = h0;
}

/**
 * Writes SHA-256's padding after `len` message bytes at `buf[0..len)`, for a message whose hashed
 * total (including the `prefix` bytes already compressed) is `prefix + len` bytes; returns the
 * padded length (a multiple of 64).
 */
function pad(buf: Uint8Array, len: number, prefix: number): number {
  const total = len + 9 <= BLOCK ? BLOCK : Math.ceil((len + 9) / BLOCK) * BLOCK;
  buf[len] = 0x80;
  buf.fill(0, len + 1, total - 8);
  const bits = (prefix + len) * 8;
  const hi = Math.floor(bits / 0x100000000);
  const lo = bits >>> 0;
  buf[total - 8] = hi >>> 24;
  buf[total - 7] = hi >>> 16;
  buf[total - 6] = hi >>> 8;
  buf[total - 5] = hi;
  buf[total - 4] = lo >>> 24;
  buf[total - 3] = lo >>> 16;
  buf[total - 2] = lo >>> 8;
  buf[total - 1] = lo;
  return total;
}

/** SHA-256 of `data` (used for keys longer than a block). */
function sha256(data: Uint8Array): Uint8Array {
  const buf = new Uint8Array(Math.ceil((data.length + 9) / BLOCK) * BLOCK);
  buf.set(data);
  const state = H0.slice();
  compress(state, new Int32Array(64), buf, 0, pad(buf, data.length, 0));
  const out = new Uint8Array(32);
  writeDigest(state, out);
  return out;
}

/** The 8 state words as 32 big-endian bytes at the start of `out`. */
function writeDigest(state: Int32Array, out: Uint8Array): void {
  for (let i = 0; i < 8; i++) {
    const v = state[i];
    out[4 * i] = v >>> 24;
    out[4 * i + 1] = v >>> 16;
    out[4 * i + 2] = v >>> 8;
    out[4 * i + 3] = v;
  }
}

/** HMAC-SHA256 under one key, fixed at construction. */
export class Hmac {
  /** The state after K ^ ipad, and after K ^ opad. */
  private readonly innerStart = new Int32Array(8);
  private readonly outerStart = new Int32Array(8);
  private readonly state = new Int32Array(8);
  private readonly w = new Int32Array(64);
  /** The message and its padding; grows for longer messages. */
  private msg = Buffer.alloc(512);
  /** The outer hash's one block: the inner digest and its padding. */
  private readonly outerBlock = new Uint8Array(BLOCK);
  private readonly out = Buffer.alloc(32);

  constructor(key: Uint8Array) {
    const k = key.length > BLOCK ? sha256(key) : key;
    const block = new Uint8Array(BLOCK);
    for (let i = 0; i < BLOCK; i++) block[i] = (i < k.length ? k[i] : 0) ^ 0x36;
    this.innerStart.set(H0);
    compress(this.innerStart, this.w, block, 0, BLOCK);
    for (let i = 0; i < BLOCK; i++) block[i] = (i < k.length ? k[i] : 0) ^ 0x5c;
    this.outerStart.set(H0);
    compress(this.outerStart, this.w, block, 0, BLOCK);
    // The inner digest is 32 bytes after one key block: 96 bytes hashed in all.
    pad(this.outerBlock, 32, BLOCK);
  }

  /** The MAC of the UTF-8 bytes of `text`: 32 bytes, in a buffer the next call overwrites. */
  mac(text: string): Buffer {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit; 72 more for the padding.
    if (3 * text.length + 72 > this.msg.length) this.msg = Buffer.alloc(3 * text.length + 72);
    return this.digest(this.msg.write(text, 0, 'utf8'));
  }

  /** The MAC of `bytes[0, length)`: 32 bytes, in a buffer the next call overwrites. */
  macBytes(bytes: Uint8Array, length: number): Buffer {
    if (length + 72 > this.msg.length) this.msg = Buffer.alloc(length + 72);
    const msg = this.msg;
    for (let i = 0; i < length; i++) msg[i] = bytes[i];
    return this.digest(length);
  }

  /** The MAC of the message's first `len` bytes, in `msg`. */
  private digest(len: number): Buffer {
    const st = this.state;
    st.set(this.innerStart);
    compress(st, this.w, this.msg, 0, pad(this.msg, len, BLOCK));
    writeDigest(st, this.outerBlock);
    st.set(this.outerStart);
    compress(st, this.w, this.outerBlock, 0, BLOCK);
    writeDigest(st, this.out);
    return this.out;
  }
}

/** A key for one purpose derived from a secret, so that one secret gives independent keys: HMAC(secret, label). */
export function deriveKey(secret: string, label: string): Buffer {
  return createHmac('sha256', secret).update(label).digest();
}
