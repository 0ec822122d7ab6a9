import type { LogRecord } from './log.types';

/** Fields the log service writes itself, first and in this order; a record's own copies are skipped. */
const OWN_FIELDS = new Set(['ts', 'type', 'worker', 'name']);

/** An already-serialized JSON text to embed under `key` (the raw bid request body). */
export interface RawJson {
  readonly key: string;
  readonly json: string;
}

/**
 * The start of one NDJSON line, `{"ts":…,"type":…,"worker":…,"name":…` followed by the record's
 * other fields, and `,"<raw.key>":` when a raw JSON text follows. The caller appends the raw text
 * (see `rawText`) and `}\n`. Built by string concatenation: one JSON.stringify per field value,
 * never of the whole record, and never of the raw request (INTERFACE.md, ARCHITECTURE.md "Log encoding").
 * Throws only if a field value cannot be serialized (BigInt, cycle); the service catches that.
 */
export function lineHead(ts: number, workerJson: string, record: LogRecord, rawKey: string | null): string {
  let s = '{"ts":' + ts + ',"type":' + JSON.stringify(record.type) + ',"worker":' + workerJson + ',"name":';
  s += typeof record.name === 'string' ? JSON.stringify(record.name) : 'null';
  for (const k in record) {
    if (OWN_FIELDS.has(k)) continue;
    const v: unknown = record[k];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    s += ',' + JSON.stringify(k) + ':' + JSON.stringify(v);
  }
  if (rawKey !== null) s += ',' + JSON.stringify(rawKey) + ':';
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
