/**
 * Lenient OpenRTB 2.5/2.6 request reader. Exchanges are sloppy (OpenRTB 2.6 §2.6, tolerate unknowns):
 * numbers arrive as strings, booleans as 0/1, `native.request` as a JSON string or an object, with
 * or without the Native 1.0 `{"native": …}` wrapper, unknown fields everywhere. We read only the
 * fields the bidder uses, accept every encoding we can make sense of, and reject (400) only what we
 * cannot bid on: a body that is not an object, no id, no imp, or a field we read that has a type
 * no coercion can fix. A native request we cannot parse just removes native from that imp
 * (native.ts); the field readers are in fields.ts.
 *
 * Hand-written instead of an Ajv schema with coercion: it gives one clear reason per error, no
 * mutation of the input, and costs a few µs for a typical request.
 */
import type { BannerImp, BidRequest, Deal, DsaRequest, DsaTransparency, Imp, Pmp, Size, VideoImp } from './types';
import { REQUEST_LIMITS as L } from './limits';
import { arr, flag, intList, InvalidRequestError, isObj, nonNeg, num, optObj, overLimit, px, str, strList, fail, type Obj } from './fields';
import { NativeRequestCache, parseNative } from './native';

// The bid path and the tests import these from here, the reader's entry point.
export { InvalidRequestError, NativeRequestCache };

function currency(o: Obj, key: string, path: string): string {
  const c = str(o, key, path, 'USD').trim().toUpperCase();
  return c === '' ? 'USD' : c;
}

/**
 * The paths the readers name in their errors (`imp[2].banner`, `imp[0].banner.format[1]`), made once
 * per index and kept for the first 16 imps and list entries: a request makes none of these strings.
 */
const IMP_PARTS = ['', '.banner', '.video', '.native', '.pmp'] as const;
const IMP = 0;
const BANNER = 1;
const VIDEO = 2;
const NATIVE = 3;
const PMP = 4;
const KEPT = 16;
const impPaths: string[] = [];
const entryPaths: string[] = [];

function impPath(i: number, part: number): string {
  if (i >= KEPT) return `imp[${i}]${IMP_PARTS[part]}`;
  const k = i * IMP_PARTS.length + part;
  return (impPaths[k] ??= `imp[${i}]${IMP_PARTS[part]}`);
}

/** `imp[i].banner.format[j]` (part BANNER) or `imp[i].pmp.deals[j]` (part PMP). */
function entryPath(i: number, part: number, j: number): string {
  const list = part === BANNER ? 'format' : 'deals';
  if (i >= KEPT || j >= KEPT) return `${impPath(i, part)}.${list}[${j}]`;
  const k = (i * KEPT + j) * 2 + (part === BANNER ? 0 : 1);
  return (entryPaths[k] ??= `${impPath(i, part)}.${list}[${j}]`);
}

/** Matches no candidate: the imp named a size, but not one we can read (a w without an h, say). */
const NO_SIZE: Size = Object.freeze({ w: 0, h: 0 });

function parseBanner(b: Obj, imp: number): BannerImp {
  const path = impPath(imp, BANNER);
  const sizes: Size[] = [];
  const format = arr(b, 'format', path, L.formats);
  for (let i = 0; i < format.length; i++) {
    const f = format[i];
    const fp = entryPath(imp, BANNER, i);
    if (!isObj(f)) fail(fp, 'must be an object');
    const w = px(f, 'w', fp);
    const h = px(f, 'h', fp);
    if (w > 0 && h > 0) sizes.push({ w, h });
  }
  if (sizes.length === 0) {
    const w = px(b, 'w', path);
    const h = px(b, 'h', path);
    if (w > 0 && h > 0) sizes.push({ w, h });
    // Size information that is there but incomplete must not turn into "any size".
    else if (w > 0 || h > 0 || format.length > 0) sizes.push(NO_SIZE);
  }
  return { sizes, battr: intList(b, 'battr', path, L.battr) };
}

function parseVideo(v: Obj, imp: number): VideoImp {
  const path = impPath(imp, VIDEO);
  let protocols = intList(v, 'protocols', path);
  const legacy = num(v, 'protocol', path, 0);
  if (legacy > 0 && !protocols.includes(legacy)) protocols = [...protocols, legacy];
  return {
    mimes: strList(v, 'mimes', path, true, L.smallList),
    minduration: nonNeg(v, 'minduration', path, 0),
    maxduration: nonNeg(v, 'maxduration', path, 0),
    protocols,
    w: px(v, 'w', path),
    h: px(v, 'h', path),
    battr: intList(v, 'battr', path, L.battr),
  };
}

