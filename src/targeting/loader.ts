/**
 * Campaign file loader: checks the JSON document described in data/README.md against its TypeBox
 * schema (below, the one description of the format) and flattens each creative with its
 * campaign's fields into a Candidate. Pure (no I/O): CampaignStore reads the file.
 *
 * Every problem found is reported, each naming its entry, e.g.
 *   campaigns[3] (id "cmp-004") creatives[1] (id "cmp-004-cr012"): price: expected a number > 0 and <= 1000, got -1
 * The wording comes from each schema's `expected`; what a schema cannot say (unique ids, daily
 * budget within the total, the creative's own kind of object) is checked after it.
 */
import { FormatRegistry, Type, type Static, type TObject, type TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType, type ValueError } from '@sinclair/typebox/errors';
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

// ---- formats: strings checked by code (list entries are taken trimmed) ---------------------------

/** Registered once per process under a name of this module's own (TypeBox's registry is global). */
function format(name: string, test: (s: string) => boolean): string {
  const full = `campaign-file-${name}`;
  if (!FormatRegistry.Has(full)) FormatRegistry.Set(full, test);
  return full;
}

const DOMAIN = /^(?!-)[a-z0-9-]+(\.[a-z0-9-]+)+$/i;
/** IAB content taxonomy 1.0/2.x style ids: IAB3, IAB3-1. */
const IAB_CAT = /^IAB\d{1,2}(-\d{1,3})?$/;
const COUNTRY = /^[A-Z]{3}$/;
const MIME = /^[a-z]+\/[a-z0-9.+-]+$/i;

/** An absolute http(s) URL; stored in its WHATWG `href` form (see httpUrl). */
const URL_FORMAT = format('url', (s) => httpUrl(s) !== null);
const TIME_ZONE_FORMAT = format('time-zone', (s) => timeZone(s) !== null);
const DSA_TEXT_FORMAT = format('dsa-text', (s) => s.trim() !== '' && Buffer.byteLength(s, 'utf8') <= DSA_TEXT_MAX);
const trimmed = (name: string, re: RegExp): string => format(name, (s) => re.test(s.trim()));

/**
 * An absolute http(s) URL in its normalized form (WHATWG `href`: percent-encoded, host in
 * punycode), so that it is ASCII: always a valid `location` header, and safe to quote.
 */
function httpUrl(s: string): string | null {
  try {
    const u = new URL(s);
    return u.protocol === 'https:' || u.protocol === 'http:' ? u.href : null;
  } catch {
    return null;
  }
}

/** An IANA zone name the platform knows ("Europe/Paris", "UTC"), in its canonical spelling. */
function timeZone(s: string): string | null {
  if (s === '') return null;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: s }).resolvedOptions().timeZone;
  } catch {
    return null; // RangeError: not a zone the platform knows
  }
}

// ---- schema builders: each schema carries the `expected` its problems quote -------------------------

function str(expected = 'a string') {
  return Type.String({ expected });
}
function nonEmpty(expected = 'a non-empty string') {
  return Type.String({ pattern: '\\S', expected });
}
function url() {
  return Type.String({ format: URL_FORMAT, expected: 'an absolute http(s) URL' });
}
function num(min: number, max: number, opts: { exclusiveMin?: boolean } = {}) {
  const expected = `a number ${opts.exclusiveMin ? '>' : '>='} ${min} and <= ${max}`;
  return Type.Number(opts.exclusiveMin ? { exclusiveMinimum: min, maximum: max, expected } : { minimum: min, maximum: max, expected });
}
function whole(min: number, max: number) {
  return Type.Integer({ minimum: min, maximum: max, expected: `a whole number >= ${min} and <= ${max}` });
}
/** An array of strings, each a trimmed string matching `item` (a format name) or at least non-empty. */
function strings(opts: { nonEmpty?: boolean; format?: string; item?: string } = {}) {
  const item = opts.item ?? 'a non-empty string';
  const entry = opts.format !== undefined ? Type.String({ format: opts.format, expected: item }) : nonEmpty(item);
  return Type.Array(entry, { minItems: opts.nonEmpty ? 1 : 0, expected: `${opts.nonEmpty ? 'a non-empty' : 'an'} array, each ${item}` });
}
function wholes(min: number, max: number, opts: { nonEmpty?: boolean } = {}) {
  const entry = Type.Integer({ minimum: min, maximum: max, expected: `a whole number from ${min} to ${max}` });
  return Type.Array(entry, { minItems: opts.nonEmpty ? 1 : 0, expected: `${opts.nonEmpty ? 'a non-empty' : 'an'} array of whole numbers from ${min} to ${max}` });
}
const bool = () => Type.Boolean({ expected: 'true or false' });
/** An object with exactly these fields (an unknown one is a problem naming the allowed ones). */
function obj<P extends Record<string, TSchema>>(properties: P, expected = 'an object') {
  return Type.Object(properties, { additionalProperties: false, expected });
}
/** null, or `schema`: a problem with anything else is reported as `schema`'s, inside it. */
function orNull<T extends TSchema>(schema: T) {
  return Type.Union([Type.Null(), schema], { nullable: true });
}
const free = () => Type.Optional(Type.Unknown());

