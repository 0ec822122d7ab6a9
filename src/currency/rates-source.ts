import * as fs from 'node:fs';
import { MAX_RATES_FILE_BYTES } from './rates';

/** A rates source that could not be read: the message says why (shown in logs and /health/ready). */
export class RatesSourceError extends Error {}

/** What a rates source needs of the settings (currency.service.ts, CurrencySettings). */
export interface RatesSourceSettings {
  readonly file: string | null;
  readonly url: string | null;
  readonly fetchTimeoutMs?: number;
  readonly maxBytes?: number;
  readonly watchMs?: number;
}

/**
 * The store of currency rates: CURRENCY_RATES_FILE or CURRENCY_RATES_URL, each read within a size
 * bound (and a URL within a deadline). CurrencyService is its only user and does no I/O besides; its
 * unit tests give it an in-memory one (test/support/fake-stores.ts).
 */
export abstract class RatesSource {
  /** Where the rates come from, as shown: the file path, or the URL's origin (a path or query may hold an API key). */
  abstract readonly shown: string;
  /**
   * The rates' text, or null when the source says it has not changed since the last text it gave
   * (a URL's 304: asked only when `conditional`, i.e. once rates from it are in use). Rejects with
   * RatesSourceError.
   */
  abstract read(conditional: boolean): Promise<string | null>;
  /** Calls `changed` each time the text may have changed, until `unwatch` (a file polled; a URL cannot tell). */
  abstract watch(changed: () => void): void;
  abstract unwatch(): void;
}

/** A rates URL as it may be shown: its origin, `/…` when it has more (a path or query may hold an API key). */
export function showRatesUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname !== '/' || u.search !== '' || u.hash !== '' ? '/…' : ''}`;
  } catch {
    return 'CURRENCY_RATES_URL';
  }
}

/** The source the settings name: a file, a URL, or none (the static table). */
export function ratesSourceOf(s: RatesSourceSettings): RatesSource | null {
  if (s.file !== null) return new RatesFile(s.file, s.maxBytes ?? MAX_RATES_FILE_BYTES, s.watchMs ?? 1000);
  if (s.url !== null) return new RatesUrl(s.url, s.maxBytes ?? MAX_RATES_FILE_BYTES, s.fetchTimeoutMs ?? 10_000);
  return null;
}

/** CURRENCY_RATES_FILE: read whole (within `maxBytes`), polled every `watchMs` (fs.watchFile; 0: not polled). */
export class RatesFile extends RatesSource {
  private watching = false;

  constructor(
    readonly shown: string,
    private readonly maxBytes: number,
    private readonly watchMs: number,
  ) {
    super();
  }

  async read(): Promise<string> {
    const file = this.shown;
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, 'r');
    } catch (e) {
      throw new RatesSourceError(`cannot open: ${(e as Error).message}`);
    }
    try {
      const size = (await handle.stat()).size;
      if (size > this.maxBytes) throw new RatesSourceError(`${size} bytes, over the ${this.maxBytes}-byte bound`);
      return await handle.readFile('utf8');
    } finally {
      await handle.close();
    }
  }

  watch(changed: () => void): void {
    if (this.watchMs <= 0) return;
    fs.watchFile(this.shown, { interval: this.watchMs, persistent: false }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.size !== prev.size || cur.ino !== prev.ino) changed();
    });
    this.watching = true;
  }

  unwatch(): void {
    if (this.watching) fs.unwatchFile(this.shown);
    this.watching = false;
  }
}

/** CURRENCY_RATES_URL: fetched within `timeoutMs` and `maxBytes`, asked again with its ETag / Last-Modified. */
export class RatesUrl extends RatesSource {
  readonly shown: string;
  private etag: string | null = null;
  private lastModified: string | null = null;

  constructor(
    private readonly url: string,
    private readonly maxBytes: number,
    private readonly timeoutMs: number,
  ) {
    super();
    this.shown = showRatesUrl(url);
  }

  /** The body of the URL, or null when the server says it has not changed (304, to a conditional request). */
  async read(conditional: boolean): Promise<string | null> {
    const headers: Record<string, string> = { accept: 'application/json' };
    // Only once rates from this URL are in use: a 304 then means "keep them".
    if (conditional && this.etag !== null) headers['if-none-match'] = this.etag;
    if (conditional && this.lastModified !== null) headers['if-modified-since'] = this.lastModified;
    // fetch refuses a URL with credentials: they go in an Authorization header (Basic) instead.
    const target = new URL(this.url);
    if (target.username !== '' || target.password !== '') {
      headers.authorization = `Basic ${Buffer.from(`${decodeURIComponent(target.username)}:${decodeURIComponent(target.password)}`).toString('base64')}`;
      target.username = '';
      target.password = '';
    }
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await fetch(target, { headers, signal, redirect: 'follow' });
    } catch (e) {
      throw new RatesSourceError(signal.aborted ? `no answer within ${this.timeoutMs} ms` : `fetch failed: ${(e as Error).message}`);
    }
    if (res.status === 304 && conditional) {
      await res.body?.cancel();
      return null;
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new RatesSourceError(`HTTP ${res.status}`);
    }
    const declared = Number(res.headers.get('content-length'));
    if (declared > this.maxBytes) {
      await res.body?.cancel();
      throw new RatesSourceError(`${declared} bytes declared, over the ${this.maxBytes}-byte bound`);
    }
    const text = await this.readBounded(res, signal);
    this.etag = res.headers.get('etag');
    this.lastModified = res.headers.get('last-modified');
    return text;
  }

  watch(): void {}

  unwatch(): void {}

  private async readBounded(res: Response, signal: AbortSignal): Promise<string> {
    if (res.body === null) return '';
    const reader = res.body.getReader();
    const chunks: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        total += value.byteLength;
        if (total > this.maxBytes) {
          await reader.cancel();
          throw new RatesSourceError(`body over the ${this.maxBytes}-byte bound`);
        }
        chunks.push(value);
      }
    } catch (e) {
      if (e instanceof RatesSourceError) throw e;
      throw new RatesSourceError(signal.aborted ? `no complete answer within ${this.timeoutMs} ms` : `reading the body failed: ${(e as Error).message}`);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}
