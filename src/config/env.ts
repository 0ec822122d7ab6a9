import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';

/** The environment, or a test's stand-in for it. */
export type Env = Record<string, string | undefined>;

const TRUE = new Set(['1', 'true', 'yes', 'on']);
const FALSE = new Set(['0', 'false', 'no', 'off']);

/** A variable's text, trimmed; undefined when unset or blank. */
function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

/** The text as the schema's type (whole number, decimal number, boolean, text); undefined when it is none. */
function convert(schema: TSchema, text: string): unknown {
  switch (schema.type) {
    case 'integer':
      return /^\d+$/.test(text) ? Number(text) : undefined;
    case 'number':
      return /^(\d+(\.\d*)?|\.\d+)$/.test(text) ? Number(text) : undefined;
    case 'boolean': {
      const l = text.toLowerCase();
      return TRUE.has(l) ? true : FALSE.has(l) ? false : undefined;
    }
    default:
      return text;
  }
}

/** What the schema accepts, in words: the problem's text for a value it refuses. */
function expected(schema: TSchema, converted: unknown): string {
  if (schema.type === 'integer' || schema.type === 'number') {
    if (converted === undefined) return schema.type === 'integer' ? 'expected a whole number' : 'expected a number';
    return `expected a number from ${String(schema.minimum)} to ${String(schema.maximum)}`;
  }
  if (schema.type === 'boolean') return 'expected true or false';
  if (Array.isArray(schema.anyOf)) return `expected one of ${(schema.anyOf as TSchema[]).map((s) => String(s.const)).join(', ')}`;
  return `expected ${String(schema.description ?? 'a valid value')}`;
}

/**
 * One variable read as its schema says: unset or blank gives the schema's `default` (undefined
 * when it has none); a value the schema refuses (TypeBox's check: type, bounds, pattern, literals)
 * adds one problem naming the variable and gives the default.
 */
export function readVar<T extends TSchema>(env: Env, name: string, schema: T, problems: string[]): Static<T> {
  const text = raw(env, name);
  if (text === undefined) return schema.default as Static<T>;
  const value = convert(schema, text);
  if (value !== undefined && Value.Check(schema, value)) return value;
  // A whole number out of bounds is shown as written; anything else quoted.
  const shown = schema.type === 'integer' && value !== undefined ? text : JSON.stringify(text);
  problems.push(`${name}=${shown}: ${expected(schema, value)}`);
  return schema.default as Static<T>;
}

/** Every variable of an object schema (property name = variable name), each read by readVar. */
export function readEnv<T extends TObject>(env: Env, schema: T, problems: string[]): Static<T> {
  const out: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(schema.properties)) out[name] = readVar(env, name, prop, problems);
  return out;
}

/** A whole number variable: its default and bounds. */
export const Int = (def: number | undefined, minimum: number, maximum: number, description?: string) =>
  Type.Integer({ default: def, minimum, maximum, description });

/** A boolean variable (1/0, true/false, yes/no, on/off, any case). */
export const Bool = (def: boolean, description?: string) => Type.Boolean({ default: def, description });

/** A text variable (trimmed). */
export const Str = (def: string | undefined, description?: string) => Type.String({ default: def, description });

/** One of a few words. */
export const OneOf = <T extends string>(values: readonly T[], def: T | undefined, description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { default: def, description },
  );

/**
 * Reads typed values from the environment one call at a time, collecting every problem: for what
 * is read beside a schema (the shipper's settings, src/shipper/shipper.config.ts; Redis's address,
 * shared by every process). Each call is readVar with the schema its arguments describe.
 */
export class Reader {
  readonly problems: string[] = [];
  constructor(readonly env: Env) {}

  str(name: string, def: string): string {
    return readVar(this.env, name, Str(def), this.problems);
  }

  int(name: string, def: number, min: number, max: number): number {
    return readVar(this.env, name, Int(def, min, max), this.problems);
  }

  bool(name: string, def: boolean): boolean {
    return readVar(this.env, name, Bool(def), this.problems);
  }

  oneOf<T extends string>(name: string, def: T, values: readonly T[]): T {
    return readVar(this.env, name, OneOf(values, def), this.problems);
  }

  /** A URL with one of `protocols` (default `def`); see checkUrl. */
  url(name: string, def: string, protocols: readonly string[], hidePath = false): string {
    const v = this.str(name, def);
    checkUrl(this.problems, name, v, protocols, hidePath);
    return v;
  }

  /** A problem found by a check across variables. */
  problem(text: string): void {
    this.problems.push(text);
  }
}

/**
 * A URL with one of `protocols`; a problem otherwise, showing only its scheme and host when
 * `hidePath` (a rates service's API key may be in the path or query) and never its password.
 */
export function checkUrl(problems: string[], name: string, value: string, protocols: readonly string[], hidePath = false): void {
  try {
    if (protocols.includes(new URL(value).protocol)) return;
  } catch {
    // reported below
  }
  const shown = hidePath ? hideUserinfo(value).replace(/^([^/]*\/\/[^/?#]*).+$/, '$1/…') : hideUserinfo(value);
  problems.push(`${name}=${JSON.stringify(shown)}: expected a ${protocols.join(' or ')} URL`);
}

/**
 * A URL-like text with whatever stands between `//` and the last `@` (a user and password) replaced by
 * `***`: for messages, which must never carry a password (REDIS_URL's, a rates service's).
 */
export function hideUserinfo(text: string): string {
  // Up to the last @: a password with an unencoded @ (or /) is hidden whole; a path with an @ in it
  // is hidden too, which a message can afford.
  return text.replace(/^([^/@]*\/\/)?.*@/, (_m, scheme: string | undefined) => `${scheme ?? ''}***@`);
}
