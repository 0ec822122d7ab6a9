/**
 * Currency rates and conversion: one immutable table of units per USD (our prices are in USD),
 * either the static fallback below or one read from a rates file in the format Prebid Server
 * reads (`parseRatesFile`). CurrencyService (currency.service.ts) keeps the current table and
 * swaps in a new one when the file or URL changes.
 */

/** ISO 4217 alphabetic codes: three upper-case letters. */
const ISO_CODE = /^[A-Z]{3}$/;

/** Largest rates file accepted, in bytes (a full ISO 4217 table with every cross rate is ~1 MB). */
export const MAX_RATES_FILE_BYTES = 4 * 1024 * 1024;
/** Most currencies one table may hold (ISO 4217 has ~180 active codes). */
export const MAX_CURRENCIES = 512;
/** A `dataAsOf` further in the future than this (ms) is refused: a wrong file, or a wrong clock. */
export const MAX_FUTURE_AS_OF_MS = 24 * 3600 * 1000;
/** Two quotes of one currency differing by more than this fraction are reported in `warnings`. */
export const INCONSISTENCY_TOLERANCE = 0.01;

export class CurrencyRatesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CurrencyRatesError';
  }
}

/** What the auction needs of a rates table (src/targeting/select.ts): a CurrencyRates, or a test's own. */
export interface Rates {
  /** Units of `cur` per 1 USD, or null for a currency without a rate. */
  unitsPerUsd(cur: string): number | null;
  /** `amount` of `from` in `to`, or null when either currency has no rate. */
  convert(amount: number, from: string, to: string): number | null;
}

/**
 * The currency to bid in, from the request's `cur` (OpenRTB 2.6 §3.2.1): none listed means USD;
 * USD when allowed (our prices are in USD, so no conversion); else the first allowed currency
 * `rates` knows; null when it knows none of them (then the request gets no bid).
 */
export function chooseBidCurrency(cur: readonly string[], rates: Rates): string | null {
  if (cur.length === 0) return 'USD';
  for (let i = 0; i < cur.length; i++) {
    if (cur[i] === 'USD' || cur[i].toUpperCase() === 'USD') return 'USD';
  }
  for (let i = 0; i < cur.length; i++) {
    if (rates.unitsPerUsd(cur[i]) !== null) return cur[i].toUpperCase();
  }
  return null;
}

export class CurrencyRates implements Rates {
  private readonly perUsd: ReadonlyMap<string, number>;

  /**
   * @param unitsPerUsd units of each currency per 1 USD; USD is added as 1 when missing.
   * @param asOf when the rates were true (ms since the epoch).
   * @param source `static`, a file path or a URL: where they came from.
   * @param warnings what the parser noticed but accepted (inconsistent duplicate quotes).
   */
  constructor(
    unitsPerUsd: ReadonlyMap<string, number> | Readonly<Record<string, number>>,
    readonly asOf: number,
    readonly source: string,
    readonly warnings: readonly string[] = [],
  ) {
    const m = new Map<string, number>(unitsPerUsd instanceof Map ? unitsPerUsd : Object.entries(unitsPerUsd));
    if (!m.has('USD')) m.set('USD', 1);
    if (m.get('USD') !== 1) throw new CurrencyRatesError(`USD must be 1 unit per USD, got ${m.get('USD')}`);
    if (m.size > MAX_CURRENCIES) throw new CurrencyRatesError(`at most ${MAX_CURRENCIES} currencies, got ${m.size}`);
    for (const [cur, rate] of m) {
      if (!ISO_CODE.test(cur)) throw new CurrencyRatesError(`${JSON.stringify(cur)} is not an ISO 4217 code (three upper-case letters)`);
      if (!(Number.isFinite(rate) && rate > 0)) throw new CurrencyRatesError(`${cur} must be a finite number > 0, got ${rate}`);
    }
    if (!Number.isFinite(asOf)) throw new CurrencyRatesError('asOf must be a time');
    this.perUsd = m;
    Object.freeze(this);
  }

  /** Units of `cur` per USD, or null for a currency not in the table. Accepts lower case. */
  unitsPerUsd(cur: string): number | null {
    const r = this.perUsd.get(cur);
    if (r !== undefined) return r;
    // Exchanges should send ISO 4217 upper case; tolerate the odd lower-case one (allocates only then).
    return this.perUsd.get(cur.toUpperCase()) ?? null;
  }

  isKnown(cur: string): boolean {
    return this.unitsPerUsd(cur) !== null;
  }

  /** `amount` of `from` in `to`, through USD; null when either currency is unknown. */
  convert(amount: number, from: string, to: string): number | null {
    if (from === to) return amount;
    const f = this.unitsPerUsd(from);
    const t = this.unitsPerUsd(to);
    if (f === null || t === null) return null;
    return (amount / f) * t;
  }

