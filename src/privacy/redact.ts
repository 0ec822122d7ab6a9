/**
 * The bid request as the bid log keeps it (requestLogJson): an allowlist of what the log may keep,
 * with the personal fields on it reduced, unless the caller may keep the request raw (the request's
 * decision has `consent` and LOG_RAW_PII=true: the caller decides and passes one boolean).
 *
 * | field | kept as |
 * |---|---|
 * | `device.ip` | IPv4 truncated to /24 (`a.b.c.0`); an IPv6 there is treated as `device.ipv6` |
 * | `device.ipv6` | truncated to /48 (`2001:db8:85a3::`); an IPv4-mapped one (`::ffff:a.b.c.d`) to the IPv4's /24 |
 * | `device.ifa`, `user.id`, `user.buyeruid` | the keyed hash (PiiHasher), so logs, caps and tracking still join per user |
 * | `device.didsha1`, `didmd5`, `dpidsha1`, `dpidmd5`, `macsha1`, `macmd5` (OpenRTB 2.5 hardware ids) | the keyed hash: an unkeyed hash of a device id is still the id |
 * | `device.geo`, `user.geo` `lat`/`lon` | rounded to 2 decimals (~1 km), as Prebid Server does for lmt/COPPA; TCF treats precise geolocation (special feature 1) as personal data |
 * | `site.page`, `site.ref`, `content.url` | without the query string and fragment: a page's parameters may carry an e-mail, a search or a session token |
 * | anything not on the allowlist (`user.data`, `user.eids`, `user.customdata`, every `ext` member not named, ...) | left out |
 *
 * A value of the wrong type, or an address that is not one, is left out: what cannot be truncated
 * cannot be kept. Everything else on the list (user agent, country, city, zip, the consent strings)
 * is kept as sent: coarse, and needed to explain targeting decisions. docs/privacy.md has the list.
 */
import { isIPv4, isIPv6 } from 'node:net';
import type { PiiHasher } from './pii-hasher';

export interface RedactOptions {
  /** True when the request's personal data may be logged as sent (consent and LOG_RAW_PII=true). */
  readonly keepRawPii: boolean;
}

type Obj = Record<string, unknown>;

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

// ------------------------------------------------------------------------------------------------
// The request record of the bid log: an allowlist of what the log may keep.

/** How the log keeps one field of the request. */
const enum Keep {
  /** A string, number, boolean or null, or an array of those; anything else is dropped. */
  Value,
  /** The whole value as sent: objects that describe inventory, never a person (imp.banner, source.schain, ...). */
  Whole,
  /** An id: its keyed hash (a string or finite number), else dropped. */
  Hash,
  /** An IP address: truncated (truncateIp), else dropped. */
  Ip,
  /** A latitude or longitude: rounded to 2 decimals, else dropped. */
  Coord,
  /** A page or referrer URL: without its query string and fragment (they may carry an e-mail or a token), else dropped. */
  Url,
}

/** A field: how to keep it, or the allowlist of an object (Fields) or of each object of an array ([Fields]). */
type Rule = Keep | Fields | readonly [Fields];
/** An object's allowlist: a class instance, so that `rule instanceof FieldRules` tells it from the rest. */
class FieldRules {
  constructor(readonly byName: Readonly<Record<string, Rule | undefined>>) {}
}
type Fields = FieldRules;

function fields(spec: Record<string, Rule>): Fields {
  return new FieldRules(Object.assign(Object.create(null) as Record<string, Rule>, spec));
}

const V = Keep.Value;
const WHOLE = Keep.Whole;
const PAGE_URL = Keep.Url;

