/**
 * Campaign file loader: validates the JSON document described in data/README.md and flattens each
 * creative with its campaign's fields into a Candidate. Pure (no I/O): CampaignStore reads the file.
 *
 * Every problem found is reported, each naming its entry, e.g.
 *   campaigns[3] (id "cmp-004") creatives[1] (id "cmp-004-cr012"): price: expected a number > 0 and <= 1000, got -1
 */
import type { Candidate, CampaignDsa } from './types';

export const CAMPAIGN_FILE_VERSION = 1;
/** Highest CPM (USD) a creative may carry; a guard against typos such as 250 for 2.50. */
export const MAX_PRICE = 1000;
const MAX_PROBLEMS = 50;
/** Longest DSA `behalf`/`paid`, in UTF-8 bytes (Prebid Server drops a bid whose strings are longer). */
export const DSA_TEXT_MAX = 100;

export class CampaignFileError extends Error {
  constructor(
    readonly problems: readonly string[],
    source = 'campaigns',
  ) {
    super(`${source}: invalid campaign file:\n  - ${problems.join('\n  - ')}`);
    this.name = 'CampaignFileError';
  }
}

// ---- the file format ---------------------------------------------------------------------------

export interface CampaignFile {
  version: 1;
  /** Currency of every price in the file; only "USD" is accepted. Optional. */
  currency?: 'USD';
  comment?: string;
  campaigns: CampaignEntry[];
}

export interface CampaignEntry {
  id: string;
  name?: string;
  adomain: string[];
  cat: string[];
  landingUrl: string;
  budget: { total: number; daily: number };
  /** How the daily budget is spent: "even" (along the campaign's day) or "asap" (as fast as traffic allows, the default: files written before pacing keep their behaviour). */
  pacing?: 'even' | 'asap';
  /** IANA time zone of the campaign's day (daily budget, pacing curve). Default "UTC". */
  timeZone?: string;
  frequencyCap?: { perDay: number } | null;
  bundle?: string | null;
  targeting?: {
    inventory?: 'site' | 'app' | null;
    deviceTypes?: number[];
    os?: string[];
    countries?: string[];
  };
  deals?: string[];
  dealsOnly?: boolean;
  /** false: never bid on child-directed inventory. Default true. */
  coppa?: boolean;
  /** true: relies on user-level data (bids only where the request allows it). Default false. */
  personalized?: boolean;
  /** DSA transparency information (`bid.ext.dsa`). */
  dsa?: { behalf: string; paid: string; adrender?: 0 | 1 } | null;
  creatives: CreativeEntry[];
}

export interface CreativeEntry {
  id: string;
  type: 'banner' | 'native' | 'video';
  /** CPM in USD. */
  price: number;
  attr?: number[];
  /** Overrides the campaign's landingUrl. */
  landingUrl?: string;
  banner?: { w: number; h: number; imageUrl: string };
  native?: {
    title: string;
    description?: string;
    sponsoredBy?: string;
    cta?: string;
    image?: { url: string; w: number; h: number } | null;
    icon?: { url: string; w: number; h: number } | null;
  };
  video?: {
    mimes: string[];
    duration: number;
    protocols: number[];
    w: number;
    h: number;
    mediaUrl: string;
    bitrate?: number;
  };
}

// ---- validation helpers --------------------------------------------------------------------------

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Collects problems for one entry (its label names campaign and creative). */
class Checker {
  constructor(
    private readonly problems: string[],
    readonly label: string,
  ) {}

  bool(o: Obj, field: string, def: boolean): boolean {
    const v = o[field];
    if (v === undefined) return def;
    if (typeof v === 'boolean') return v;
    this.bad(field, 'true or false', v);
    return def;
  }

  bad(field: string, expected: string, got: unknown): void {
    if (this.problems.length < MAX_PROBLEMS) this.problems.push(`${this.label}: ${field}: expected ${expected}, got ${show(got)}`);
    else if (this.problems.length === MAX_PROBLEMS) this.problems.push('... (more problems not shown)');
  }

