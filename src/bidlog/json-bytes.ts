/**
 * JSON values written as UTF-8 bytes straight into a buffer, byte for byte what JSON.stringify
 * writes (strings made well-formed, well-formed.ts), without making a string: the bid log's lines
 * (src/log/log-line.ts), its compact fields (compact.ts) and the bid response
 * (src/bidding/response-json.ts) are written this way. Printable ASCII goes byte by byte, the rest
 * through Buffer#write.
 */
import { wellFormedJson } from './well-formed';

/**
 * Members already serialized (`,"key":value…`) held as UTF-8 bytes: `buf[0, length)`, well-formed
 * (compact.ts writes them so). Copied into the log as they are.
 */
export interface FieldBytes {
  readonly buf: Buffer;
  readonly length: number;
}

/** The most bytes a UTF-16 code unit takes in a JSON string: `\u001f`; a lone surrogate's escape becomes U+FFFD (3). */
export const JSON_BYTES_PER_UNIT = 6;

/** `src` at `at`; returns where it ends. */
export function copyBytes(src: Uint8Array, dst: Uint8Array, at: number): number {
  for (let i = 0; i < src.length; i++) dst[at + i] = src[i];
  return at + src.length;
}

/** Text that needs no JSON escaping, as UTF-8 at `at` (printable ASCII byte by byte); returns where it ends. */
export function writeText(s: string, dst: Buffer, at: number): number {
  const n = s.length;
  // Long texts (markup templates, candidates' JSON) in one native write.
  if (n > 64) return at + dst.write(s, at, 'utf8');
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x80) return at + dst.write(s, at, 'utf8');
    dst[at + i] = c;
  }
  return at + n;
}

/** Digits of a non-negative integer below 1e15 at `at`; returns where they end. */
function digits(n: number, dst: Uint8Array, at: number): number {
  if (n === 0) {
    dst[at] = 0x30;
    return at + 1;
  }
  let count = 0;
  for (let v = n; v >= 1; v = Math.floor(v / 10)) count++;
  let i = at + count;
  for (let v = n; v >= 1; v = Math.floor(v / 10)) dst[--i] = 0x30 + (v % 10);
  return at + count;
}

const NULL = [0x6e, 0x75, 0x6c, 0x6c];

/**
 * A number as JSON.stringify writes it (`null` when not finite, `-0` as `0`). Integers, and numbers
 * of at most 6 decimals below 1e9 (prices, milliseconds, floors), are written digit by digit: such a
 * decimal has at most 15 significant digits, so it is the shortest text of the double nearest to it,
 * which is what String() writes; anything else goes through String(). Returns where it ends.
 */
export function writeNumber(v: number, dst: Uint8Array, at: number): number {
  if (!Number.isFinite(v)) {
    for (let i = 0; i < 4; i++) dst[at + i] = NULL[i];
    return at + 4;
  }
  let p = at;
  const a = v < 0 ? -v : v;
  if (v < 0) dst[p++] = 0x2d;
  if (a < 1e15 && Number.isInteger(a)) return digits(a, dst, p);
  if (a < 1e9) {
    const k = Math.round(a * 1e6);
    if (k / 1e6 === a) {
      const whole = Math.floor(k / 1e6);
      let frac = k - whole * 1e6;
      p = digits(whole, dst, p);
      dst[p++] = 0x2e;
      for (let div = 1e5; frac !== 0; div /= 10) {
        const d = Math.floor(frac / div);
        dst[p++] = 0x30 + d;
        frac -= d * div;
      }
      return p;
    }
  }
  const s = String(v);
  for (let i = 0; i < s.length; i++) dst[at + i] = s.charCodeAt(i);
  return at + s.length;
}

/** Whether `s` needs no JSON escaping: no quote, backslash, control character or lone surrogate half. */
export function jsonSafe(s: string): boolean {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return false;
  }
  return true;
}

/**
 * A string as a JSON string literal, made well-formed: printable ASCII byte by byte, other text
 * that needs no escaping as UTF-8, anything else (quotes, backslashes, control characters,
 * surrogates) through JSON.stringify and wellFormedJson. At most 6 bytes per UTF-16 unit, plus 2.
 */
export function writeJsonString(s: string, dst: Buffer, at: number): number {
  dst[at] = 0x22;
  let p = at + 1;
  let ascii = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0xd800 && c <= 0xdfff)) return at + dst.write(wellFormedJson(JSON.stringify(s)), at, 'utf8');
    if (c >= 0x80) ascii = false;
    else if (ascii) dst[p++] = c;
  }
  if (!ascii) p = at + 1 + dst.write(s, at + 1, 'utf8');
  dst[p++] = 0x22;
  return p;
}

/** A growable buffer that JSON is written into (see the functions above), reused from one text to the next. */
export class ByteWriter {
  buf: Buffer;
  pos = 0;

  constructor(size = 4096) {
    this.buf = Buffer.allocUnsafe(size);
  }

  reset(): void {
    this.pos = 0;
  }

  /** Room for `bytes` more. */
  room(bytes: number): void {
    if (this.pos + bytes <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + bytes));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Text that needs no JSON escaping (keys, punctuation, known-safe values). */
  raw(s: string): void {
    this.room(3 * s.length);
    this.pos = writeText(s, this.buf, this.pos);
  }

  /** A string value, quoted and escaped as JSON.stringify does, made well-formed. */
  str(s: string): void {
    this.room(JSON_BYTES_PER_UNIT * s.length + 2);
    this.pos = writeJsonString(s, this.buf, this.pos);
  }

  /**
   * A string value exactly as JSON.stringify writes it: lone surrogates stay escaped as they are (the
   * bid response echoes the request's ids as sent).
   */
  literal(s: string): void {
    if (jsonSafe(s)) {
      this.room(3 * s.length + 2);
      this.buf[this.pos++] = 0x22;
      this.pos = writeText(s, this.buf, this.pos);
      this.buf[this.pos++] = 0x22;
    } else {
      this.raw(JSON.stringify(s));
    }
  }

  /** The inside of `literal(s)` (no quotes), for a string literal written in pieces. */
  inner(s: string): void {
    if (jsonSafe(s)) this.raw(s);
    else this.raw(JSON.stringify(s).slice(1, -1));
  }

  num(n: number): void {
    this.room(25);
    this.pos = writeNumber(n, this.buf, this.pos);
  }

  byte(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
  }

  /** `bytes[start, end)` as they are. */
  bytes(bytes: Buffer, start = 0, end = bytes.length): void {
    this.room(end - start);
    this.pos += bytes.copy(this.buf, this.pos, start, end);
  }

  /** What was written, as text. */
  text(): string {
    return this.buf.toString('utf8', 0, this.pos);
  }
}
