/**
 * Conversion with the static fallback table (src/currency/rates.ts: STATIC_RATES), for the callers
 * that do not yet take the live rates of CurrencyService. src/currency is the home of currency
 * conversion; these functions only keep the older call sites working on the same single table.
 */
import { STATIC_RATES } from '../currency/rates';

/** Units of `cur` per USD in the static table, or null for a currency it does not know. Accepts lower case. */
export function unitsPerUsd(cur: string): number | null {
  return STATIC_RATES.unitsPerUsd(cur);
}

/** True when `cur` is in the static table. */
export function isKnownCurrency(cur: string): boolean {
  return STATIC_RATES.isKnown(cur);
}

/** Converts `amount` from one currency into another with the static table; null when either is unknown. */
export function convert(amount: number, from: string, to: string): number | null {
  return STATIC_RATES.convert(amount, from, to);
}

/** The currency to bid in (see CurrencyRates.chooseBidCurrency), with the static table. */
export function chooseBidCurrency(cur: readonly string[]): string | null {
  return STATIC_RATES.chooseBidCurrency(cur);
}

/** The currencies in the static table, for docs and tests. */
export function knownCurrencies(): string[] {
  return STATIC_RATES.currencies();
}
