/**
 * Personal data removed from a parsed bid request before it is written to the bid log, unless the
 * caller may keep it raw (the request's decision has `consent` and LOG_RAW_PII=true: the caller
 * decides and passes one boolean).
 *
 * | field | kept as |
 * |---|---|
 * | `device.ip` | IPv4 truncated to /24 (`a.b.c.0`); an IPv6 there is treated as `device.ipv6` |
 * | `device.ipv6` | truncated to /48 (`2001:db8:85a3::`); an IPv4-mapped one (`::ffff:a.b.c.d`) to the IPv4's /24 |
 * | `device.ifa`, `user.id`, `user.buyeruid` | the keyed hash (PiiHasher), so logs, caps and tracking still join per user |
 * | `device.didsha1`, `didmd5`, `dpidsha1`, `dpidmd5`, `macsha1`, `macmd5` (OpenRTB 2.5 hardware ids) | the keyed hash: an unkeyed hash of a device id is still the id |
 * | `user.data`, `user.eids`, `user.ext.eids`, `user.customdata` | dropped (third-party segments and ids) |
 * | `device.geo`, `user.geo` `lat`/`lon` | rounded to 2 decimals (~1 km), as Prebid Server does for lmt/COPPA; TCF treats precise geolocation (special feature 1) as personal data |
 *
 * A value of the wrong type, or an address that is not one, is dropped: what cannot be truncated
 * cannot be kept. A field is dropped by setting it to `undefined` (JSON.stringify leaves it out),
 * not by `delete`: deleting turned the request's objects into slow dictionaries, and the bid path
 * cost 4.8–6.3 µs more per request over HTTP (bench/ab-http.js, three runs, bench/README.md).
 * Everything else (user agent, country, city, zip) is kept: coarse and needed to explain targeting
 * decisions.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { PiiHasher } from './pii-hasher';

export interface RedactOptions {
  /** True when the request's personal data may be logged as sent (consent and LOG_RAW_PII=true). */
  readonly keepRawPii: boolean;
}

type Obj = Record<string, unknown>;

function obj(v: unknown): Obj | null {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : null;
}

/** `a.b.c.d` → `a.b.c.0`; the input must be a valid IPv4 (node:net's isIPv4). */
function ipv4Prefix24(ip: string): string {
  return `${ip.slice(0, ip.lastIndexOf('.'))}.0`;
}

function hexDigit(c: number): number {
  return c <= 0x39 ? c - 0x30 : (c | 0x20) - 0x57;
}

/**
 * The 8 groups of a valid IPv6 (node:net's isIPv6 said so, which keeps this parser simple): zone
 * removed, an embedded dotted IPv4 read as the last two groups, `::` expanded. One pass over the
 * characters (splitting on `:` cost ~1 µs per address).
 */
function ipv6Groups(ip: string): number[] {
  const zone = ip.indexOf('%');
  const end = zone === -1 ? ip.length : zone;
  const seen: number[] = [];
  let gap = -1;
  let i = 0;
  if (ip.charCodeAt(0) === 0x3a && ip.charCodeAt(1) === 0x3a) {
    gap = 0;
    i = 2;
  }
  while (i < end) {
    let j = i;
    let v = 0;
    let dotted = false;
    for (; j < end; j++) {
      const c = ip.charCodeAt(j);
      if (c === 0x3a) break;
      if (c === 0x2e) dotted = true;
      else v = v * 16 + hexDigit(c);
    }
    if (dotted) {
      const o = ip.slice(i, j).split('.');
      seen.push((Number(o[0]) << 8) | Number(o[1]), (Number(o[2]) << 8) | Number(o[3]));
    } else {
      seen.push(v);
    }
    if (j < end && ip.charCodeAt(j + 1) === 0x3a) {
      gap = seen.length;
      j++;
    }
    i = j + 1;
  }
  if (gap === -1) return seen;
  const out = [0, 0, 0, 0, 0, 0, 0, 0];
  for (let k = 0; k < gap; k++) out[k] = seen[k];
  const tail = seen.length - gap;
  for (let k = 0; k < tail; k++) out[8 - tail + k] = seen[gap + k];
  return out;
}