  /** The currency to bid in (see chooseBidCurrency) with these rates. */
  chooseBidCurrency(cur: readonly string[]): string | null {
    return chooseBidCurrency(cur, this);
  }

  /** The codes in the table, USD first. */
  currencies(): string[] {
    return ['USD', ...[...this.perUsd.keys()].filter((c) => c !== 'USD').sort()];
  }
}

/**
 * The fallback table: approximate mid-market rates of 2025-01-02 (units per 1 USD), rounded. In
 * use only when no rates file or URL is configured (or, for a URL, until its first answer). Good
 * enough to answer in the currency an exchange asks for; not to compare bids with floors in
 * other currencies for long: exchanges convert with their own daily rates.
 */
export const STATIC_RATES: CurrencyRates = new CurrencyRates(
  {
    USD: 1,
    EUR: 0.97,
    GBP: 0.8,
    JPY: 157.2,
    CAD: 1.44,
    AUD: 1.61,
    NZD: 1.78,
    CHF: 0.91,
    CNY: 7.3,
    HKD: 7.77,
    SGD: 1.37,
    INR: 85.8,
    KRW: 1470,
    BRL: 6.18,
    MXN: 20.6,
    SEK: 11.05,
    NOK: 11.35,
    DKK: 7.2,
    PLN: 4.13,
    CZK: 24.3,
    HUF: 397,
    TRY: 35.4,
    ZAR: 18.8,
    ILS: 3.65,
    AED: 3.6725,
  },
  Date.UTC(2025, 0, 2),
  'static',
);

/**
 * Plausible units per USD of any currency: from 0.0001 (a troy ounce of gold, XAU, is ~0.0003) to
 * ten million (the weakest currencies trade at tens or hundreds of thousands). A rate outside is a
 * broken source (`1e9`, `1e-9`), never a market.
 */
export const PLAUSIBLE_UNITS_PER_USD = { min: 1e-4, max: 1e7 } as const;
/**
 * A currency of the static table must stay within this factor of its rate there (EUR from 0.097
 * to 9.7): a rate quoted in cents, or in thousands, is refused; a decade of even Turkish inflation
 * stays inside.
 */
export const REFERENCE_BAND = 10;
export { DEFAULT_MAX_CHANGE_PCT } from '../config/config';

/** `1000000000`, `1e-9`, `0.86`: a rate as a person reads it. */
function show(n: number): string {
  return String(Number(n.toPrecision(6)));
}

/**
 * The rates of `rates` no market gives (each named, with the bounds it broke): outside
 * PLAUSIBLE_UNITS_PER_USD, or, for a currency of the static table, outside REFERENCE_BAND of its
 * rate there. Empty when the table is plausible.
 */
export function implausibleRates(rates: CurrencyRates): string[] {
  const out: string[] = [];
  for (const cur of rates.currencies()) {
    const r = rates.unitsPerUsd(cur)!;
    const ref = STATIC_RATES.unitsPerUsd(cur);
    const [min, max] = ref !== null ? [ref / REFERENCE_BAND, ref * REFERENCE_BAND] : [PLAUSIBLE_UNITS_PER_USD.min, PLAUSIBLE_UNITS_PER_USD.max];
    if (r < min || r > max) out.push(`${cur}: ${show(r)} per USD is not plausible (expected ${show(min)} to ${show(max)})`);
  }
  return out;
}

/**
 * The currencies whose rate moved by more than `maxChangePct` percent from `prev` to `next`, either
 * way (100: at most twice or half); currencies in only one of the tables are not compared; 0 turns
 * the check off.
 */
export function ratesJump(prev: Rates & { currencies(): string[] }, next: CurrencyRates, maxChangePct: number): string[] {
  if (!(maxChangePct > 0)) return [];
  const limit = 1 + maxChangePct / 100;
  const out: string[] = [];
  for (const cur of next.currencies()) {
    const a = prev.unitsPerUsd(cur);
    const b = next.unitsPerUsd(cur)!;
    if (a === null) continue;
    const ratio = b / a;
    if (ratio > limit || ratio < 1 / limit) out.push(`${cur}: ${show(a)} → ${show(b)} per USD, ×${show(ratio)} since the last refresh, past CURRENCY_MAX_CHANGE_PCT=${maxChangePct}`);
  }
  return out;
}

/** How long reference rates stay (CURRENCY_MAX_DRIFT_PCT): a day, then the rates in use replace them. */
export const DRIFT_PERIOD_MS = 24 * 3600 * 1000;
export { DEFAULT_MAX_DRIFT_PCT } from '../config/config';

/**
 * The currencies of `next` more than `maxDriftPct` percent (either way) from their reference rate
 * (units per USD in `reference`, the rates in use at `since`): the total move a walk of refreshes,
 * each within CURRENCY_MAX_CHANGE_PCT, may make. Currencies without a reference are not compared;
 * 0 turns the check off.
 */