  unknownKeys(o: Obj, prefix: string, allowed: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) this.bad(`${prefix}${k}`, 'no such field (allowed: ' + allowed.join(', ') + ')', o[k]);
    }
  }

  obj(o: Obj, field: string, path = field): Obj | null {
    const v = o[field];
    if (isObj(v)) return v;
    this.bad(path, 'an object', v);
    return null;
  }

  str(o: Obj, field: string, path = field, opts: { optional?: boolean; def?: string; nonEmpty?: boolean } = {}): string {
    const v = o[field];
    if (v === undefined && opts.optional) return opts.def ?? '';
    if (typeof v === 'string' && (!opts.nonEmpty || v.trim() !== '')) return v;
    this.bad(path, opts.nonEmpty ? 'a non-empty string' : 'a string', v);
    return opts.def ?? '';
  }

  num(o: Obj, field: string, path: string, min: number, max: number, opts: { integer?: boolean; exclusiveMin?: boolean } = {}): number {
    const v = o[field];
    const ok =
      typeof v === 'number' &&
      Number.isFinite(v) &&
      (opts.exclusiveMin ? v > min : v >= min) &&
      v <= max &&
      (!opts.integer || Number.isInteger(v));
    if (ok) return v;
    const kind = opts.integer ? 'a whole number' : 'a number';
    this.bad(path, `${kind} ${opts.exclusiveMin ? '>' : '>='} ${min} and <= ${max}`, v);
    return 0;
  }

  /**
   * An absolute http(s) URL in its normalized form (WHATWG `href`: percent-encoded, host in
   * punycode), so that it is ASCII: always a valid `location` header, and safe to quote.
   */
  url(o: Obj, field: string, path = field): string {
    const v = o[field];
    if (typeof v === 'string') {
      try {
        const u = new URL(v);
        if (u.protocol === 'https:' || u.protocol === 'http:') return u.href;
      } catch {
        // reported below
      }
    }
    this.bad(path, 'an absolute http(s) URL', v);
    return '';
  }

  strArray(o: Obj, field: string, path: string, opts: { optional?: boolean; nonEmpty?: boolean; pattern?: RegExp; item?: string } = {}): string[] {
    const v = o[field];
    if (v === undefined && opts.optional) return [];
    const item = opts.item ?? 'a non-empty string';
    if (!Array.isArray(v) || (opts.nonEmpty && v.length === 0)) {
      this.bad(path, `${opts.nonEmpty ? 'a non-empty' : 'an'} array, each ${item}`, v);
      return [];
    }
    const out: string[] = [];
    for (let i = 0; i < v.length; i++) {
      const s: unknown = v[i];
      if (typeof s !== 'string' || s.trim() === '' || (opts.pattern && !opts.pattern.test(s.trim()))) {
        this.bad(`${path}[${i}]`, item, s);
        continue;
      }
      out.push(s.trim());
    }
    return out;
  }

  intArray(o: Obj, field: string, path: string, min: number, max: number, opts: { optional?: boolean; nonEmpty?: boolean } = {}): number[] {
    const v = o[field];
    if (v === undefined && opts.optional) return [];
    if (!Array.isArray(v) || (opts.nonEmpty && v.length === 0)) {
      this.bad(path, `${opts.nonEmpty ? 'a non-empty' : 'an'} array of whole numbers from ${min} to ${max}`, v);
      return [];
    }
    const out: number[] = [];
    for (let i = 0; i < v.length; i++) {
      const n: unknown = v[i];
      if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
        this.bad(`${path}[${i}]`, `a whole number from ${min} to ${max}`, n);
        continue;
      }
      out.push(n);
    }
    return out;
  }
}

const CAMPAIGN_KEYS = [
  'id',
  'name',
  'adomain',
  'cat',
  'landingUrl',
  'budget',
  'pacing',
  'timeZone',
  'frequencyCap',
  'bundle',
  'targeting',
  'deals',
  'dealsOnly',
  'coppa',
  'personalized',
  'dsa',
  'creatives',
  'comment',
] as const;
const CREATIVE_KEYS = ['id', 'type', 'price', 'attr', 'landingUrl', 'banner', 'native', 'video', 'comment'] as const;
const TARGETING_KEYS = ['inventory', 'deviceTypes', 'os', 'countries'] as const;
const DOMAIN = /^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)+$/i;
/** IAB content taxonomy 1.0/2.x style ids: IAB3, IAB3-1. */
const IAB_CAT = /^IAB\d{1,2}(-\d{1,3})?$/;
const COUNTRY = /^[A-Z]{3}$/;
const MIME = /^[a-z]+\/[a-z0-9.+-]+$/i;

