/**
 * Lenient OpenRTB 2.5/2.6 request reader. Exchanges are sloppy (OpenRTB 2.6 §2.6, tolerate unknowns):
 * numbers arrive as strings, booleans as 0/1, `native.request` as a JSON string or an object, with
 * or without the Native 1.0 `{"native": …}` wrapper, unknown fields everywhere. We read only the
 * fields the bidder uses, accept every encoding we can make sense of, and reject (400) only what we
 * cannot bid on: a body that is not an object, no id, no imp, or a field we read that has a type
 * no coercion can fix. A native request we cannot parse just removes native from that imp.
 *
 * Hand-written instead of an Ajv schema with coercion: it gives one clear reason per error, no
 * mutation of the input, and costs a few µs for a typical request.
 */
import {
  NativeAssetKind,
  type BannerImp,
  type BidRequest,
  type Deal,
  type DsaRequest,
  type DsaTransparency,
  type Imp,
  type NativeAssetReq,
  type NativeEventTrackerReq,
  type NativeImp,
  type Pmp,
  type Size,
  type VideoImp,
} from './types';
import { REQUEST_LIMITS as L } from './limits';

/** A client error: the request is answered 400 with `reason`. */
export class InvalidRequestError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidRequestError';
  }
}

type Obj = Record<string, unknown>;

const EMPTY: readonly never[] = Object.freeze([]);

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fail(path: string, what: string): never {
  throw new InvalidRequestError(`${path} ${what}`);
}

/** Past a limit of REQUEST_LIMITS: `<field>: at most <n> <unit>`. */
function overLimit(field: string, n: number, unit: string): never {
  throw new InvalidRequestError(`${field}: at most ${n} ${unit}`);
}

/** Object or absent; anything else is a 400. */
function optObj(o: Obj, key: string, path: string): Obj | null {
  const v = o[key];
  if (v === undefined || v === null) return null;
  if (!isObj(v)) fail(`${path}.${key}`, 'must be an object');
  return v;
}