export function ratesDrift(reference: ReadonlyMap<string, number>, since: number, next: CurrencyRates, maxDriftPct: number): string[] {
  if (!(maxDriftPct > 0)) return [];
  const limit = 1 + maxDriftPct / 100;
  const out: string[] = [];
  for (const cur of next.currencies()) {
    const a = reference.get(cur);
    const b = next.unitsPerUsd(cur)!;
    if (a === undefined) continue;
    const ratio = b / a;
    if (ratio > limit || ratio < 1 / limit) {
      out.push(`${cur}: ${show(a)} → ${show(b)} per USD, ×${show(ratio)} against the reference rates of ${new Date(since).toISOString()}, past CURRENCY_MAX_DRIFT_PCT=${maxDriftPct}`);
    }
  }
  return out;
}

type Obj = Record<string, unknown>;

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** `2026-11-23` (midnight UTC) or an ISO 8601 time with a zone (`2026-11-23T10:00:00Z`). */
function parseTime(v: unknown, field: string): number {
  if (typeof v !== 'string') throw new CurrencyRatesError(`${field} must be a date (YYYY-MM-DD) or an ISO 8601 time, got ${JSON.stringify(v)}`);
  const dateOnly = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  let t: number;
  if (dateOnly !== null) {
    t = Date.UTC(Number(dateOnly[1]), Number(dateOnly[2]) - 1, Number(dateOnly[3]));
    // Date.UTC rolls 2026-02-31 over into March: refuse dates that do not exist.
    if (new Date(t).toISOString().slice(0, 10) !== v) t = NaN;
  } else if (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(v)) {
    t = Date.parse(v);
  } else {
    t = NaN;
  }
  if (!Number.isFinite(t)) throw new CurrencyRatesError(`${field} must be a date (YYYY-MM-DD) or an ISO 8601 time with a zone, got ${JSON.stringify(v)}`);
  return t;
}

/**
 * Reads a currency file in the format Prebid Server reads:
 *
 *     {"dataAsOf": "2026-11-23", "generatedAt": "2026-11-23T10:00:00Z",
 *      "conversions": {"USD": {"EUR": 0.86, "GBP": 0.75}, "EUR": {"CHF": 0.93}}}
 *
 * `conversions[A][B]` = r means 1 A is worth r B. Every currency is brought to units per USD:
 * first from the USD row (USD → B), then from quotes against USD in other rows (A → USD, inverted),
 * then through currencies already placed, breadth first from USD (a quote A → B places B when A is
 * placed, and A when B is), in the order of the file. A currency that no chain of quotes links to USD is
 * left out (and named in `warnings`). When a currency is quoted more than once, the first
 * placement in that order wins, being the most direct; the other quotes are not used, and those
 * that disagree with it by more than INCONSISTENCY_TOLERANCE are named in `warnings`, so that a
 * wrong row is visible in the logs without refusing a file whose other rates are right.
 *
 * Strict otherwise: not JSON, not an object, a missing or bad `dataAsOf`, a code that is not three
 * upper-case letters, a rate that is not a finite number > 0, more than MAX_CURRENCIES currencies
 * or a text over MAX_RATES_FILE_BYTES are errors (CurrencyRatesError, naming the field).
 */