// ---- the file format ---------------------------------------------------------------------------

const IMAGE = obj({ url: url(), w: whole(1, 10000), h: whole(1, 10000) }, 'an object {url, w, h} or null');

const KINDS = {
  banner: obj({ w: whole(1, 10000), h: whole(1, 10000), imageUrl: url() }),
  native: obj({
    title: nonEmpty(),
    description: Type.Optional(str()),
    sponsoredBy: Type.Optional(str()),
    cta: Type.Optional(str()),
    image: Type.Optional(orNull(IMAGE)),
    icon: Type.Optional(orNull(IMAGE)),
  }),
  video: obj({
    mimes: strings({ nonEmpty: true, format: trimmed('mime', MIME), item: 'a MIME type ("video/mp4")' }),
    duration: whole(1, 3600),
    // OpenRTB 2.6 list 5.8 (VAST 1.0 … 4.x wrapper, DAAST); 1..30 keeps a bitmask possible.
    protocols: wholes(1, 30, { nonEmpty: true }),
    w: whole(1, 10000),
    h: whole(1, 10000),
    mediaUrl: url(),
    bitrate: Type.Optional(whole(0, 1e6)),
  }),
};
type Kind = keyof typeof KINDS;

/** A creative; its `banner`/`native`/`video` object is checked by KINDS against its `type`. */
const CREATIVE = obj({
  id: nonEmpty(),
  type: Type.Union([Type.Literal('banner'), Type.Literal('native'), Type.Literal('video')], { expected: '"banner", "native" or "video"' }),
  /** CPM in USD. */
  price: num(0, MAX_PRICE, { exclusiveMin: true }),
  attr: Type.Optional(wholes(1, 1000)),
  /** Overrides the campaign's landingUrl. */
  landingUrl: Type.Optional(url()),
  banner: free(),
  native: free(),
  video: free(),
  comment: free(),
});

const BUDGET = obj({ total: num(0, 1e12, { exclusiveMin: true }), daily: num(0, 1e12, { exclusiveMin: true }) });

/** A campaign; its creatives are checked one by one (CREATIVE). */
const CAMPAIGN = obj({
  id: nonEmpty(),
  name: Type.Optional(str()),
  adomain: strings({ nonEmpty: true, format: trimmed('domain', DOMAIN), item: 'a domain name ("example.com")' }),
  cat: strings({ format: trimmed('iab-category', IAB_CAT), item: 'an IAB category ("IAB3" or "IAB3-1")' }),
  landingUrl: url(),
  budget: BUDGET,
  /** "even" (along the campaign's day) or "asap" (as fast as traffic allows, the default: files written before pacing keep their behaviour). */
  pacing: Type.Optional(Type.Union([Type.Literal('even'), Type.Literal('asap')], { expected: '"even" or "asap"' })),
  /** The curve an even campaign's day follows: "uniform" (the default) or "traffic" (shaped by the campaign's traffic of previous days). */
  pacingCurve: Type.Optional(Type.Union([Type.Literal('uniform'), Type.Literal('traffic')], { expected: '"uniform" or "traffic"' })),
  /** IANA time zone of the campaign's day (daily budget, pacing curve). Default "UTC". */
  timeZone: Type.Optional(Type.String({ format: TIME_ZONE_FORMAT, expected: 'an IANA time zone name ("Europe/Paris", "America/New_York", "UTC")' })),
  frequencyCap: Type.Optional(orNull(obj({ perDay: whole(1, 1e6) }))),
  bundle: Type.Optional(orNull(nonEmpty())),
  targeting: Type.Optional(
    obj({
      inventory: Type.Optional(Type.Union([Type.Literal('site'), Type.Literal('app'), Type.Null()], { expected: '"site", "app" or null' })),
      deviceTypes: Type.Optional(wholes(1, 30)),
      os: Type.Optional(strings()),
      countries: Type.Optional(strings({ format: trimmed('country', COUNTRY), item: 'an ISO-3166-1 alpha-3 code ("USA")' })),
    }),
  ),
  deals: Type.Optional(strings()),
  dealsOnly: Type.Optional(bool()),
  /** false: never bid on child-directed inventory. Default true. */
  coppa: Type.Optional(bool()),
  /** true: relies on user-level data (bids only where the request allows it). Default false. */
  personalized: Type.Optional(bool()),
  /** DSA transparency information (`bid.ext.dsa`). */
  dsa: Type.Optional(
    orNull(
      obj({
        behalf: Type.String({ format: DSA_TEXT_FORMAT, expected: `a non-empty string of at most ${DSA_TEXT_MAX} characters (UTF-8 bytes)` }),
        paid: Type.String({ format: DSA_TEXT_FORMAT, expected: `a non-empty string of at most ${DSA_TEXT_MAX} characters (UTF-8 bytes)` }),
        adrender: Type.Optional(Type.Union([Type.Literal(0), Type.Literal(1)], { expected: '0 or 1' })),
      }),
    ),
  ),
  creatives: Type.Array(Type.Unknown(), { minItems: 1, expected: 'a non-empty array' }),
  comment: free(),
});