/** `regs.ext.dsa` (or `regs.dsa`); a malformed object is a 400, as for any field the bidder reads. */
function parseDsa(regs: Obj): DsaRequest | null {
  const ext = optObj(regs, 'ext', 'regs');
  const path = ext !== null && isObj(ext.dsa) ? 'regs.ext.dsa' : 'regs.dsa';
  const d = ext !== null && isObj(ext.dsa) ? ext.dsa : optObj(regs, 'dsa', 'regs');
  if (d === null) return null;
  const transparency: DsaTransparency[] = [];
  const raw = arr(d, 'transparency', path, L.smallList);
  for (let i = 0; i < raw.length; i++) {
    const t = raw[i];
    const tp = `${path}.transparency[${i}]`;
    if (!isObj(t)) fail(tp, 'must be an object');
    transparency.push({ domain: str(t, 'domain', tp, ''), dsaparams: intList(t, 'dsaparams', tp) });
  }
  return {
    required: num(d, 'dsarequired', path, 0),
    pubrender: num(d, 'pubrender', path, 0),
    datatopub: num(d, 'datatopub', path, 0),
    transparency,
  };
}

function parsePmp(p: Obj, imp: number): Pmp {
  const path = impPath(imp, PMP);
  const deals: Deal[] = [];
  const raw = arr(p, 'deals', path, L.deals);
  for (let i = 0; i < raw.length; i++) {
    const d = raw[i];
    const dp = entryPath(imp, PMP, i);
    if (!isObj(d)) fail(dp, 'must be an object');
    const id = str(d, 'id', dp, '');
    if (id === '') continue;
    deals.push({ id, bidfloor: nonNeg(d, 'bidfloor', dp, 0), bidfloorcur: currency(d, 'bidfloorcur', dp) });
  }
  return { privateAuction: flag(p, 'private_auction', path), deals };
}

function parseImp(raw: unknown, i: number, natives: NativeRequestCache | null): Imp {
  const path = impPath(i, IMP);
  if (!isObj(raw)) fail(path, 'must be an object');
  const id = str(raw, 'id', path, '');
  if (id === '') fail(`${path}.id`, 'is required');
  const banner = optObj(raw, 'banner', path);
  const video = optObj(raw, 'video', path);
  const native = optObj(raw, 'native', path);
  const pmp = optObj(raw, 'pmp', path);
  return {
    id,
    secure: flag(raw, 'secure', path),
    bidfloor: nonNeg(raw, 'bidfloor', path, 0),
    bidfloorcur: currency(raw, 'bidfloorcur', path),
    banner: banner ? parseBanner(banner, i) : null,
    video: video ? parseVideo(video, i) : null,
    native: native ? parseNative(native, impPath(i, NATIVE), natives) : null,
    pmp: pmp ? parsePmp(pmp, i) : null,
  };
}

/**
 * Reads a parsed JSON body into the bidder's request view, or throws InvalidRequestError. `natives`:
 * where native requests sent as strings are kept once read (see NativeRequestCache).
 */