type Img = { readonly url: string; readonly w: number; readonly h: number };

function image(ck: Checker, parent: Obj, field: string, path: string): Img | null {
  const v = parent[field];
  if (v === undefined || v === null) return null;
  if (!isObj(v)) {
    ck.bad(path, 'an object {url, w, h} or null', v);
    return null;
  }
  ck.unknownKeys(v, `${path}.`, ['url', 'w', 'h']);
  return {
    url: ck.url(v, 'url', `${path}.url`),
    w: ck.num(v, 'w', `${path}.w`, 1, 10000, { integer: true }),
    h: ck.num(v, 'h', `${path}.h`, 1, 10000, { integer: true }),
  };
}

function isHttps(url: string): boolean {
  return url.startsWith('https://');
}

/** Lower-cases and drops a leading "www." so that badv entries match however they are written. */
export function normalizeDomain(d: string): string {
  const l = d.trim().toLowerCase();
  return l.startsWith('www.') ? l.slice(4) : l;
}

// ---- the loader ---------------------------------------------------------------------------------

/** What loading one file keeps across its entries. */
interface LoadContext {
  readonly problems: string[];
  readonly campaignIds: Set<string>;
  /** Creative id → label of its campaign. */
  readonly creativeIds: Map<string, string>;
}

/** A campaign's fields, validated, as every one of its candidates carries them. */
interface CampaignParts {
  readonly id: string;
  readonly label: string;
  readonly adomain: readonly string[];
  readonly cat: readonly string[];
  readonly landingUrl: string;
  readonly budget: { readonly total: number; readonly daily: number };
  readonly pacing: 'even' | 'asap';
  readonly timeZone: string;
  readonly frequencyCap: { readonly perDay: number } | null;
  readonly bundle: string | null;
  readonly targeting: Candidate['targeting'];
  readonly deals: readonly string[];
  readonly dealsOnly: boolean;
  readonly coppa: boolean;
  readonly personalized: boolean;
  readonly dsa: CampaignDsa | null;
}

/**
 * Validates a parsed campaign file and returns its candidates (one per creative), in file order.
 * Throws CampaignFileError listing every problem, each naming its campaign/creative and field.
 */
export function loadCampaigns(json: unknown, source = 'campaigns'): Candidate[] {
  const ctx: LoadContext = { problems: [], campaignIds: new Set(), creativeIds: new Map() };
  const top = new Checker(ctx.problems, 'file');
  if (!isObj(json)) {
    top.bad('(root)', 'an object {version, campaigns}', json);
    throw new CampaignFileError(ctx.problems, source);
  }
  top.unknownKeys(json, '', ['version', 'currency', 'comment', 'campaigns']);
  if (json.version !== CAMPAIGN_FILE_VERSION) top.bad('version', String(CAMPAIGN_FILE_VERSION), json.version);
  if (json.currency !== undefined && json.currency !== 'USD') top.bad('currency', '"USD" (prices are USD CPMs)', json.currency);
  const campaigns = json.campaigns;
  if (!Array.isArray(campaigns)) {
    top.bad('campaigns', 'an array', campaigns);
    throw new CampaignFileError(ctx.problems, source);
  }
  const out: Candidate[] = [];
  for (let ci = 0; ci < campaigns.length; ci++) {
    const c: unknown = campaigns[ci];
    const cid = isObj(c) && typeof c.id === 'string' ? c.id : '';
    const ck = new Checker(ctx.problems, `campaigns[${ci}]${cid ? ` (id ${JSON.stringify(cid)})` : ''}`);
    if (!isObj(c)) {
      ck.bad('(entry)', 'an object', c);
      continue;
    }
    const campaign = readCampaign(ck, c, cid, ctx);
    const creatives = c.creatives;
    if (!Array.isArray(creatives) || creatives.length === 0) {
      ck.bad('creatives', 'a non-empty array', creatives);
      continue;
    }
    for (let ri = 0; ri < creatives.length; ri++) {
      const cand = readCreative(creatives[ri], ri, campaign, ctx);
      if (cand !== null) out.push(cand);
    }
  }
  if (ctx.problems.length > 0) throw new CampaignFileError(ctx.problems, source);
  return out;
}