/** The file; its campaigns are checked one by one (CAMPAIGN). */
const FILE = obj(
  {
    version: Type.Literal(CAMPAIGN_FILE_VERSION, { expected: String(CAMPAIGN_FILE_VERSION) }),
    /** Currency of every price in the file; only "USD" is accepted. */
    currency: Type.Optional(Type.Literal('USD', { expected: '"USD" (prices are USD CPMs)' })),
    comment: free(),
    campaigns: Type.Array(Type.Unknown(), { expected: 'an array' }),
  },
  'an object {version, campaigns}',
);

export type CampaignEntry = Static<typeof CAMPAIGN>;
export type CreativeEntry = Static<typeof CREATIVE>;

const CHECK = {
  file: TypeCompiler.Compile(FILE),
  campaign: TypeCompiler.Compile(CAMPAIGN),
  creative: TypeCompiler.Compile(CREATIVE),
  budget: TypeCompiler.Compile(BUDGET),
  banner: TypeCompiler.Compile(KINDS.banner),
  native: TypeCompiler.Compile(KINDS.native),
  video: TypeCompiler.Compile(KINDS.video),
};

// ---- problems ------------------------------------------------------------------------------------

function show(v: unknown): string {
  if (v === undefined) return 'nothing';
  const s = JSON.stringify(v);
  return s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The problems of one file, capped at MAX_PROBLEMS. */
class Problems {
  readonly list: string[] = [];

  add(label: string, field: string, expected: string, got: unknown): void {
    if (this.list.length < MAX_PROBLEMS) this.list.push(`${label}: ${field}: expected ${expected}, got ${show(got)}`);
    else if (this.list.length === MAX_PROBLEMS) this.list.push('... (more problems not shown)');
  }

  /**
   * Checks `value` against `check`; each problem is reported under `label`, its field named from
   * `prefix` (the value's own field, '' for an entry) and the schema error's JSON pointer. One
   * problem per field: the first the schema finds. True when there was none.
   */
  check(check: TypeCheck<TSchema>, value: unknown, label: string, prefix: string, entry = '(entry)'): boolean {
    if (check.Check(value)) return true;
    const seen = new Set<string>();
    const visit = (e: ValueError): void => {
      // null or an object: a wrong object is reported from inside it, not as "not null".
      if (e.type === ValueErrorType.Union && e.schema.nullable === true && e.value !== null) {
        for (const inner of e.errors[1]) visit(inner);
        return;
      }
      if (seen.has(e.path)) return;
      seen.add(e.path);
      const field = fieldName(value, prefix, e.path) || entry;
      if (e.type === ValueErrorType.ObjectAdditionalProperties) {
        const allowed = Object.keys((e.schema as TObject).properties);
        this.add(label, field, `no such field (allowed: ${allowed.join(', ')})`, e.value);
      } else this.add(label, field, String(e.schema.expected ?? e.message), e.value);
    };
    for (const e of check.Errors(value)) visit(e);
    return false;
  }
}

/** `budget.daily`, `targeting.countries[0]`: a JSON pointer into `root` as the problems name it. */
function fieldName(root: unknown, prefix: string, pointer: string): string {
  let out = prefix;
  let at: unknown = root;
  for (const raw of pointer === '' ? [] : pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(at)) out += `[${key}]`;
    else out += out === '' ? key : `.${key}`;
    at = isObj(at) || Array.isArray(at) ? (at as Record<string, unknown>)[key] : undefined;
  }
  return out;
}

