/**
 * Field readers shared by the bid request reader (parse.ts) and the native request reader
 * (native.ts): each reads one field leniently (OpenRTB 2.6 §2.6: numbers as strings, booleans as
 * 0/1) and throws InvalidRequestError, naming the field, for what no coercion can fix.
 */
import { REQUEST_LIMITS as L } from './limits';

/** A client error: the request is answered 400 with `reason`. */
export class InvalidRequestError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidRequestError';
  }
}

export type Obj = Record<string, unknown>;

export const EMPTY: readonly never[] = Object.freeze([]);

export function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function fail(path: string, what: string): never {
  throw new InvalidRequestError(`${path} ${what}`);
}

/** Past a limit of REQUEST_LIMITS: `<field>: at most <n> <unit>`. */
export function overLimit(field: string, n: number, unit: string): never {
  throw new InvalidRequestError(`${field}: at most ${n} ${unit}`);
}

/** Object or absent; anything else is a 400. */
export function optObj(o: Obj, key: string, path: string): Obj | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (!isObj(v)) fail(`${path}.${key}`, 'must be an object');
  return v;
}

/** A number, or a string holding one; absent → def. */
export function num(o: Obj, key: string, path: string, def: number): number {
  const v = o[key];
  if (v === undefined || v === null || v === '') return def;
  if (typeof v === 'number') {
    if (Number.isFinite(v)) return v;
  } else if (typeof v === 'string') {
    const n = Number(v);
    if (Number.isFinite(n)) return n;
  } else if (typeof v === 'boolean') {
    return v ? 1 : 0;
  }
  return fail(`${path}.${key}`, 'must be a number');
}

/** A non-negative number (floors, sizes, durations). */
export function nonNeg(o: Obj, key: string, path: string, def: number): number {
  const n = num(o, key, path, def);
  if (n < 0) fail(`${path}.${key}`, 'must not be negative');
  return n;
}

/** 0/1, true/false, "1"/"0"/"true"/"false". */
export function flag(o: Obj, key: string, path: string): boolean {
  const v = o[key];
  if (v === undefined || v === null) return false;
  if (v === true || v === 1 || v === '1' || v === 'true') return true;
  if (v === false || v === 0 || v === '0' || v === 'false' || v === '') return false;
  return fail(`${path}.${key}`, 'must be 0 or 1');
}

/** A string, or a number used as an id; absent → def. */
export function str(o: Obj, key: string, path: string, def: string): string {
  const v = o[key];
  if (v === undefined || v === null) return def;
  if (typeof v === 'string') {
    if (v.length > L.idChars) overLimit(`${path}.${key}`, L.idChars, 'characters');
    return v;
  }
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return fail(`${path}.${key}`, 'must be a string');
}

/** An array of strings (a lone string counts as a one-element array), at most `max` entries. */
export function strList(o: Obj, key: string, path: string, lower: boolean, max: number = L.listEntries): readonly string[] {
  const v = o[key];
  if (v === undefined || v === null) return EMPTY;
  if (typeof v === 'string') {
    if (v.length > L.idChars) overLimit(`${path}.${key}`, L.idChars, 'characters');
    return v === '' ? EMPTY : [lower ? v.toLowerCase() : v];
  }
  if (!Array.isArray(v)) fail(`${path}.${key}`, 'must be an array of strings');
  if (v.length === 0) return EMPTY;
  if (v.length > max) overLimit(`${path}.${key}`, max, 'entries');
  const out: string[] = [];
  for (let i = 0; i < v.length; i++) {
    const s: unknown = v[i];
    if (typeof s === 'string') {
      if (s.length > L.idChars) overLimit(`${path}.${key}[${i}]`, L.idChars, 'characters');
      out.push(lower ? s.toLowerCase() : s);
    }
    else if (typeof s === 'number') out.push(String(s));
    else if (s !== null) fail(`${path}.${key}[${i}]`, 'must be a string');
  }
  return out;
}

/** An array of integers (numbers or numeric strings; a lone number counts as one element), at most `max` entries. */
export function intList(o: Obj, key: string, path: string, max: number = L.smallList): readonly number[] {
  const v = o[key];
  if (v === undefined || v === null) return EMPTY;
  if (typeof v === 'number' || typeof v === 'string') return [num(o, key, path, 0)];
  if (!Array.isArray(v)) fail(`${path}.${key}`, 'must be an array of numbers');
  if (v.length === 0) return EMPTY;
  if (v.length > max) overLimit(`${path}.${key}`, max, 'entries');
  const out: number[] = [];
  for (let i = 0; i < v.length; i++) {
    const x: unknown = v[i];
    const n = typeof x === 'number' ? x : typeof x === 'string' ? Number(x) : NaN;
    if (!Number.isFinite(n)) fail(`${path}.${key}[${i}]`, 'must be a number');
    out.push(n);
  }
  return out;
}

/** An array of at most `max` entries. */
export function arr(o: Obj, key: string, path: string, max: number): readonly unknown[] {
  const v = o[key];
  if (v === undefined || v === null) return EMPTY;
  if (!Array.isArray(v)) fail(`${path}.${key}`, 'must be an array');
  if (v.length > max) overLimit(`${path}.${key}`, max, 'entries');
  return v;
}

/** A size in pixels: not negative, at most REQUEST_LIMITS.pixels (so that size keys stay unique). */
export function px(o: Obj, key: string, path: string): number {
  const n = nonNeg(o, key, path, 0);
  if (n > L.pixels) overLimit(`${path}.${key}`, L.pixels, 'pixels');
  return n;
}