export function parseBidRequest(body: unknown, natives: NativeRequestCache | null = null): BidRequest {
  if (!isObj(body)) throw new InvalidRequestError('request must be a JSON object');
  const id = str(body, 'id', 'request', '');
  if (id === '') throw new InvalidRequestError('id is required');
  const rawImps = body.imp;
  if (!Array.isArray(rawImps)) throw new InvalidRequestError(rawImps === undefined ? 'imp is required' : 'imp must be an array');
  if (rawImps.length === 0) throw new InvalidRequestError('imp must not be empty');
  if (rawImps.length > L.imps) overLimit('imp', L.imps, 'entries');
  const imps: Imp[] = [];
  for (let i = 0; i < rawImps.length; i++) imps.push(parseImp(rawImps[i], i, natives));

  const site = optObj(body, 'site', 'request');
  const app = optObj(body, 'app', 'request');
  const dooh = optObj(body, 'dooh', 'request');
  const device = optObj(body, 'device', 'request');
  const user = optObj(body, 'user', 'request');
  const inv = app ?? site ?? dooh;
  const invPath = app ? 'app' : site ? 'site' : 'dooh';
  const publisher = inv ? optObj(inv, 'publisher', invPath) : null;
  const geo = device ? optObj(device, 'geo', 'device') : null;
  const userGeo = geo === null && user ? optObj(user, 'geo', 'user') : null;

  const regs = optObj(body, 'regs', 'request');
  const cur = strList(body, 'cur', 'request', false);
  let userId = user ? str(user, 'id', 'user', '') : '';
  if (userId === '' && device) userId = str(device, 'ifa', 'device', '');

  return {
    id,
    imps,
    cur: upperCase(cur),
    bcat: strSet(body, 'bcat', 'request', 'lower'),
    badv: strSet(body, 'badv', 'request', 'domain'),
    bapp: strSet(body, 'bapp', 'request', 'asIs'),
    inventory: app ? 'app' : site ? 'site' : dooh ? 'dooh' : 'site',
    bundle: app ? str(app, 'bundle', 'app', '') : '',
    domain: inv ? str(inv, 'domain', invPath, '') : '',
    publisher: publisher
      ? str(publisher, 'name', `${invPath}.publisher`, '') || str(publisher, 'id', `${invPath}.publisher`, '')
      : inv
        ? str(inv, 'name', invPath, '') || str(inv, 'domain', invPath, '')
        : '',
    deviceType: device ? num(device, 'devicetype', 'device', 0) : 0,
    os: device ? str(device, 'os', 'device', '').toLowerCase() : '',
    country: geo
      ? str(geo, 'country', 'device.geo', '').toUpperCase()
      : userGeo
        ? str(userGeo, 'country', 'user.geo', '').toUpperCase()
        : '',
    userId,
    userKey: '',
    source: 0,
    tmax: body.tmax === undefined ? 0 : nonNeg(body, 'tmax', 'request', 0),
    // OpenRTB 2.6 §3.2.1: 2 (second price plus) when absent; anything but 1 is bid at value.
    at: num(body, 'at', 'request', 2) === 1 ? 1 : 2,
    test: flag(body, 'test', 'request'),
    coppa: regs !== null && flag(regs, 'coppa', 'regs'),
    dsa: regs !== null ? parseDsa(regs) : null,
  };
}

/** The list upper-cased: itself when it already is (toUpperCase makes no string then). */
function upperCase(list: readonly string[]): readonly string[] {
  for (let i = 0; i < list.length; i++) if (list[i] !== list[i].toUpperCase()) return list.map((c) => c.toUpperCase());
  return list;
}

const EMPTY_SET: ReadonlySet<string> = new Set<string>();

/** A block list as a set (filters look entries up): as given, lower-cased, or a domain (lower-cased, without "www."). */
function strSet(o: Obj, key: string, path: string, form: 'asIs' | 'lower' | 'domain'): ReadonlySet<string> {
  const list = strList(o, key, path, form !== 'asIs');
  if (list.length === 0) return EMPTY_SET;
  if (form !== 'domain') return new ListSet(list);
  let out: string[] | null = null;
  for (let i = 0; i < list.length; i++) {
    if (!list[i].startsWith('www.')) continue;
    out ??= list.slice();
    out[i] = list[i].slice(4);
  }
  return new ListSet(out ?? list);
}

/** Lists this long or shorter are looked up entry by entry; a longer one gets a hash set on its first lookup. */
const SCANNED = 4;

/**
 * A request's block list as a ReadonlySet over the array read: a Set costs ~260 bytes of heap for
 * two entries, and most lists are a few entries that the filters scan once (or, long, look up:
 * then the Set is made on the first lookup). Entries are as listed (a repeated one is seen twice
 * by forEach; `size` counts it twice, which only `size !== 0` reads).
 */
export class ListSet implements ReadonlySet<string> {
  private set: Set<string> | null = null;

  constructor(private readonly list: readonly string[]) {}

  get size(): number {
    return this.list.length;
  }

  has(value: string): boolean {
    const l = this.list;
    if (l.length <= SCANNED) {
      for (let i = 0; i < l.length; i++) if (l[i] === value) return true;
      return false;
    }
    return (this.set ??= new Set(l)).has(value);
  }

  forEach(fn: (value: string, key: string, set: ReadonlySet<string>) => void, thisArg?: unknown): void {
    const l = this.list;
    for (let i = 0; i < l.length; i++) fn.call(thisArg, l[i], l[i], this);
  }

  keys(): SetIterator<string> {
    return new Set(this.list).keys();
  }

  values(): SetIterator<string> {
    return new Set(this.list).values();
  }

  entries(): SetIterator<[string, string]> {
    return new Set(this.list).entries();
  }

  [Symbol.iterator](): SetIterator<string> {
    return new Set(this.list)[Symbol.iterator]();
  }
}