const GEO = fields({ lat: Keep.Coord, lon: Keep.Coord, type: V, accuracy: V, lastfix: V, ipservice: V, country: V, region: V, regionfips104: V, metro: V, city: V, zip: V, utcoffset: V });
const PUBLISHER = fields({ id: V, name: V, cattax: V, cat: V, domain: V });
const PRODUCER = PUBLISHER;
const CONTENT = fields({
  id: V, episode: V, title: V, series: V, season: V, artist: V, genre: V, gtax: V, genres: V, album: V, isrc: V, producer: PRODUCER, url: PAGE_URL,
  cattax: V, cat: V, prodq: V, videoquality: V, context: V, contentrating: V, userrating: V, qagmediarating: V, keywords: V, kwarray: V,
  livestream: V, sourcerelationship: V, len: V, language: V, langb: V, embeddable: V, network: WHOLE, channel: WHOLE,
});
const SITE = fields({
  id: V, name: V, domain: V, cattax: V, cat: V, sectioncat: V, pagecat: V, page: PAGE_URL, ref: PAGE_URL, search: V, mobile: V, privacypolicy: V,
  publisher: PUBLISHER, content: CONTENT, keywords: V, kwarray: V, inventorypartnerdomain: V,
});
const APP = fields({
  id: V, name: V, bundle: V, domain: V, storeurl: V, cattax: V, cat: V, sectioncat: V, pagecat: V, ver: V, privacypolicy: V, paid: V,
  publisher: PUBLISHER, content: CONTENT, keywords: V, kwarray: V, inventorypartnerdomain: V,
});
const DOOH = fields({ id: V, name: V, venuetype: V, venuetypetax: V, publisher: PUBLISHER, domain: V, keywords: V, content: CONTENT });
const DEVICE = fields({
  geo: GEO, dnt: V, lmt: V, ua: V, sua: WHOLE, ip: Keep.Ip, ipv6: Keep.Ip, devicetype: V, make: V, model: V, os: V, osv: V, hwv: V,
  h: V, w: V, ppi: V, pxratio: V, js: V, geofetch: V, flashver: V, language: V, langb: V, carrier: V, mccmnc: V, connectiontype: V,
  ifa: Keep.Hash, didsha1: Keep.Hash, didmd5: Keep.Hash, dpidsha1: Keep.Hash, dpidmd5: Keep.Hash, macsha1: Keep.Hash, macmd5: Keep.Hash,
  // App Tracking Transparency status (0-3): a setting, not an id.
  ext: fields({ atts: V }),
});
const USER = fields({
  id: Keep.Hash, buyeruid: Keep.Hash, yob: V, gender: V, keywords: V, kwarray: V, geo: GEO, consent: V,
  // The TC string: the record of what the user chose (2.5 place).
  ext: fields({ consent: V }),
});
const REGS = fields({ coppa: V, gdpr: V, us_privacy: V, gpp: V, gpp_sid: V, ext: fields({ gdpr: V, us_privacy: V, gpc: V, dsa: WHOLE }) });
const SOURCE = fields({ fd: V, tid: V, pchain: V, schain: WHOLE, ext: fields({ schain: WHOLE }) });
const IMP = fields({
  id: V, metric: WHOLE, banner: WHOLE, video: WHOLE, audio: WHOLE, native: WHOLE, pmp: WHOLE, displaymanager: V, displaymanagerver: V,
  instl: V, tagid: V, bidfloor: V, bidfloorcur: V, clickbrowser: V, secure: V, iframebuster: V, rwdd: V, ssai: V, exp: V, qty: WHOLE,
  dt: V, refresh: WHOLE,
  // The global placement id and transaction id (Prebid): names of the ad slot and the auction.
  ext: fields({ gpid: V, tid: V }),
});
const REQUEST = fields({
  id: V, imp: [IMP], site: SITE, app: APP, dooh: DOOH, device: DEVICE, user: USER, test: V, at: V, tmax: V, wseat: V, bseat: V,
  allimps: V, cur: V, wlang: V, wlangb: V, bcat: V, cattax: V, badv: V, bapp: V, source: SOURCE, regs: REGS,
});