function entryLabel(base: string, v: unknown): string {
  return isObj(v) && typeof v.id === 'string' && v.id !== '' ? `${base} (id ${JSON.stringify(v.id)})` : base;
}

// ---- the loader ---------------------------------------------------------------------------------

/** Lower-cases and drops a leading "www." so that badv entries match however they are written. */
export function normalizeDomain(d: string): string {
  const l = d.trim().toLowerCase();
  return l.startsWith('www.') ? l.slice(4) : l;
}

function isHttps(url: string): boolean {
  return url.startsWith('https://');
}

/** What loading one file keeps across its entries. */
interface LoadContext {
  readonly problems: Problems;
  readonly campaignIds: Set<string>;
  /** Creative id → label of its campaign. */
  readonly creativeIds: Map<string, string>;
}

/** A campaign's fields, checked, as every one of its candidates carries them. */
interface CampaignParts {
  readonly id: string;
  readonly landingUrl: string;
  readonly adomain: readonly string[];
  readonly cat: readonly string[];
  readonly budget: { readonly total: number; readonly daily: number };
  readonly pacing: 'even' | 'asap';
  readonly pacingCurve: 'uniform' | 'traffic';
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
  const ctx: LoadContext = { problems: new Problems(), campaignIds: new Set(), creativeIds: new Map() };
  if (!ctx.problems.check(CHECK.file, json, 'file', '', '(root)') && !(isObj(json) && Array.isArray(json.campaigns))) {
    throw new CampaignFileError(ctx.problems.list, source);
  }
  const campaigns = (json as { campaigns: unknown[] }).campaigns;
  const out: Candidate[] = [];
  for (let ci = 0; ci < campaigns.length; ci++) {
    const c: unknown = campaigns[ci];
    const label = entryLabel(`campaigns[${ci}]`, c);
    const campaign = readCampaign(c, label, ctx);
    if (!isObj(c) || !Array.isArray(c.creatives)) continue;
    for (let ri = 0; ri < c.creatives.length; ri++) {
      const cand = readCreative(c.creatives[ri], label, ri, campaign, ctx);
      if (cand !== null) out.push(cand);
    }
  }
  if (ctx.problems.list.length > 0) throw new CampaignFileError(ctx.problems.list, source);
  return out;
}

/** The campaign's own fields (not its creatives), or null when they have a problem (recorded). */
function readCampaign(c: unknown, label: string, ctx: LoadContext): CampaignParts | null {
  let valid = ctx.problems.check(CHECK.campaign, c, label, '');
  if (!isObj(c)) return null;
  if (typeof c.id === 'string' && c.id !== '') {
    if (ctx.campaignIds.has(c.id)) {
      ctx.problems.add(label, 'id', 'an id unique in the file', c.id);
      valid = false;
    }
    ctx.campaignIds.add(c.id);
  }
  // Between fields, each checked once it is right itself.
  const b = c.budget;
  if (CHECK.budget.Check(b) && b.daily > b.total) {
    ctx.problems.add(label, 'budget.daily', `at most budget.total (${b.total})`, b.daily);
    valid = false;
  }
  const hasDeals = Array.isArray(c.deals) && c.deals.some((d) => typeof d === 'string' && d.trim() !== '');
  if (c.dealsOnly === true && !hasDeals) {
    ctx.problems.add(label, 'dealsOnly', 'false when the campaign lists no deals', c.dealsOnly);
    valid = false;
  }
  if (!valid) return null;
  const e = c as CampaignEntry;
  const t = e.targeting;
  return {
    id: e.id,
    landingUrl: httpUrl(e.landingUrl)!,
    adomain: Object.freeze(e.adomain.map(normalizeDomain)),
    cat: Object.freeze(e.cat.map((s) => s.trim())),
    budget: Object.freeze({ total: e.budget.total, daily: e.budget.daily }),
    pacing: e.pacing ?? 'asap',
    pacingCurve: e.pacingCurve ?? 'uniform',
    timeZone: e.timeZone === undefined ? 'UTC' : timeZone(e.timeZone)!,
    frequencyCap: e.frequencyCap ? Object.freeze({ perDay: e.frequencyCap.perDay }) : null,
    bundle: e.bundle ?? null,
    targeting: Object.freeze({
      inventory: t?.inventory ?? null,
      deviceTypes: Object.freeze(t?.deviceTypes ?? []),
      os: Object.freeze((t?.os ?? []).map((s) => s.trim().toLowerCase())),
      countries: Object.freeze((t?.countries ?? []).map((s) => s.trim())),
    }),
    deals: Object.freeze((e.deals ?? []).map((d) => d.trim())),
    dealsOnly: e.dealsOnly ?? false,
    coppa: e.coppa ?? true,
    personalized: e.personalized ?? false,
    dsa: e.dsa ? Object.freeze({ behalf: e.dsa.behalf, paid: e.dsa.paid, adrender: e.dsa.adrender ?? 0 }) : null,
  };
}

