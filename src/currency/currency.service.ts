/**
 * Live currency rates: read from a file (CURRENCY_RATES_FILE) or a URL (CURRENCY_RATES_URL) in the
 * format Prebid Server reads (rates.ts: parseRatesFile), refreshed every CURRENCY_REFRESH_S off the
 * bid path, and swapped in as one reference: `current()` is all the bid path calls.
 *
 * - Start-up: a configured file that cannot be read or parsed stops the start (the operator's own
 *   file is wrong: bidding on 2025's static rates instead, the failure this service exists to
 *   prevent, would go unnoticed). A URL that does not answer well does not: a rates server being
 *   down must not keep the bidder down; the static table is used, `health()` says so, and the URL
 *   is tried again every RETRY_BEFORE_FIRST_LOAD_S until it answers.
 * - Refresh: a file is read again every refresh and also polled (fs.watchFile, `watchMs`) so that
 *   a change on disk is picked up within a second; a URL is fetched with a timeout and a size bound,
 *   with its ETag / Last-Modified, so an unchanged file costs a 304. A refresh that fails (missing
 *   file, invalid JSON, HTTP error, timeout, oversize) keeps the rates in use and is counted.
 * - Sanity: a table read well is still refused when a rate is implausible (rates.ts:
 *   implausibleRates) or moved past CURRENCY_MAX_CHANGE_PCT since the table in use (ratesJump):
 *   the table in use is kept, the refusal counted (`rejected`) and named by `health()` until a
 *   table is accepted. At start-up a refused file stops the start, as an unreadable one does.
 *   Refreshes each within that bound could still walk a rate anywhere (0.9 → 1.75 → 3.4 → …):
 *   a rate past CURRENCY_MAX_DRIFT_PCT of its reference (ratesDrift) is refused the same way. The
 *   reference is the first table accepted, replaced by the rates in use once it is
 *   `driftPeriodMs` (a day) old; a currency new to the reference joins it at its first rate.
 * - Secrets: a URL is only ever shown as its origin (`https://host/…`): its user, password, path and
 *   query (where rates services put API keys) never reach a log line, health or the metrics.
 * - Age: `ageSeconds()` is now − `dataAsOf` of the rates in use; `health()` gives a "degraded"
 *   reason when it is over CURRENCY_MAX_AGE_S (0: never). With no file or URL configured the static
 *   table is in use by choice and is not reported as stale (its age is still in the metrics).
 */
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit, Optional } from '@nestjs/common';
import {
  CurrencyRates,
  CurrencyRatesError,
  DEFAULT_MAX_CHANGE_PCT,
  DEFAULT_MAX_DRIFT_PCT,
  DRIFT_PERIOD_MS,
  implausibleRates,
  parseRatesFile,
  ratesDrift,
  ratesJump,
  STATIC_RATES,
} from './rates';
import { ConfigError } from '../config/config';
import { RatesSource, RatesSourceError, ratesSourceOf, showRatesUrl } from './rates-source';

export { showRatesUrl } from './rates-source';

export interface CurrencySettings {
  /** CURRENCY_RATES_FILE: a path, or null. */
  readonly file: string | null;
  /** CURRENCY_RATES_URL: an http(s) URL, or null. Not both. */
  readonly url: string | null;
  /** CURRENCY_REFRESH_S (default 3600): how often the rates are read again. */
  readonly refreshSeconds: number;
  /** CURRENCY_MAX_AGE_S: rates older than this make health() degraded; 0 = never. */
  readonly maxAgeSeconds: number;
  /** Deadline of one URL fetch, headers and body (default 10 000 ms). */
  readonly fetchTimeoutMs?: number;
  /** Largest rates body accepted (default MAX_RATES_FILE_BYTES). */
  readonly maxBytes?: number;
  /** How often a rates file's metadata is polled for changes (default 1000 ms; 0 = only the periodic refresh). */
  readonly watchMs?: number;
  /** CURRENCY_MAX_CHANGE_PCT: a rate moving more than this (percent, either way) since the table in use refuses the new table; 0: no bound. */
  readonly maxChangePct?: number;
  /** CURRENCY_MAX_DRIFT_PCT: a rate more than this (percent, either way) from the reference rates refuses the new table; 0: no bound. */
  readonly maxDriftPct?: number;
  /** How long the reference rates stay before the rates in use replace them (default DRIFT_PERIOD_MS, a day). */
  readonly driftPeriodMs?: number;
}

