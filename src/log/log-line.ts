import type { LogRecord } from '../bidlog/records';
import { wellFormedJson, wellFormedJsonBytes } from '../bidlog/well-formed';

/** The record types, quoted once. */
const QUOTED_TYPE: Record<string, string> = {
  request: '"request"',
  response: '"response"',
  win: '"win"',
  bill: '"bill"',
  loss: '"loss"',
  imp: '"imp"',
  click: '"click"',
};

/** `,"<key>":` per field name, built once per name (records use a handful of names). */
const fieldPrefix = new Map<string, string>();
function prefix(key: string): string {
  let p = fieldPrefix.get(key);
  if (p === undefined) {
    p = ',' + JSON.stringify(key) + ':';
    if (fieldPrefix.size < 1024) fieldPrefix.set(key, p);
  }
  return p;
}

/**
 * An already-serialized JSON text to embed under `key`: the raw bid request body, our response.
 * As a string (`json`) or, cheaper when the caller holds them anyway, as its UTF-8 bytes (`bytes`),
 * which the log copies without encoding anything.
 */
export type RawJson =
  | {
      readonly key: string;
      readonly json: string;
      readonly bytes?: undefined;
      /** The caller knows the text holds no CR or LF (it serialized it, or scanned the bytes it came from). */
      readonly singleLine?: boolean;
    }
  | {
      readonly key: string;
      readonly json?: undefined;
      readonly bytes: Uint8Array;
      /** As above; when not true, the copied bytes are scanned for CR and LF. */
      readonly singleLine?: boolean;
    };

/**
 * The start of one NDJSON line, `{"ts":…,"type":…,"worker":…,"host":…,"name":…` followed by the record's
 * other fields, and `,"<raw.key>":` when a raw JSON text follows. The caller appends the raw text
 * (see `rawText`) and `}\n`. Built by string concatenation: one JSON.stringify per non-numeric
 * field value, never of the whole record, never of the raw request (docs/architecture.md);
 * about twice as fast as JSON.stringify of the record (bench/RESULTS-log.md).
 * The record's own `ts`/`worker`/`host` (the service writes those) are skipped, as are values JSON
 * leaves out (undefined, functions, symbols). Throws only if a value cannot be serialized
 * (BigInt, cycle); the service catches that.
 */
export function lineHead<R extends { readonly type: string; readonly name?: unknown }>(ts: number, workerJson: string, hostJson: string, record: R, rawKey: string | null): string {
  const type = record.type;
  let s =
    '{"ts":' +
    ts +
    ',"type":' +
    (QUOTED_TYPE[type] ?? JSON.stringify(type)) +
    ',"worker":' +
    workerJson +
    ',"host":' +
    hostJson +
    ',"name":' +
    (typeof record.name === 'string' ? JSON.stringify(record.name) : 'null');
  for (const k in record) {
    if (k === 'type' || k === 'name' || k === 'ts' || k === 'worker' || k === 'host') continue;
    const v: unknown = (record as Readonly<Record<string, unknown>>)[k];
    const t = typeof v;
    if (t === 'number') s += prefix(k) + (Number.isFinite(v) ? String(v) : 'null');
    else if (t !== 'undefined' && t !== 'function' && t !== 'symbol') s += prefix(k) + JSON.stringify(v);
  }
  if (rawKey !== null) s += prefix(rawKey);
  return s;
}

/**
 * The raw JSON text made single-line. A JSON text may hold CR/LF only as whitespace between tokens
 * (inside strings they must be escaped, RFC 8259 §7), so replacing them by spaces keeps it
 * equivalent. Two native scans in the common case (no line breaks), no copy.
 */
export function rawText(json: string): string {
  if (json.length === 0) return 'null';
  if (json.indexOf('\n') === -1 && json.indexOf('\r') === -1) return json;
  return json.replace(/[\r\n]/g, ' ');
}

