import type { LogRecord } from '../bidlog/records';
import { copyBytes, JSON_BYTES_PER_UNIT, writeJsonString, writeNumber } from '../bidlog/json-bytes';

export type { FieldBytes } from '../bidlog/json-bytes';
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
      if (t === 'string') n += JSON_BYTES_PER_UNIT * (v as string).length + 2;
      else if (t === 'number' || t === 'boolean' || v === null) n += NUMBER_MAX;
      else if (t !== 'undefined' && t !== 'function' && t !== 'symbol') return -1;
      n += 6 * k.length + 4;
    }
    return rawKey === null ? n : n + 6 * rawKey.length + 4;
  },

  /** Writes the head at `at` (room for `measure`'s bytes is there); returns where it ends. */
  write(dst: Buffer, at: number, ts: number, worker: Uint8Array, host: Uint8Array, record: LogRecord, rawKey: string | null): number {
    const type = record.type;
    let p = copyBytes(TS, dst, at);
    p = writeNumber(ts, dst, p);
    p = copyBytes(TYPE, dst, p);
    const quoted = QUOTED_TYPE_BYTES.get(type);
    p = quoted !== undefined ? copyBytes(quoted, dst, p) : writeJsonString(type, dst, p);
    p = copyBytes(WORKER, dst, p);
    p = copyBytes(worker, dst, p);
    p = copyBytes(HOST, dst, p);
    p = copyBytes(host, dst, p);
    p = copyBytes(NAME, dst, p);
    p = typeof record.name === 'string' ? writeJsonString(record.name, dst, p) : copyBytes(NULL, dst, p);
    for (const k in record) {
      if (k === 'type' || k === 'name' || k === 'ts' || k === 'worker' || k === 'host') continue;
      const v: unknown = (record as unknown as Readonly<Record<string, unknown>>)[k];
      const t = typeof v;
      if (t === 'undefined' || t === 'function' || t === 'symbol') continue;
      p = copyBytes(prefixOf(k), dst, p);
      if (t === 'string') p = writeJsonString(v as string, dst, p);
      else if (t === 'number') p = writeNumber(v as number, dst, p);
      else p = copyBytes(v === true ? TRUE : v === false ? FALSE : NULL, dst, p);
    }
    if (rawKey !== null) p = copyBytes(prefixOf(rawKey), dst, p);
    return p;
  },
};