export const CURRENCY_SETTINGS = Symbol('CURRENCY_SETTINGS');

/** Until a configured URL has answered once, it is tried this often (or every refresh, when shorter). */
export const RETRY_BEFORE_FIRST_LOAD_S = 60;

export type RefreshOutcome = 'updated' | 'unchanged' | 'failed' | 'rejected';

export interface CurrencyStats {
  readonly refreshes: Readonly<Record<RefreshOutcome, number>>;
  /** The message of the last failed refresh, null when the last refresh succeeded. */
  readonly lastError: string | null;
  /** Why the last table read was refused, null once a table is accepted. */
  readonly lastRejection: string | null;
  /** When the source was last read successfully (ms), null before. */
  readonly lastSuccessAt: number | null;
}

@Injectable()
export class CurrencyService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Currency');
  private rates: CurrencyRates = STATIC_RATES;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<RefreshOutcome> | null = null;
  private loadedOnce = false;
  /** The text of the rates in use: a file rewritten with the same content is not parsed again. */
  private lastText: string | null = null;
  private readonly counts: Record<RefreshOutcome, number> = { updated: 0, unchanged: 0, failed: 0, rejected: 0 };
  private lastError: string | null = null;
  private lastRejection: string | null = null;
  /** Where the rates come from, as shown: the file path, or the URL's origin. */
  private readonly shown: string | null;
  private lastSuccessAt: number | null = null;
  /** The reference rates (units per USD) the total move is bounded against, and since when (ms). */
  private reference: Map<string, number> | null = null;
  private referenceAt = 0;
  /** The file or URL the rates are read from; null: the static table. */
  private readonly ratesSource: RatesSource | null;

  /** `source`: where the rates are read (CurrencyModule provides it); by default the one the settings name (rates-source.ts). */
  constructor(
    @Inject(CURRENCY_SETTINGS) private readonly settings: CurrencySettings,
    @Optional() @Inject(RatesSource) source?: RatesSource | null,
  ) {
    if (settings.file !== null && settings.url !== null) throw new Error('set CURRENCY_RATES_FILE or CURRENCY_RATES_URL, not both');
    if (!(settings.refreshSeconds > 0)) throw new Error(`CURRENCY_REFRESH_S must be > 0, got ${settings.refreshSeconds}`);
    if (!(settings.maxAgeSeconds >= 0)) throw new Error(`CURRENCY_MAX_AGE_S must be ≥ 0, got ${settings.maxAgeSeconds}`);
    if (settings.url !== null && !/^https?:\/\//i.test(settings.url)) throw new Error(`CURRENCY_RATES_URL must be an http(s) URL, got ${showRatesUrl(settings.url)}`);
    this.ratesSource = source ?? ratesSourceOf(settings);
    this.shown = this.ratesSource?.shown ?? null;
  }

  /** The rates in use: one immutable table, replaced as a whole by a refresh. */
  current(): CurrencyRates {
    return this.rates;
  }

  /** Where the rates in use came from: `static`, the file path or the URL. */
  get source(): string {
    return this.rates.source;
  }

  /** Seconds since the `dataAsOf` of the rates in use. */
  ageSeconds(now = Date.now()): number {
    return Math.max(0, (now - this.rates.asOf) / 1000);
  }

  stats(): CurrencyStats {
    return { refreshes: { ...this.counts }, lastError: this.lastError, lastRejection: this.lastRejection, lastSuccessAt: this.lastSuccessAt };
  }

  /** A reason to report the bidder degraded, or null when the rates are fine. */
  health(now = Date.now()): string | null {
    const configured = this.shown;
    if (configured === null) return null;
    if (this.lastRejection !== null) {
      return `currency rates from ${configured} rejected (${this.lastRejection}); keeping those of ${this.rates.source} (dataAsOf ${new Date(this.rates.asOf).toISOString().slice(0, 10)})`;
    }
    if (!this.loadedOnce) return `currency rates from ${configured} not loaded (${this.lastError ?? 'not tried yet'}): using the static table of ${new Date(STATIC_RATES.asOf).toISOString().slice(0, 10)}`;
    const max = this.settings.maxAgeSeconds;
    const age = this.ageSeconds(now);
    if (max > 0 && age > max) return `currency rates are ${Math.round(age)} s old (dataAsOf ${new Date(this.rates.asOf).toISOString()}), over CURRENCY_MAX_AGE_S=${max}`;
    return null;
  }

  async onModuleInit(): Promise<void> {
    const file = this.settings.file;
    if (this.ratesSource === null) {
      this.logger.log(`no CURRENCY_RATES_FILE or CURRENCY_RATES_URL: static rates of ${new Date(STATIC_RATES.asOf).toISOString().slice(0, 10)}`);
      return;
    }
    const outcome = await this.refresh();
    // A file that cannot be read at start is a configuration error (PM2 does not restart it: src/main.ts).
    if (outcome === 'failed' && file !== null) throw new ConfigError([`CURRENCY_RATES_FILE=${file}: ${this.lastError}`]);
    if (outcome === 'rejected' && file !== null) throw new ConfigError([`CURRENCY_RATES_FILE=${file}: rejected: ${this.lastRejection}`]);
    this.schedule();
    this.ratesSource.watch(() => void this.refresh());
  }

  onApplicationShutdown(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.ratesSource?.unwatch();
  }

  /** Reads the source once more (never concurrently with another read); never throws. */
  refresh(): Promise<RefreshOutcome> {
    this.running ??= this.load().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  private schedule(): void {
    const every = this.loadedOnce ? this.settings.refreshSeconds : Math.min(this.settings.refreshSeconds, RETRY_BEFORE_FIRST_LOAD_S);
    this.timer = setTimeout(() => {
      void this.refresh().then(() => {
        if (this.timer !== null) this.schedule();
      });
    }, every * 1000);
    this.timer.unref();
  }

  private async load(): Promise<RefreshOutcome> {
    const source = this.shown!;
    try {
      const text = await this.ratesSource!.read(this.loadedOnce);
      if (text === null || text === this.lastText) return this.done('unchanged');
      const rates = parseRatesFile(text, source);
      for (const w of rates.warnings) this.logger.warn(`${source}: ${w}`);
      // The first table is compared with nothing but the bounds: the static one is of unknown age.
      const now = Date.now();
      if (this.reference !== null && now - this.referenceAt >= (this.settings.driftPeriodMs ?? DRIFT_PERIOD_MS)) this.setReference(this.rates, now);
      const refused = [
        ...implausibleRates(rates),
        ...(this.loadedOnce ? ratesJump(this.rates, rates, this.settings.maxChangePct ?? DEFAULT_MAX_CHANGE_PCT) : []),
        ...(this.reference !== null ? ratesDrift(this.reference, this.referenceAt, rates, this.settings.maxDriftPct ?? DEFAULT_MAX_DRIFT_PCT) : []),
      ];
      if (refused.length > 0) {
        this.counts.rejected++;
        this.lastError = null;
        this.lastRejection = refused.join('; ');
        this.logger.error(`rates from ${source} rejected, keeping those of ${this.rates.source} (dataAsOf ${new Date(this.rates.asOf).toISOString()}): ${this.lastRejection}`);
        return 'rejected';
      }
      this.rates = rates;
      if (this.reference === null) this.setReference(rates, now);
      // A currency new to the reference joins it at its first rate.
      for (const cur of rates.currencies()) if (!this.reference!.has(cur)) this.reference!.set(cur, rates.unitsPerUsd(cur)!);
      this.lastText = text;
      this.lastRejection = null;
      this.loadedOnce = true;
      this.logger.log(`rates from ${source}: ${rates.currencies().length} currencies, dataAsOf ${new Date(rates.asOf).toISOString()}`);
      return this.done('updated');
    } catch (e) {
      const message = e instanceof RatesSourceError || e instanceof CurrencyRatesError ? e.message : `${(e as Error).name}: ${(e as Error).message}`;
      this.counts.failed++;
      this.lastError = message;
      this.logger.warn(`rates from ${source} not refreshed, keeping those of ${this.rates.source} (dataAsOf ${new Date(this.rates.asOf).toISOString()}): ${message}`);
      return 'failed';
    }
  }

  private setReference(rates: CurrencyRates, now: number): void {
    this.reference = new Map(rates.currencies().map((cur) => [cur, rates.unitsPerUsd(cur)!]));
    this.referenceAt = now;
  }

  private done(outcome: 'updated' | 'unchanged'): RefreshOutcome {
    this.counts[outcome]++;
    this.lastError = null;
    this.lastSuccessAt = Date.now();
    return outcome;
  }
}