/** One creative with its campaign's fields, or null when it or its campaign has a problem (recorded). */
function readCreative(r: unknown, campaignLabel: string, ri: number, cp: CampaignParts | null, ctx: LoadContext): Candidate | null {
  const label = entryLabel(`${campaignLabel} creatives[${ri}]`, r);
  let valid = ctx.problems.check(CHECK.creative, r, label, '');
  if (!isObj(r)) return null;
  if (typeof r.id === 'string' && r.id !== '') {
    const prev = ctx.creativeIds.get(r.id);
    if (prev !== undefined) {
      ctx.problems.add(label, 'id', `an id unique in the file (already used in ${prev})`, r.id);
      valid = false;
    } else ctx.creativeIds.set(r.id, campaignLabel);
  }
  const type = r.type;
  for (const other of ['banner', 'native', 'video'] as const) {
    if (other !== type && r[other] !== undefined) {
      ctx.problems.add(label, other, `no ${other} object on a ${String(type)} creative`, r[other]);
      valid = false;
    }
  }
  if (type !== 'banner' && type !== 'native' && type !== 'video') return null;
  if (!ctx.problems.check(CHECK[type], r[type], label, type, type) || !valid || cp === null) return null;
  return candidate(r as CreativeEntry, type, cp);
}

function candidate(r: CreativeEntry, kind: Kind, cp: CampaignParts): Candidate {
  let banner: Candidate['banner'] = null;
  let native: Candidate['native'] = null;
  let video: Candidate['video'] = null;
  if (kind === 'banner') {
    const b = r.banner as Static<typeof KINDS.banner>;
    banner = Object.freeze({ w: b.w, h: b.h, imageUrl: httpUrl(b.imageUrl)! });
  } else if (kind === 'native') {
    const n = r.native as Static<typeof KINDS.native>;
    const image = (i: Static<typeof IMAGE> | null | undefined) => (i ? Object.freeze({ url: httpUrl(i.url)!, w: i.w, h: i.h }) : null);
    native = Object.freeze({
      title: n.title,
      description: n.description ?? '',
      sponsoredBy: n.sponsoredBy ?? '',
      cta: n.cta ?? '',
      image: image(n.image),
      icon: image(n.icon),
    });
  } else {
    const v = r.video as Static<typeof KINDS.video>;
    video = Object.freeze({
      mimes: Object.freeze(v.mimes.map((m) => m.trim().toLowerCase())),
      duration: v.duration,
      protocols: Object.freeze(v.protocols),
      w: v.w,
      h: v.h,
      mediaUrl: httpUrl(v.mediaUrl)!,
      bitrate: v.bitrate ?? 0,
    });
  }
  const landingUrl = r.landingUrl === undefined ? cp.landingUrl : httpUrl(r.landingUrl)!;
  // Secure when every URL the creative uses is https.
  const secure =
    isHttps(landingUrl) &&
    (banner === null || isHttps(banner.imageUrl)) &&
    (native === null || ((native.image === null || isHttps(native.image.url)) && (native.icon === null || isHttps(native.icon.url)))) &&
    (video === null || isHttps(video.mediaUrl));
  return Object.freeze({
    id: r.id,
    campaignId: cp.id,
    kind,
    adomain: cp.adomain,
    cat: cp.cat,
    attr: Object.freeze(r.attr ?? []),
    price: r.price,
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
    pacingCurve: cp.pacingCurve,
    timeZone: cp.timeZone,
    frequencyCap: cp.frequencyCap,
    coppa: cp.coppa,
    personalized: cp.personalized,
    dsa: cp.dsa,
  });
}