/** RFC 5952 text of 8 groups: lower-case hex, the longest run (first on a tie) of two or more zero groups as `::`. */
function formatIpv6(g: readonly number[]): string {
  let bestAt = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (g[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (from: number, to: number): string => g.slice(from, to).map((x) => x.toString(16)).join(':');
  if (bestAt === -1) return hex(0, 8);
  return `${hex(0, bestAt)}::${hex(bestAt + bestLen, 8)}`;
}

/**
 * An IP address with its host part removed: IPv4 to /24, IPv6 to /48, IPv4-mapped IPv6 to the
 * IPv4's /24 (written `::ffff:a.b.c.0`); null when `ip` is not an address.
 */
export function truncateIp(ip: unknown): string | null {
  if (typeof ip !== 'string') return null;
  if (isIPv4(ip)) return ipv4Prefix24(ip);
  if (!isIPv6(ip)) return null;
  const g = ipv6Groups(ip);
  if (g[0] === 0 && g[1] === 0 && g[2] === 0 && g[3] === 0 && g[4] === 0 && g[5] === 0xffff) {
    return `::ffff:${g[6] >>> 8}.${g[6] & 0xff}.${g[7] >>> 8}.0`;
  }
  return formatIpv6([g[0], g[1], g[2], 0, 0, 0, 0, 0]);
}

const HASHED_DEVICE_IDS = ['ifa', 'didsha1', 'didmd5', 'dpidsha1', 'dpidmd5', 'macsha1', 'macmd5'] as const;
const HASHED_USER_IDS = ['id', 'buyeruid'] as const;
const DROPPED_USER_FIELDS = ['data', 'eids', 'customdata'] as const;

/** Replaces `o[key]` by its keyed hash; drops it when it is not a string or number. Returns true when it changed `o`. */
function hashField(o: Obj, key: string, hasher: PiiHasher): boolean {
  const v = o[key];
  if (v === undefined) return false;
  if (typeof v === 'string' && v !== '') o[key] = hasher.hash(v);
  else if (typeof v === 'number' && Number.isFinite(v)) o[key] = hasher.hash(String(v));
  else o[key] = undefined;
  return true;
}

function dropField(o: Obj, key: string): boolean {
  if (o[key] === undefined) return false;
  o[key] = undefined;
  return true;
}

function roundCoord(geo: Obj, key: 'lat' | 'lon'): boolean {
  const v = geo[key];
  if (v === undefined) return false;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
  if (Number.isFinite(n)) {
    const r = Math.round(n * 100) / 100;
    if (r === v) return false;
    geo[key] = r;
  } else {
    geo[key] = undefined;
  }
  return true;
}

function roundGeo(geo: Obj | null): boolean {
  if (geo === null) return false;
  const lat = roundCoord(geo, 'lat');
  const lon = roundCoord(geo, 'lon');
  return lat || lon;
}

function ipField(device: Obj, key: 'ip' | 'ipv6'): boolean {
  const v = device[key];
  if (v === undefined) return false;
  const t = truncateIp(v);
  if (t === v) return false;
  if (t === null) device[key] = undefined;
  else device[key] = t;
  return true;
}

/**
 * Removes the personal data of a parsed bid request in place (see the table above), unless
 * `opts.keepRawPii`. Accepts any value (a non-object has nothing to remove) and never throws.
 * Returns true when it changed something: only then must the caller serialize the object again
 * instead of logging the bytes it received.
 */
export function redactRequest(body: unknown, hasher: PiiHasher, opts: RedactOptions): boolean {
  if (opts.keepRawPii) return false;
  const b = obj(body);
  if (b === null) return false;
  let changed = false;
  const device = obj(b.device);
  if (device !== null) {
    if (ipField(device, 'ip')) changed = true;
    if (ipField(device, 'ipv6')) changed = true;
    for (const k of HASHED_DEVICE_IDS) if (hashField(device, k, hasher)) changed = true;
    if (roundGeo(obj(device.geo))) changed = true;
  }
  const user = obj(b.user);
  if (user !== null) {
    for (const k of HASHED_USER_IDS) if (hashField(user, k, hasher)) changed = true;
    for (const k of DROPPED_USER_FIELDS) if (dropField(user, k)) changed = true;
    const ext = obj(user.ext);
    if (ext !== null && dropField(ext, 'eids')) changed = true;
    if (roundGeo(obj(user.geo))) changed = true;
  }
  return changed;
}