/** The campaign's own fields (not its creatives). */
function readCampaign(ck: Checker, c: Obj, cid: string, ctx: LoadContext): CampaignParts {
  ck.unknownKeys(c, '', CAMPAIGN_KEYS);
  ck.str(c, 'id', 'id', { nonEmpty: true });
  if (cid) {
    if (ctx.campaignIds.has(cid)) ck.bad('id', 'an id unique in the file', cid);
    ctx.campaignIds.add(cid);
  }
  if (c.name !== undefined) ck.str(c, 'name', 'name');
  const adomain = ck.strArray(c, 'adomain', 'adomain', { nonEmpty: true, pattern: DOMAIN, item: 'a domain name ("example.com")' }).map(normalizeDomain);
  const cat = ck.strArray(c, 'cat', 'cat', { pattern: IAB_CAT, item: 'an IAB category ("IAB3" or "IAB3-1")' });
  const landingUrl = ck.url(c, 'landingUrl');
  const budget = readBudget(ck, c);
  const frequencyCap = readFrequencyCap(ck, c);
  const bundle = c.bundle !== undefined && c.bundle !== null ? ck.str(c, 'bundle', 'bundle', { nonEmpty: true }) || null : null;
  const targeting = readTargeting(ck, c);
  const deals = ck.strArray(c, 'deals', 'deals', { optional: true });
  const dealsOnly = ck.bool(c, 'dealsOnly', false);
  if (dealsOnly && deals.length === 0) ck.bad('dealsOnly', 'false when the campaign lists no deals', c.dealsOnly);
  return {
    id: cid,
    label: ck.label,
    adomain: Object.freeze(adomain),
    cat: Object.freeze(cat),
    landingUrl,
    budget: Object.freeze(budget),
    pacing: readPacing(ck, c),
    timeZone: readTimeZone(ck, c),
    frequencyCap: frequencyCap ? Object.freeze(frequencyCap) : null,
    bundle,
    targeting,
    deals: Object.freeze(deals),
    dealsOnly,
    coppa: ck.bool(c, 'coppa', true),
    personalized: ck.bool(c, 'personalized', false),
    dsa: readDsa(ck, c),
  };
}

function readBudget(ck: Checker, c: Obj): { total: number; daily: number } {
  const b = ck.obj(c, 'budget');
  if (!b) return { total: 0, daily: 0 };
  ck.unknownKeys(b, 'budget.', ['total', 'daily']);
  const budget = {
    total: ck.num(b, 'total', 'budget.total', 0, 1e12, { exclusiveMin: true }),
    daily: ck.num(b, 'daily', 'budget.daily', 0, 1e12, { exclusiveMin: true }),
  };
  if (budget.total > 0 && budget.daily > budget.total) ck.bad('budget.daily', `at most budget.total (${budget.total})`, budget.daily);
  return budget;
}

function readPacing(ck: Checker, c: Obj): 'even' | 'asap' {
  if (c.pacing === undefined) return 'asap';
  if (c.pacing === 'even' || c.pacing === 'asap') return c.pacing;
  ck.bad('pacing', '"even" or "asap"', c.pacing);
  return 'asap';
}

/** An IANA zone name the platform knows ("Europe/Paris", "UTC"), in its canonical spelling. */
function readTimeZone(ck: Checker, c: Obj): string {
  if (c.timeZone === undefined) return 'UTC';
  if (typeof c.timeZone === 'string' && c.timeZone !== '') {
    try {
      return new Intl.DateTimeFormat('en-US', { timeZone: c.timeZone }).resolvedOptions().timeZone;
    } catch {
      // RangeError: not a zone the platform knows; reported below.
    }
  }
  ck.bad('timeZone', 'an IANA time zone name ("Europe/Paris", "America/New_York", "UTC")', c.timeZone);
  return 'UTC';
}