/** What the log keeps of `v` under `rule`: `v` itself when unchanged, undefined when left out. */
function projectField(v: unknown, rule: Rule, hasher: PiiHasher): unknown {
  switch (rule) {
    case Keep.Value:
      if (typeof v === 'object' && v !== null) {
        if (!Array.isArray(v)) return undefined;
        for (let i = 0; i < v.length; i++) {
          const e: unknown = v[i];
          if (typeof e === 'object' && e !== null) return undefined;
        }
      }
      return v;
    case Keep.Whole:
      return v;
    case Keep.Hash:
      if (typeof v === 'string' && v !== '') return hasher.hash(v);
      if (typeof v === 'number' && Number.isFinite(v)) return hasher.hash(String(v));
      return undefined;
    case Keep.Ip:
      return truncateIp(v) ?? undefined;
    case Keep.Coord: {
      const n = typeof v === 'number' ? v : typeof v === 'string' && v !== '' ? Number(v) : NaN;
      return Number.isFinite(n) ? Math.round(n * 100) / 100 : undefined;
    }
    case Keep.Url: {
      if (typeof v !== 'string') return undefined;
      const q = v.indexOf('?');
      const h = v.indexOf('#');
      const end = q < 0 ? h : h < 0 ? q : Math.min(q, h);
      return end < 0 ? v : v.slice(0, end);
    }
  }
  if (rule instanceof FieldRules) return projectObject(v, rule, hasher);
  if (!Array.isArray(v)) return undefined;
  const each = rule[0];
  let out: unknown[] | null = null;
  for (let i = 0; i < v.length; i++) {
    const e = projectObject(v[i], each, hasher);
    if (out === null) {
      if (e === v[i]) continue;
      out = v.slice(0, i);
    }
    if (e !== undefined) out.push(e);
  }
  return out ?? v;
}

/** The fields of `v` its allowlist names, in the request's order: `v` itself when that is all of them, unchanged. */
function projectObject(v: unknown, allow: Fields, hasher: PiiHasher): Obj | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Obj;
  const byName = allow.byName;
  let out: Obj | null = null;
  for (const k in o) {
    const rule = byName[k];
    const p = rule === undefined ? undefined : projectField(o[k], rule, hasher);
    if (out === null) {
      if (p === o[k]) continue;
      out = {};
      for (const j in o) {
        if (j === k) break;
        out[j] = o[j];
      }
    }
    if (p !== undefined) out[k] = p;
  }
  return out ?? o;
}

/**
 * The bid request as the bid log keeps it, as JSON text: only the fields the allowlist above names
 * (OpenRTB 2.6's own fields of each object, and a few named `ext` fields), with the personal ones
 * kept as the table at the top says (IPs truncated, ids hashed, coordinates rounded; `user.data`,
 * `eids` and `customdata` are not on the list). Every other field, any `ext` member not named, and a
 * value of the wrong kind (an object where a number or string belongs) is left out, so whatever an
 * exchange adds (`device.ext.ifv`, `user.ext.tpid`, ...) never reaches the log raw. Built in one
 * pass over the parsed value, which it does not change: an object all of whose fields are kept
 * as they are is used as it is, a copy is made only of the objects that lose or change a field
 * (device and user, usually), and JSON.stringify writes the result once (measured against a
 * serializer written in JavaScript, bench/README.md). With
 * `keepRawPii` (consent and LOG_RAW_PII=true) the request is kept as sent.
 */
export function requestLogJson(body: unknown, hasher: PiiHasher, opts: RedactOptions): string {
  if (opts.keepRawPii) return JSON.stringify(body) ?? 'null';
  return JSON.stringify(projectObject(body, REQUEST, hasher) ?? null);
}

/** What the bidder keeps of a request's identities, made in one place (`pseudonymize`). */
export interface Pseudonymized {
  /** The request record's text (requestLogJson). */
  readonly record: string;
  /** The user as frequency caps and tracking payloads know them: the keyed hash of `userId`, or ''. */
  readonly userKey: string;
}

/**
 * The request record and the user key of one request. `userId` is the typed request's (`user.id`,
 * else `device.ifa`), `userData` whether the privacy decision lets user-level data be used (else the
 * key is ''). The record hashes that same id (unless it is kept raw), and the hasher remembers
 * the ids of the request it just hashed: one MAC per distinct id.
 */
export function pseudonymize(body: unknown, userId: string, userData: boolean, hasher: PiiHasher, opts: RedactOptions): Pseudonymized {
  const record = requestLogJson(body, hasher, opts);
  return { record, userKey: userKey(userId, userData, hasher) };
}

/** The user key alone (`pseudonymize`'s, for a request whose record is not made). */
export function userKey(userId: string, userData: boolean, hasher: PiiHasher): string {
  return userData && userId !== '' ? hasher.hash(userId) : '';
}
