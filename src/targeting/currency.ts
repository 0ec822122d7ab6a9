/**
 * Currency conversion for prices and floors. The auction takes its rates as a `Rates` object
 * (src/targeting/types.ts); `staticRates` is that object over the table below.
 *
 * STATIC TABLE: approximate mid-market rates of 2025-01-02 (units of the currency per 1 USD),
 * rounded. They are good enough to compare a bid with a floor and to answer in the currency an
 * exchange asks for; they are not a treasury feed. Replace the table (or load it from a file at
 * start-up) before bidding real money in currencies other than USD.
 */
import type { Rates } from './types';

export const RATES_DATE = '2025-01-02';

const UNITS_PER_USD: ReadonlyMap<string, number> = new Map<string, number>([
  ['USD', 1],
  ['EUR', 0.97],
  ['GBP', 0.8],
  ['JPY', 157.2],
  ['CAD', 1.44],
  ['AUD', 1.61],
  ['NZD', 1.78],
  ['CHF', 0.91],
  ['CNY', 7.3],
  ['HKD', 7.77],
  ['SGD', 1.37],
  ['INR', 85.8],
  ['KRW', 1470],
  ['BRL', 6.18],
  ['MXN', 20.6],
  ['SEK', 11.05],
  ['NOK', 11.35],
  ['DKK', 7.2],
  ['PLN', 4.13],
  ['CZK', 24.3],
  ['HUF', 397],
  ['TRY', 35.4],
  ['ZAR', 18.8],
  ['ILS', 3.65],
  ['AED', 3.6725],
]);

/** Units of `cur` per USD, or null for a currency we do not know. Accepts lower case. */
export function unitsPerUsd(cur: string): number | null {
  const r = UNITS_PER_USD.get(cur);
  if (r !== undefined) return r;
  // Exchanges should send ISO-4217 upper case; tolerate the odd lower-case one (allocates only then).
  return UNITS_PER_USD.get(cur.toUpperCase()) ?? null;
}

/** True when `cur` is in the table. */
export function isKnownCurrency(cur: string): boolean {
  return unitsPerUsd(cur) !== null;
}

/** Converts `amount` from one currency into another; null when either currency is unknown. */
export function convert(amount: number, from: string, to: string): number | null {
  if (from === to) return amount;
  const f = unitsPerUsd(from);
  const t = unitsPerUsd(to);
  if (f === null || t === null) return null;
  return (amount / f) * t;
}

/** The static table as the auction's `Rates`. */
export const staticRates: Rates = Object.freeze({ unitsPerUsd, convert });

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

/** The currencies in the table, for docs and tests. */
export function knownCurrencies(): string[] {
  return [...UNITS_PER_USD.keys()];
}