function readFrequencyCap(ck: Checker, c: Obj): { perDay: number } | null {
  if (c.frequencyCap === undefined || c.frequencyCap === null) return null;
  const f = ck.obj(c, 'frequencyCap');
  if (!f) return null;
  ck.unknownKeys(f, 'frequencyCap.', ['perDay']);
  return { perDay: ck.num(f, 'perDay', 'frequencyCap.perDay', 1, 1e6, { integer: true }) };
}

function readTargeting(ck: Checker, c: Obj): Candidate['targeting'] {
  let inventory: 'site' | 'app' | null = null;
  let deviceTypes: number[] = [];
  let os: string[] = [];
  let countries: string[] = [];
  const t = c.targeting !== undefined ? ck.obj(c, 'targeting') : null;
  if (t) {
    ck.unknownKeys(t, 'targeting.', TARGETING_KEYS);
    if (t.inventory !== undefined && t.inventory !== null) {
      if (t.inventory === 'site' || t.inventory === 'app') inventory = t.inventory;
      else ck.bad('targeting.inventory', '"site", "app" or null', t.inventory);
    }
    deviceTypes = ck.intArray(t, 'deviceTypes', 'targeting.deviceTypes', 1, 30, { optional: true });
    os = ck.strArray(t, 'os', 'targeting.os', { optional: true }).map((s) => s.toLowerCase());
    countries = ck.strArray(t, 'countries', 'targeting.countries', {
      optional: true,
      pattern: COUNTRY,
      item: 'an ISO-3166-1 alpha-3 code ("USA")',
    });
  }
  return Object.freeze({ inventory, deviceTypes: Object.freeze(deviceTypes), os: Object.freeze(os), countries: Object.freeze(countries) });
}

function readDsa(ck: Checker, c: Obj): CampaignDsa | null {
  if (c.dsa === undefined || c.dsa === null) return null;
  const d = ck.obj(c, 'dsa');
  if (!d) return null;
  ck.unknownKeys(d, 'dsa.', ['behalf', 'paid', 'adrender']);
  const text = (field: 'behalf' | 'paid'): string => {
    const v = d[field];
    if (typeof v === 'string' && v.trim() !== '' && Buffer.byteLength(v, 'utf8') <= DSA_TEXT_MAX) return v;
    ck.bad(`dsa.${field}`, `a non-empty string of at most ${DSA_TEXT_MAX} characters (UTF-8 bytes)`, v);
    return '';
  };
  const behalf = text('behalf');
  const paid = text('paid');
  let adrender: 0 | 1 = 0;
  if (d.adrender !== undefined) {
    if (d.adrender === 0 || d.adrender === 1) adrender = d.adrender;
    else ck.bad('dsa.adrender', '0 or 1', d.adrender);
  }
  return Object.freeze({ behalf, paid, adrender });
}

/** One creative with its campaign's fields, or null when it cannot be read (the problem is recorded). */
function readCreative(r: unknown, ri: number, cp: CampaignParts, ctx: LoadContext): Candidate | null {
  const rid = isObj(r) && typeof r.id === 'string' ? r.id : '';
  const rk = new Checker(ctx.problems, `${cp.label} creatives[${ri}]${rid ? ` (id ${JSON.stringify(rid)})` : ''}`);
  if (!isObj(r)) {
    rk.bad('(entry)', 'an object', r);
    return null;
  }
  rk.unknownKeys(r, '', CREATIVE_KEYS);
  rk.str(r, 'id', 'id', { nonEmpty: true });
  if (rid) {
    const prev = ctx.creativeIds.get(rid);
    if (prev !== undefined) rk.bad('id', `an id unique in the file (already used in ${prev})`, rid);
    else ctx.creativeIds.set(rid, cp.label);
  }
  const price = rk.num(r, 'price', 'price', 0, MAX_PRICE, { exclusiveMin: true });
  const attr = rk.intArray(r, 'attr', 'attr', 1, 1000, { optional: true });
  const landingUrl = r.landingUrl === undefined ? cp.landingUrl : rk.url(r, 'landingUrl');

  const type = r.type;
  for (const other of ['banner', 'native', 'video'] as const) {
    if (other !== type && r[other] !== undefined) rk.bad(other, `no ${other} object on a ${String(type)} creative`, r[other]);
  }
  let banner: Candidate['banner'] = null;
  let native: Candidate['native'] = null;
  let video: Candidate['video'] = null;
  if (type === 'banner') banner = readBanner(rk, r);
  else if (type === 'native') native = readNative(rk, r);
  else if (type === 'video') video = readVideo(rk, r);
  else rk.bad('type', '"banner", "native" or "video"', type);
  if (banner === null && native === null && video === null) return null;

  // Secure when every URL the creative uses is https.
  const secure =
    isHttps(landingUrl) &&
    (banner === null || isHttps(banner.imageUrl)) &&
    (native === null || ((native.image === null || isHttps(native.image.url)) && (native.icon === null || isHttps(native.icon.url)))) &&
    (video === null || isHttps(video.mediaUrl));
  return Object.freeze({
    id: rid,
    campaignId: cp.id,
    kind: type as Candidate['kind'],
    adomain: cp.adomain,
    cat: cp.cat,
    attr: Object.freeze(attr),
    price,
    landingUrl,
    secure,
    banner,
    native,
    video,
    targeting: cp.targeting,
    deals: cp.deals,
    dealsOnly: cp.dealsOnly,
    bundle: cp.bundle,
    budget: cp.budget,
    pacing: cp.pacing,
    timeZone: cp.timeZone,
    frequencyCap: cp.frequencyCap,
    coppa: cp.coppa,
    personalized: cp.personalized,
    dsa: cp.dsa,
  });
}