/** A number, or a string holding one; absent → def. */
function num(o: Obj, key: string, path: string, def: number): number {
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
function nonNeg(o: Obj, key: string, path: string, def: number): number {
  const n = num(o, key, path, def);
  if (n < 0) fail(`${path}.${key}`, 'must not be negative');
  return n;
}

/** 0/1, true/false, "1"/"0"/"true"/"false". */
function flag(o: Obj, key: string, path: string): boolean {
  const v = o[key];
  if (v === undefined || v === null) return false;
  if (v === true || v === 1 || v === '1' || v === 'true') return true;
  if (v === false || v === 0 || v === '0' || v === 'false' || v === '') return false;
  return fail(`${path}.${key}`, 'must be 0 or 1');
}

/** A string, or a number used as an id; absent → def. */
function str(o: Obj, key: string, path: string, def: string): string {
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
function strList(o: Obj, key: string, path: string, lower: boolean, max: number = L.listEntries): readonly string[] {
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
function intList(o: Obj, key: string, path: string, max: number = L.smallList): readonly number[] {
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
function arr(o: Obj, key: string, path: string, max: number): readonly unknown[] {
  const v = o[key];
  if (v === undefined || v === null) return EMPTY;
  if (!Array.isArray(v)) fail(`${path}.${key}`, 'must be an array');
  if (v.length > max) overLimit(`${path}.${key}`, max, 'entries');
  return v;
}

/** A size in pixels: not negative, at most REQUEST_LIMITS.pixels (so that size keys stay unique). */
function px(o: Obj, key: string, path: string): number {
  const n = nonNeg(o, key, path, 0);
  if (n > L.pixels) overLimit(`${path}.${key}`, L.pixels, 'pixels');
  return n;
}

function currency(o: Obj, key: string, path: string): string {
  const c = str(o, key, path, 'USD').trim().toUpperCase();
  return c === '' ? 'USD' : c;
}

/** Matches no candidate: the imp named a size, but not one we can read (a w without an h, say). */
const NO_SIZE: Size = Object.freeze({ w: 0, h: 0 });

function parseBanner(b: Obj, path: string): BannerImp {
  const sizes: Size[] = [];
  const format = arr(b, 'format', path, L.formats);
  for (let i = 0; i < format.length; i++) {
    const f = format[i];
    if (!isObj(f)) fail(`${path}.format[${i}]`, 'must be an object');
    const w = px(f, 'w', `${path}.format[${i}]`);
    const h = px(f, 'h', `${path}.format[${i}]`);
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

function parseVideo(v: Obj, path: string): VideoImp {
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

/**
 * The Native request payload: a JSON string or an object, maybe wrapped in `{"native": …}`.
 * Returns null when it cannot be understood: the imp then simply cannot take a native bid.
 */
function parseNativePayload(request: unknown, ver: string): { ver: string; payload: Obj } | null {
  let payload: unknown = request;
  if (typeof payload === 'string') {
    try {
      payload = JSON.parse(payload);
    } catch {
      return null;
    }
  }
  if (!isObj(payload)) return null;
  if (isObj(payload.native) && payload.assets === undefined) payload = payload.native;
  if (!isObj(payload)) return null;
  const pv = payload.ver;
  const v = typeof pv === 'string' && pv !== '' ? pv : typeof pv === 'number' ? String(pv) : ver;
  return { ver: v, payload };
}

type NativeCore = Omit<NativeImp, 'battr'>;

const NATIVE_CACHE_MAX = 512;
/** Characters; real native requests are a few hundred. 512 × 8 KiB bounds the cache at ~8 MiB of text (UTF-16). */
const NATIVE_CACHE_MAX_TEXT = 8 * 1024;

/**
 * Native requests sent as JSON strings, already read, by their text: an exchange sends the same few
 * per placement, and reading one (JSON.parse of the string, then the assets) is most of what a
 * native imp costs the reader. Only requests read without error are kept; bounded in entries and
 * in text length, oldest out. The bid path owns one (BiddingService) and passes it to
 * parseBidRequest; without one every native request is read afresh.
 */
export class NativeRequestCache {
  private readonly m = new Map<string, { outerVer: string; core: NativeCore | null }>();

  get size(): number {
    return this.m.size;
  }

  /** The reading of `request` under `outerVer`, read and kept on first sight. */
  read(request: string, outerVer: string, path: string): NativeCore | null {
    let hit = this.m.get(request);
    if (hit === undefined || hit.outerVer !== outerVer) {
      // Frozen: one cached reading is shared by every request that sends this text.
      hit = { outerVer, core: deepFreeze(parseNativeCore(request, outerVer, path)) };
      if (this.m.size >= NATIVE_CACHE_MAX) this.m.delete(this.m.keys().next().value!);
      this.m.set(request, hit);
    }
    return hit.core;
  }
}

function parseNative(n: Obj, path: string, natives: NativeRequestCache | null): NativeImp | null {
  const battr = intList(n, 'battr', path, L.battr);
  if (typeof n.request === 'string' && n.request.length > L.nativeRequestChars) overLimit(`${path}.request`, L.nativeRequestChars, 'characters');
  const outerVer = typeof n.ver === 'string' && n.ver !== '' ? n.ver : '1.2';
  const request = n.request;
  // Long texts are read every time: the cache must stay small whatever clients send.
  if (natives === null || typeof request !== 'string' || request.length > NATIVE_CACHE_MAX_TEXT) {
    const core = parseNativeCore(request, outerVer, path);
    return core === null ? null : { ...core, battr };
  }
  const core = natives.read(request, outerVer, path);
  return core === null ? null : { ver: core.ver, assets: core.assets, eventtrackers: core.eventtrackers, battr };
}

function deepFreeze<T>(v: T): T {
  if (v !== null && typeof v === 'object' && !Object.isFrozen(v)) {
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
    Object.freeze(v);
  }
  return v;
}

function parseNativeCore(request: unknown, outerVer: string, path: string): NativeCore | null {
  const parsed = parseNativePayload(request, outerVer);
  if (parsed === null) return null;
  const p = parsed.payload;
  const pPath = `${path}.request`;
  const rawAssets = p.assets;
  if (!Array.isArray(rawAssets) || rawAssets.length === 0) return null;
  if (rawAssets.length > L.smallList) overLimit(`${pPath}.assets`, L.smallList, 'entries');
  const assets: NativeAssetReq[] = [];
  for (let i = 0; i < rawAssets.length; i++) {
    const a: unknown = rawAssets[i];
    const ap = `${pPath}.assets[${i}]`;
    if (!isObj(a)) return null;
    // Native 1.2 requires an id; some senders omit it: the asset's position stands in for it.
    const id = num(a, 'id', ap, i);
    const required = flag(a, 'required', ap);
    let kind: NativeAssetKind;
    let body: Obj;
    if (isObj(a.title)) {
      kind = NativeAssetKind.Title;
      body = a.title;
    } else if (isObj(a.img)) {
      kind = NativeAssetKind.Img;
      body = a.img;
    } else if (isObj(a.data)) {
      kind = NativeAssetKind.Data;
      body = a.data;
    } else if (isObj(a.video)) {
      kind = NativeAssetKind.Video;
      body = a.video;
    } else {
      // An asset of a kind we don't know: harmless unless required.
      if (required) return null;
      continue;
    }
    assets.push({
      id,
      required,
      kind,
      len: nonNeg(body, 'len', ap, 0),
      type: nonNeg(body, 'type', ap, 0),
      w: px(body, 'w', ap),
      h: px(body, 'h', ap),
      wmin: px(body, 'wmin', ap),
      hmin: px(body, 'hmin', ap),
    });
  }
  let eventtrackers: NativeEventTrackerReq[] | null = null;
  if (Array.isArray(p.eventtrackers)) {
    if (p.eventtrackers.length > L.smallList) overLimit(`${pPath}.eventtrackers`, L.smallList, 'entries');
    eventtrackers = [];
    for (let i = 0; i < p.eventtrackers.length; i++) {
      const e: unknown = p.eventtrackers[i];
      if (!isObj(e)) continue;
      const ep = `${pPath}.eventtrackers[${i}]`;
      eventtrackers.push({ event: num(e, 'event', ep, 0), methods: intList(e, 'methods', ep) });
    }
  }
  return { ver: parsed.ver, assets, eventtrackers };
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

function parsePmp(p: Obj, path: string): Pmp {
  const deals: Deal[] = [];
  const raw = arr(p, 'deals', path, L.deals);
  for (let i = 0; i < raw.length; i++) {
    const d = raw[i];
    const dp = `${path}.deals[${i}]`;
    if (!isObj(d)) fail(dp, 'must be an object');
    const id = str(d, 'id', dp, '');
    if (id === '') continue;
    deals.push({ id, bidfloor: nonNeg(d, 'bidfloor', dp, 0), bidfloorcur: currency(d, 'bidfloorcur', dp) });
  }
  return { privateAuction: flag(p, 'private_auction', path), deals };
}

function parseImp(raw: unknown, i: number, natives: NativeRequestCache | null): Imp {
  const path = `imp[${i}]`;
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
    banner: banner ? parseBanner(banner, `${path}.banner`) : null,
    video: video ? parseVideo(video, `${path}.video`) : null,
    native: native ? parseNative(native, `${path}.native`, natives) : null,
    pmp: pmp ? parsePmp(pmp, `${path}.pmp`) : null,
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
    cur: cur.length === 0 ? cur : cur.map((c) => c.toUpperCase()),
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

const EMPTY_SET: ReadonlySet<string> = new Set<string>();

/** A block list as a set (filters look entries up): as given, lower-cased, or a domain (lower-cased, without "www."). */
function strSet(o: Obj, key: string, path: string, form: 'asIs' | 'lower' | 'domain'): ReadonlySet<string> {
  const list = strList(o, key, path, form !== 'asIs');
  if (list.length === 0) return EMPTY_SET;
  if (form !== 'domain') return new Set(list);
  const out = new Set<string>();
  for (let i = 0; i < list.length; i++) out.add(list[i].startsWith('www.') ? list[i].slice(4) : list[i]);
  return out;
}