/** One NDJSON line in the parts the log buffer writes: `head`, then `tail` (or `null` for an empty text), then `after`, then `}\n`. */
export interface LineParts {
  readonly head: string;
  readonly tail: string | Uint8Array | null;
  /** The bytes of `tail` may hold CR or LF (the buffer makes them spaces). */
  readonly lineBreaks: boolean;
  /** Members already serialized (`,"key":value…`) that end the record. */
  readonly after: string;
}

/**
 * The line of one record as `LogService.log()` writes it (see lineHead, rawText). Every string it
 * keeps is made well-formed (an escaped lone surrogate becomes U+FFFD: well-formed.ts), so the line
 * is well-formed UTF-8 JSON whatever the request carried. Never throws: a record with a value JSON
 * cannot hold (BigInt, cycle) becomes its identity and `error`.
 */
export function lineParts(ts: number, workerJson: string, hostJson: string, record: LogRecord, raw?: RawJson, fields = ''): LineParts {
  try {
    const head = wellFormedJson(lineHead(ts, workerJson, hostJson, record, raw ? raw.key : null));
    // Written after the raw text, so that they are copied into the log once, never joined to the head.
    const after = wellFormedJson(fields);
    if (raw === undefined) return { head, tail: null, lineBreaks: false, after };
    if (raw.bytes !== undefined) return { head, tail: wellFormedJsonBytes(raw.bytes), lineBreaks: raw.singleLine !== true, after };
    return { head, tail: wellFormedJson(raw.singleLine === true ? raw.json : rawText(raw.json)), lineBreaks: false, after };
  } catch {
    const failed = { type: record.type, id: String(record.id), name: String(record.name), error: 'unserializable record' };
    return { head: wellFormedJson(lineHead(ts, workerJson, hostJson, failed, null)), tail: null, lineBreaks: false, after: '' };
  }
}

/** The whole line of `lineParts` as text (tests, tools): what the log buffer writes, decoded. */
export function lineText(p: LineParts): string {
  const tail = p.tail === null ? '' : typeof p.tail === 'string' ? (p.tail.length === 0 ? 'null' : p.tail) : Buffer.from(p.tail).toString('utf8');
  return `${p.head}${tail}${p.after}}\n`;
}

/**
 * Members already serialized (`,"key":value…`) held as UTF-8 bytes: `buf[0, length)`, well-formed
 * (src/bidlog/compact.ts writes them so). Copied into the log as they are.
 */
export interface FieldBytes {
  readonly buf: Uint8Array;
  readonly length: number;
}

/** `,"<key>":` per field name as UTF-8 bytes, made once per name (as `prefix` above). */
const prefixBytes = new Map<string, Uint8Array>();
function prefixOf(key: string): Uint8Array {
  let p = prefixBytes.get(key);
  if (p === undefined) {
    p = Buffer.from(wellFormedJson(prefix(key)), 'utf8');
    if (prefixBytes.size < 1024) prefixBytes.set(key, p);
  }
  return p;
}

const QUOTED_TYPE_BYTES = new Map<string, Uint8Array>(Object.entries(QUOTED_TYPE).map(([k, v]) => [k, Buffer.from(v)]));
const TS = Buffer.from('{"ts":');
const TYPE = Buffer.from(',"type":');
const WORKER = Buffer.from(',"worker":');
const HOST = Buffer.from(',"host":');
const NAME = Buffer.from(',"name":');
const NULL = Buffer.from('null');
const TRUE = Buffer.from('true');
const FALSE = Buffer.from('false');
/** The most bytes a number takes as JSON (`-1.7976931348623157e+308`). */
const NUMBER_MAX = 25;

function copy(src: Uint8Array, dst: Uint8Array, at: number): number {
  for (let i = 0; i < src.length; i++) dst[at + i] = src[i];
  return at + src.length;
}

/** Digits of a non-negative integer below 1e15 at `at`; returns the end. */
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