export function parseRatesFile(text: string, source: string, now = Date.now()): CurrencyRates {
  if (Buffer.byteLength(text, 'utf8') > MAX_RATES_FILE_BYTES) throw new CurrencyRatesError(`rates file over ${MAX_RATES_FILE_BYTES} bytes`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CurrencyRatesError(`rates file is not JSON: ${(e as Error).message}`);
  }
  if (!isObj(doc)) throw new CurrencyRatesError('rates file must be a JSON object');
  const asOf = parseTime(doc.dataAsOf, 'dataAsOf');
  if (asOf > now + MAX_FUTURE_AS_OF_MS) throw new CurrencyRatesError(`dataAsOf ${String(doc.dataAsOf)} is in the future`);
  if (doc.generatedAt !== undefined) parseTime(doc.generatedAt, 'generatedAt');
  const conv = doc.conversions;
  if (!isObj(conv)) throw new CurrencyRatesError('conversions must be an object of objects: {"USD": {"EUR": 0.86, …}, …}');

  // Validated quotes, in file order.
  const quotes: Array<[string, string, number]> = [];
  const codes = new Set<string>(['USD']);
  for (const from of Object.keys(conv)) {
    if (!ISO_CODE.test(from)) throw new CurrencyRatesError(`conversions: ${JSON.stringify(from)} is not an ISO 4217 code (three upper-case letters)`);
    const row = conv[from];
    if (!isObj(row)) throw new CurrencyRatesError(`conversions.${from} must be an object of rates`);
    codes.add(from);
    for (const to of Object.keys(row)) {
      if (!ISO_CODE.test(to)) throw new CurrencyRatesError(`conversions.${from}: ${JSON.stringify(to)} is not an ISO 4217 code (three upper-case letters)`);
      const r = row[to];
      if (typeof r !== 'number' || !Number.isFinite(r) || r <= 0) throw new CurrencyRatesError(`conversions.${from}.${to} must be a finite number > 0, got ${JSON.stringify(r)}`);
      if (from === to && r !== 1) throw new CurrencyRatesError(`conversions.${from}.${to} must be 1, got ${r}`);
      codes.add(to);
      if (codes.size > MAX_CURRENCIES) throw new CurrencyRatesError(`more than ${MAX_CURRENCIES} currencies`);
      quotes.push([from, to, r]);
    }
  }

  // A breadth-first walk from USD over the quotes (each usable both ways): linear in their number.
  const perUsd = new Map<string, number>([['USD', 1]]);
  const queue: string[] = ['USD'];
  const place = (cur: string, units: number): void => {
    if (perUsd.has(cur) || !(Number.isFinite(units) && units > 0)) return;
    perUsd.set(cur, units);
    queue.push(cur);
  };
  const edges = new Map<string, Array<[string, number, boolean]>>();
  const edge = (a: string, b: string, r: number, inverse: boolean): void => {
    let list = edges.get(a);
    if (list === undefined) edges.set(a, (list = []));
    list.push([b, r, inverse]);
  };
  for (const [from, to, r] of quotes) {
    edge(from, to, r, false);
    edge(to, from, r, true);
  }
  // USD's own row first, then the other rows' quotes against USD: the most direct quotes win.
  for (const [from, to, r] of quotes) if (from === 'USD') place(to, r);
  for (const [from, to, r] of quotes) if (to === 'USD') place(from, 1 / r);
  for (let i = 1; i < queue.length; i++) {
    const cur = queue[i];
    const units = perUsd.get(cur)!;
    for (const [other, r, inverse] of edges.get(cur) ?? []) place(other, inverse ? units / r : units * r);
  }

  const warnings: string[] = [];
  for (const [from, to, r] of quotes) {
    const f = perUsd.get(from);
    const t = perUsd.get(to);
    if (f === undefined || t === undefined || from === to) continue;
    const implied = t / f;
    if (Math.abs(r / implied - 1) > INCONSISTENCY_TOLERANCE) {
      warnings.push(`conversions.${from}.${to} = ${r} disagrees with the rate used, ${implied.toPrecision(6)} (through USD); ignored`);
    }
  }
  const unplaced = [...codes].filter((c) => !perUsd.has(c));
  if (unplaced.length > 0) warnings.push(`no quote links ${unplaced.join(', ')} to USD; left out`);
  return new CurrencyRates(perUsd, asOf, source, warnings);
}

/** Ticks of 0.0001 per unit: bid prices are rounded down to the 4th decimal. */
const TICKS = 10_000;

/**
 * `usd` at `unitsPerUsd` units per USD, rounded DOWN to the 4th decimal and never above `usd` once
 * converted back at the same rate (`rates.convert(price, cur, 'USD') <= usd`), so a bid converted
 * back by an exchange with these rates never exceeds what we meant to pay; NaN for a price no
 * double counts in ticks (over ~4.5 × 10^11 units). The auction prices every candidate with it
 * (src/targeting/select.ts), so floors are compared with what is sent.
 */
export function priceIn(usd: number, unitsPerUsd: number): number {
  let ticks = Math.floor(usd * unitsPerUsd * TICKS);
  // Past 2^52 ticks a double no longer counts single ticks: no real bid price is anywhere near.
  if (ticks >= 2 ** 52) return NaN;
  // The product may land a hair under an exact tick (0.29 × 10000 = 2899.9999…): take the tick above if it still fits.
  if ((ticks + 1) / TICKS / unitsPerUsd <= usd) ticks++;
  while (ticks > 0 && ticks / TICKS / unitsPerUsd > usd) ticks--;
  return ticks / TICKS;
}

/**
 * A price between `floor` and a 4-decimal `max` (both in one currency) put on the 4-decimal grid:
 * rounded down, or, when that falls below the floor (a floor with more decimals, or a price at the
 * floor), up to the first tick at or above it, which is never above `max` since `max` ≥ floor is a
 * tick itself. The shaded first-price bid goes through it (src/bidding/auction.ts).
 */
export function onTick(price: number, floor: number): number {
  // A hair of a tick absorbs the product's float noise (0.29 × 10000 = 2899.9999…).
  const down = Math.floor(price * TICKS + 1e-6) / TICKS;
  return down >= floor ? down : Math.ceil(floor * TICKS - 1e-6) / TICKS;
}