function readBanner(rk: Checker, r: Obj): Candidate['banner'] {
  const o = rk.obj(r, 'banner');
  if (!o) return null;
  rk.unknownKeys(o, 'banner.', ['w', 'h', 'imageUrl']);
  return Object.freeze({
    w: rk.num(o, 'w', 'banner.w', 1, 10000, { integer: true }),
    h: rk.num(o, 'h', 'banner.h', 1, 10000, { integer: true }),
    imageUrl: rk.url(o, 'imageUrl', 'banner.imageUrl'),
  });
}

function readNative(rk: Checker, r: Obj): Candidate['native'] {
  const o = rk.obj(r, 'native');
  if (!o) return null;
  rk.unknownKeys(o, 'native.', ['title', 'description', 'sponsoredBy', 'cta', 'image', 'icon']);
  const img = image(rk, o, 'image', 'native.image');
  const icon = image(rk, o, 'icon', 'native.icon');
  return Object.freeze({
    title: rk.str(o, 'title', 'native.title', { nonEmpty: true }),
    description: rk.str(o, 'description', 'native.description', { optional: true }),
    sponsoredBy: rk.str(o, 'sponsoredBy', 'native.sponsoredBy', { optional: true }),
    cta: rk.str(o, 'cta', 'native.cta', { optional: true }),
    image: img ? Object.freeze(img) : null,
    icon: icon ? Object.freeze(icon) : null,
  });
}

function readVideo(rk: Checker, r: Obj): Candidate['video'] {
  const o = rk.obj(r, 'video');
  if (!o) return null;
  rk.unknownKeys(o, 'video.', ['mimes', 'duration', 'protocols', 'w', 'h', 'mediaUrl', 'bitrate']);
  return Object.freeze({
    mimes: Object.freeze(rk.strArray(o, 'mimes', 'video.mimes', { nonEmpty: true, pattern: MIME, item: 'a MIME type ("video/mp4")' }).map((m) => m.toLowerCase())),
    duration: rk.num(o, 'duration', 'video.duration', 1, 3600, { integer: true }),
    // OpenRTB 2.6 list 5.8 (VAST 1.0 … 4.x wrapper, DAAST); 1..30 keeps a bitmask possible.
    protocols: Object.freeze(rk.intArray(o, 'protocols', 'video.protocols', 1, 30, { nonEmpty: true })),
    w: rk.num(o, 'w', 'video.w', 1, 10000, { integer: true }),
    h: rk.num(o, 'h', 'video.h', 1, 10000, { integer: true }),
    mediaUrl: rk.url(o, 'mediaUrl', 'video.mediaUrl'),
    bitrate: o.bitrate === undefined ? 0 : rk.num(o, 'bitrate', 'video.bitrate', 0, 1e6, { integer: true }),
  });
}