/**
 * A number as JSON.stringify writes it. Integers and thousandths (the records' `ms`) are written
 * digit by digit: a decimal of at most 15 significant digits is the shortest text of the double
 * nearest to it, which is what String() writes; anything else goes through String().
 */
function writeNumber(v: number, dst: Uint8Array, at: number): number {
  if (!Number.isFinite(v)) return copy(NULL, dst, at);
  let p = at;
  // -0 is not below 0: written `0`, as JSON.stringify writes it.
  const a = v < 0 ? -v : v;
  if (v < 0) dst[p++] = 0x2d;
  if (a < 1e15 && Number.isInteger(a)) return digits(a, dst, p);
  if (a < 1e12) {
    const k = Math.round(a * 1000);
    if (k / 1000 === a) {
      const whole = Math.floor(k / 1000);
      let frac = k - whole * 1000;
      p = digits(whole, dst, p);
      dst[p++] = 0x2e;
      for (let div = 100; frac !== 0; div /= 10) {
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

/**
 * A string as JSON.stringify writes it, made well-formed (well-formed.ts). Printable ASCII is
 * written byte by byte; text that needs no escaping as UTF-8; anything else (quotes, backslashes,
 * control characters, lone surrogates) through JSON.stringify and wellFormedJson.
 */
function writeString(s: string, dst: Buffer, at: number): number {
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

/**
 * The head of `lineHead` written as UTF-8 bytes straight into the log's buffer, with no string made
 * (the same bytes as `wellFormedJson(lineHead(…))`, test/log/log-line.unit.spec.ts compares them).
 * `measure` first: the most bytes the head can take, or -1 for a record holding a value other than
 * a string, number, boolean or null (an object, a BigInt), which takes the text path (`lineParts`).
 */
export const headBytes = {
  measure(record: LogRecord, rawKey: string | null): number {
    let n = 64 + (typeof record.name === 'string' ? 6 * record.name.length : 4);
    for (const k in record) {
      const v: unknown = (record as unknown as Readonly<Record<string, unknown>>)[k];
      const t = typeof v;
      if (t === 'string') n += 6 * (v as string).length + 2;
      else if (t === 'number' || t === 'boolean' || v === null) n += NUMBER_MAX;
      else if (t !== 'undefined' && t !== 'function' && t !== 'symbol') return -1;
      n += 6 * k.length + 4;
    }
    return rawKey === null ? n : n + 6 * rawKey.length + 4;
  },

  /** Writes the head at `at` (room for `measure`'s bytes is there); returns where it ends. */
  write(dst: Buffer, at: number, ts: number, worker: Uint8Array, host: Uint8Array, record: LogRecord, rawKey: string | null): number {
    const type = record.type;
    let p = copy(TS, dst, at);
    p = writeNumber(ts, dst, p);
    p = copy(TYPE, dst, p);
    const quoted = QUOTED_TYPE_BYTES.get(type);
    p = quoted !== undefined ? copy(quoted, dst, p) : writeString(type, dst, p);
    p = copy(WORKER, dst, p);
    p = copy(worker, dst, p);
    p = copy(HOST, dst, p);
    p = copy(host, dst, p);
    p = copy(NAME, dst, p);
    p = typeof record.name === 'string' ? writeString(record.name, dst, p) : copy(NULL, dst, p);
    for (const k in record) {
      if (k === 'type' || k === 'name' || k === 'ts' || k === 'worker' || k === 'host') continue;
      const v: unknown = (record as unknown as Readonly<Record<string, unknown>>)[k];
      const t = typeof v;
      if (t === 'undefined' || t === 'function' || t === 'symbol') continue;
      p = copy(prefixOf(k), dst, p);
      if (t === 'string') p = writeString(v as string, dst, p);
      else if (t === 'number') p = writeNumber(v as number, dst, p);
      else p = copy(v === true ? TRUE : v === false ? FALSE : NULL, dst, p);
    }
    if (rawKey !== null) p = copy(prefixOf(rawKey), dst, p);
    return p;
  },
};
