/**
 * A faster encoder for lz-string's `compressToEncodedURIComponent` format: the same algorithm and
 * byte-for-byte the same output as lz-string 1.5 (checked against the library on random and real
 * inputs in test/tracking/lz.spec.ts), decoded with lz-string's own `decompressFromEncodedURIComponent`.
 *
 * Why: lz-string keeps its dictionary in a plain object keyed by ever longer strings (w + c), so
 * every input character costs a string concatenation and a property lookup; the payload of each bid
 * went through that once and it was the largest single cost of the bid path (bench/RESULTS-bid.md).
 * Here the dictionary is a trie in typed arrays reused across calls: an entry is (code of its
 * prefix, last char) → code, found by one open-addressing probe, with no string building and no
 * allocation but the output string. Inputs longer than MAX_INPUT use lz-string itself.
 */
import * as lzString from 'lz-string';

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+-$';
const ALPHA = Uint8Array.from(ALPHABET, (ch) => ch.charCodeAt(0));

/** Longer inputs go to lz-string (the tables below are sized for tracking payloads). */
const MAX_INPUT = 4096;
const TABLE_BITS = 14; // ≥ 2 × the most entries MAX_INPUT can create
const TABLE_SIZE = 1 << TABLE_BITS;
const TABLE_MASK = TABLE_SIZE - 1;

// Generation stamps make "clear the dictionary" O(1) per call.
let gen = 0;
const singleGen = new Uint32Array(65536);
const singleCode = new Int32Array(65536);
const pendingGen = new Uint32Array(65536);
const slotGen = new Uint32Array(TABLE_SIZE);
const slotKey = new Int32Array(TABLE_SIZE);
const slotCode = new Int32Array(TABLE_SIZE);
// Per input char at most one code and one literal (≤ 16 + 16 + 16 bits): 8 output chars.
const out = new Uint8Array(MAX_INPUT * 8 + 16);

// Bit writer state (lz-string packs codes least significant bit first into 6-bit chars).
let bitVal = 0;
let bitPos = 0;
let outLen = 0;

/** Appends the `width` low bits of `value`, least significant first. */
function writeBits(value: number, width: number): void {
  for (let b = 0; b < width; b++) {
    bitVal = (bitVal << 1) | (value & 1);
    if (bitPos === 5) {
      out[outLen++] = ALPHA[bitVal]!;
      bitVal = 0;
      bitPos = 0;
    } else bitPos++;
    value >>= 1;
  }
}

export function compressToEncodedURIComponent(input: string): string {
  const n = input.length;
  if (n > MAX_INPUT) return lzString.compressToEncodedURIComponent(input);
  if (++gen === 0xffffffff) {
    gen = 1;
    singleGen.fill(0);
    pendingGen.fill(0);
    slotGen.fill(0);
  }
  const g = gen;
  let dictSize = 3;
  let numBits = 2;
  let enlargeIn = 2;
  let wCode = -1; // code of the current phrase w, -1 while empty
  let wChar = -1; // its char code when w is a single char, else -1
  bitVal = 0;
  bitPos = 0;
  outLen = 0;

  for (let i = 0; i <= n; i++) {
    let c = -1;
    let cCode = -1;
    if (i < n) {
      c = input.charCodeAt(i);
      if (singleGen[c] !== g) {
        singleGen[c] = g;
        singleCode[c] = dictSize++;
        pendingGen[c] = g;
      }
      cCode = singleCode[c]!;
      if (wCode === -1) {
        wCode = cCode;
        wChar = c;
        continue;
      }
    } else if (wCode === -1) {
      break;
    }
    let slot = 0;
    const key = wCode * 65536 + c;
    if (c !== -1) {
      slot = (Math.imul(key, 0x9e3779b1) >>> (32 - TABLE_BITS)) & TABLE_MASK;
      let found = -1;
      while (slotGen[slot] === g) {
        if (slotKey[slot] === key) {
          found = slotCode[slot]!;
          break;
        }
        slot = (slot + 1) & TABLE_MASK;
      }
      if (found !== -1) {
        wCode = found;
        wChar = -1;
        continue;
      }
    }
    // Emit w: as a literal the first time a single char is used, else as its dictionary code.
    if (wChar >= 0 && pendingGen[wChar] === g) {
      const wide = wChar >= 256;
      writeBits(wide ? 1 : 0, numBits);
      writeBits(wChar, wide ? 16 : 8);
      if (--enlargeIn === 0) {
        enlargeIn = 2 ** numBits;
        numBits++;
      }
      pendingGen[wChar] = 0;
    } else {
      writeBits(wCode, numBits);
    }
    if (--enlargeIn === 0) {
      enlargeIn = 2 ** numBits;
      numBits++;
    }
    if (c === -1) break;
    slotGen[slot] = g;
    slotKey[slot] = key;
    slotCode[slot] = dictSize++;
    wCode = cCode;
    wChar = c;
  }
  writeBits(2, numBits); // end of stream
  // lz-string's flush: shift until a character is complete (it always emits one more).
  for (;;) {
    bitVal <<= 1;
    if (bitPos === 5) {
      out[outLen++] = ALPHA[bitVal]!;
      break;
    }
    bitPos++;
  }
  return Buffer.from(out.buffer, 0, outLen).toString('latin1');
}
