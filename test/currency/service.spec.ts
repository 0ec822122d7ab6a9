/**
 * CurrencyService against real files and a real local HTTP server: start-up, refresh, change on
 * disk, failures that keep the last good rates, staleness.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import 'reflect-metadata';
import { Logger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CurrencyModule } from '../../src/currency/currency.module';
import { CurrencyService, type CurrencySettings } from '../../src/currency/currency.service';
import { STATIC_RATES } from '../../src/currency/rates';

// The service logs every refresh failure by design; the tests provoke many.
Logger.overrideLogger(false);

const today = (): string => new Date().toISOString().slice(0, 10);

function ratesText(eur: number, dataAsOf = today()): string {
  return JSON.stringify({ dataAsOf, conversions: { USD: { EUR: eur, GBP: 0.75 } } });
}

const settings = (o: Partial<CurrencySettings>): CurrencySettings => ({ file: null, url: null, refreshSeconds: 3600, maxAgeSeconds: 0, watchMs: 0, ...o });

async function waitFor(what: string, cond: () => boolean, ms: number): Promise<number> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return Date.now() - t0;
}

async function started(s: CurrencySettings): Promise<CurrencyService> {
  const svc = new CurrencyService(s);
  await svc.onModuleInit();
  return svc;
}

describe('currency: CurrencyService settings', () => {
  it('refuses a file and a URL together, a bad refresh period, a URL that is not http(s)', () => {
    assert.throws(() => new CurrencyService(settings({ file: '/x', url: 'http://127.0.0.1/' })), /not both/);
    assert.throws(() => new CurrencyService(settings({ refreshSeconds: 0 })), /CURRENCY_REFRESH_S/);
    assert.throws(() => new CurrencyService(settings({ maxAgeSeconds: -1 })), /CURRENCY_MAX_AGE_S/);
    assert.throws(() => new CurrencyService(settings({ url: 'file:///etc/rates.json' })), /http\(s\) URL/);
  });

  it('uses the static table, and reports nothing, when no source is configured', async () => {
    const svc = await started(settings({ maxAgeSeconds: 60 }));
    assert.equal(svc.current(), STATIC_RATES);
    assert.equal(svc.source, 'static');
    assert.equal(svc.health(), null);
    assert.ok(svc.ageSeconds() > 300 * 86400, 'the static table is old, and its age says so');
    svc.onApplicationShutdown();
  });

  it('is wired by CurrencyModule.forRoot', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rates-'));
    const file = path.join(dir, 'rates.json');
    fs.writeFileSync(file, ratesText(0.5));
    const app = await NestFactory.createApplicationContext(CurrencyModule.forRoot(settings({ file })), { logger: false });
    try {
      assert.equal(app.get(CurrencyService).current().unitsPerUsd('EUR'), 0.5);
    } finally {
      await app.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('currency: CurrencyService with a file', () => {
  let dir = '';
  let file = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rates-'));
    file = path.join(dir, 'rates.json');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('loads the file at start', async () => {
    fs.writeFileSync(file, ratesText(0.86));
    const svc = await started(settings({ file, maxAgeSeconds: 3 * 86400 }));
    assert.equal(svc.current().unitsPerUsd('EUR'), 0.86);
    assert.equal(svc.source, file);
    assert.equal(svc.health(), null);
    assert.deepEqual(svc.stats().refreshes, { updated: 1, unchanged: 0, failed: 0, rejected: 0 });
    svc.onApplicationShutdown();
  });

  it('refuses to start on a file it cannot use, naming it', async () => {
    fs.writeFileSync(file, '{"dataAsOf": "2026-11-23", "conversions": {"USD": {"EUR": -1}}}');
    await assert.rejects(started(settings({ file })), (e: Error) => e.message.includes(file) && /USD\.EUR must be a finite number > 0/.test(e.message));
    await assert.rejects(started(settings({ file: path.join(dir, 'missing.json') })), /missing\.json: cannot open/);
  });

  it('picks up a change on disk within one refresh, keeps the last good rates when the file goes bad', async () => {
    fs.writeFileSync(file, ratesText(0.86));
    const svc = await started(settings({ file, refreshSeconds: 0.3 }));
    try {
      const before = svc.current();
      fs.writeFileSync(file, ratesText(0.91));
      const took = await waitFor('new rates', () => svc.current().unitsPerUsd('EUR') === 0.91, 2000);
      assert.ok(took < 1500, `picked up in ${took} ms, refresh is 300 ms (the rest is margin for a busy machine)`);
      assert.equal(before.unitsPerUsd('EUR'), 0.86, 'the old table is unchanged: swapped, not mutated');

      fs.writeFileSync(file, '{"dataAsOf": "2026-11-23", "conversions": ');
      await waitFor('a failed refresh', () => svc.stats().refreshes.failed > 0, 2000);
      assert.equal(svc.current().unitsPerUsd('EUR'), 0.91, 'last good rates kept');
      assert.match(svc.stats().lastError ?? '', /not JSON/);

      fs.rmSync(file);
      const failed = svc.stats().refreshes.failed;
      await waitFor('another failed refresh', () => svc.stats().refreshes.failed > failed, 2000);
      assert.equal(svc.current().unitsPerUsd('EUR'), 0.91, 'kept when the file disappears');
      assert.match(svc.stats().lastError ?? '', /cannot open/);

      fs.writeFileSync(file, ratesText(0.93));
      await waitFor('recovered', () => svc.current().unitsPerUsd('EUR') === 0.93, 2000);
      assert.equal(svc.stats().lastError, null);
      await waitFor('a refresh of the unchanged file', () => svc.stats().refreshes.unchanged > 0, 2000);
      assert.equal(svc.current().unitsPerUsd('EUR'), 0.93);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('also watches the file, so a change is seen long before an hourly refresh', async () => {
    fs.writeFileSync(file, ratesText(0.86));
    const svc = await started(settings({ file, refreshSeconds: 3600, watchMs: 50 }));
    try {
      // Distinct size and mtime, whatever the file system's time resolution.
      await new Promise((r) => setTimeout(r, 20));
      fs.writeFileSync(file, ratesText(0.9012));
      await waitFor('rates from the watch', () => svc.current().unitsPerUsd('EUR') === 0.9012, 3000);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('refuses to start on an implausible file, naming the rate', async () => {
    fs.writeFileSync(file, ratesText(1e9));
    await assert.rejects(started(settings({ file })), /CURRENCY_RATES_FILE=.*EUR: 1000000000 per USD/);
  });

  it('reports degraded rates older than CURRENCY_MAX_AGE_S', async () => {
    fs.writeFileSync(file, ratesText(0.86, '2026-01-10'));
    const svc = await started(settings({ file, maxAgeSeconds: 2 * 86400 }));
    try {
      const asOf = Date.UTC(2026, 0, 10);
      assert.equal(svc.ageSeconds(asOf + 3600_000), 3600);
      assert.equal(svc.health(asOf + 86400_000), null, 'one day old');
      assert.match(svc.health(asOf + 3 * 86400_000) ?? '', /currency rates are 259200 s old \(dataAsOf 2026-01-10T00:00:00.000Z\), over CURRENCY_MAX_AGE_S=172800/);
    } finally {
      svc.onApplicationShutdown();
    }
    const never = await started(settings({ file, maxAgeSeconds: 0 }));
    assert.equal(never.health(Date.UTC(2030, 0, 1)), null, '0 means never stale');
    never.onApplicationShutdown();
  });
});

describe('currency: CurrencyService with a URL', () => {
  let server: http.Server;
  let base = '';
  /** What the server answers next; changed by each test. */
  let handler: (req: http.IncomingMessage, res: http.ServerResponse) => void = (_req, res) => res.end();
  const seen: Array<{ inm: string | undefined }> = [];
  const open = new Set<http.ServerResponse>();

  before(async () => {
    server = http.createServer((req, res) => {
      seen.push({ inm: req.headers['if-none-match'] });
      open.add(res);
      res.on('close', () => open.delete(res));
      handler(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const res of open) res.destroy();
    await new Promise((r) => server.close(r));
  });

  const json = (body: string, status = 200, headers: Record<string, string> = {}) => (_req: http.IncomingMessage, res: http.ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers });
    res.end(body);
  };

  it('fetches at start, then keeps the rates through a 500, a timeout and oversize answers', async () => {
    handler = json(ratesText(0.86), 200, { etag: '"v1"' });
    const svc = await started(settings({ url: `${base}/rates.json`, fetchTimeoutMs: 300, maxBytes: 10_000 }));
    try {
      assert.equal(svc.current().unitsPerUsd('EUR'), 0.86);
      assert.equal(svc.source, `${base}/…`, 'the URL shown is its origin only (a path or query may hold an API key)');

      handler = (req, res) => {
        if (req.headers['if-none-match'] === '"v1"') {
          res.writeHead(304);
          res.end();
        } else json(ratesText(0.5))(req, res);
      };
      assert.equal(await svc.refresh(), 'unchanged', 'the ETag is sent back; 304 keeps the rates');
      assert.equal(seen.at(-1)?.inm, '"v1"');

      const failures: Array<[string, (req: http.IncomingMessage, res: http.ServerResponse) => void, RegExp]> = [
        ['500', json('{"error": "down"}', 500), /HTTP 500/],
        ['404', json('', 404), /HTTP 404/],
        ['no answer', () => undefined, /no answer within 300 ms/],
        [
          'headers, then a stalled body',
          (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.write('{"dataAsOf": ');
          },
          /no complete answer within 300 ms/,
        ],
        ['oversize, declared', json(`${ratesText(0.5)}${' '.repeat(20_000)}`), /20\d{3} bytes declared, over the 10000-byte bound/],
        [
          'oversize, chunked',
          (_req, res) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            for (let i = 0; i < 30; i++) res.write(' '.repeat(1000));
            res.end(ratesText(0.5));
          },
          /body over the 10000-byte bound/,
        ],
        ['not JSON', json('<html>maintenance</html>'), /not JSON/],
        ['invalid rates', json(JSON.stringify({ dataAsOf: today(), conversions: { USD: { EUR: 0 } } })), /USD\.EUR must be a finite number > 0/],
      ];
      let failed = 0;
      for (const [why, h, msg] of failures) {
        handler = h;
        assert.equal(await svc.refresh(), 'failed', why);
        failed++;
        assert.match(svc.stats().lastError ?? '', msg, why);
        assert.equal(svc.current().unitsPerUsd('EUR'), 0.86, `${why}: last good rates kept`);
      }
      assert.equal(svc.stats().refreshes.failed, failed);

      handler = json(ratesText(0.92));
      assert.equal(await svc.refresh(), 'updated');
      assert.equal(svc.current().unitsPerUsd('EUR'), 0.92);
      assert.deepEqual(svc.stats().refreshes, { updated: 2, unchanged: 1, failed, rejected: 0 });
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('starts on the static table when the URL fails, says so, and retries until it answers', async () => {
    handler = json('', 503);
    const svc = await started(settings({ url: `${base}/rates.json`, refreshSeconds: 0.2, maxAgeSeconds: 86400 }));
    try {
      assert.equal(svc.current(), STATIC_RATES);
      assert.match(svc.health() ?? '', /currency rates from http:\/\/127\.0\.0\.1:\d+\/… not loaded \(HTTP 503\): using the static table of 2025-01-02/);
      handler = json(ratesText(0.88));
      await waitFor('loaded after retry', () => svc.current().unitsPerUsd('EUR') === 0.88, 3000);
      assert.equal(svc.health(), null);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('refreshes a URL on its own, every refresh period', async () => {
    handler = json(ratesText(0.7));
    const svc = await started(settings({ url: `${base}/r`, refreshSeconds: 0.2 }));
    try {
      handler = json(ratesText(0.71));
      await waitFor('refreshed', () => svc.current().unitsPerUsd('EUR') === 0.71, 2000);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('never shows the credentials or API key of the URL: not in health, stats, source or log lines', async () => {
    const lines: string[] = [];
    Logger.overrideLogger({ log: (m: unknown) => lines.push(String(m)), warn: (m: unknown) => lines.push(String(m)), error: (m: unknown) => lines.push(String(m)) });
    const secretUrl = base.replace('http://', 'http://rateuser:hunter2pass@') + '/v6/key-abc123secret/latest?app_id=appid-secret-42';
    handler = json('', 503);
    const svc = await started(settings({ url: secretUrl }));
    try {
      handler = json(ratesText(0.9));
      assert.equal(await svc.refresh(), 'updated');
      handler = json(JSON.stringify({ dataAsOf: today(), conversions: { USD: { EUR: 1e9 } } }));
      assert.equal(await svc.refresh(), 'rejected');
      handler = (_req, res) => res.destroy();
      assert.equal(await svc.refresh(), 'failed');
      const shown = [svc.source, svc.health() ?? '', JSON.stringify(svc.stats()), ...lines].join('\n');
      assert.ok(lines.length >= 3, lines.join('\n'));
      for (const secret of ['rateuser', 'hunter2pass', 'key-abc123secret', 'appid-secret-42']) assert.ok(!shown.includes(secret), `${secret} shown:\n${shown}`);
      assert.match(shown, /http:\/\/127\.0\.0\.1:\d+\/…/);
    } finally {
      svc.onApplicationShutdown();
      Logger.overrideLogger(false);
    }
  });

  it('rejects an implausible table or a jump past CURRENCY_MAX_CHANGE_PCT, keeps the rates in use, counts it and says so in health', async () => {
    handler = json(ratesText(0.86));
    const svc = await started(settings({ url: `${base}/r`, maxChangePct: 100 }));
    try {
      const bad: Array<[string, number, RegExp]> = [
        ['USD→EUR 1e9', 1e9, /EUR: 1000000000 per USD/],
        ['USD→EUR 1e-9', 1e-9, /EUR: 1e-9 per USD/],
        ['a 1000× jump', 860, /EUR: 860 per USD is not plausible/],
        ['a 3× jump', 2.58, /EUR: 0\.86 → 2\.58 per USD, ×3 .*CURRENCY_MAX_CHANGE_PCT=100/],
      ];
      let n = 0;
      for (const [why, eur, msg] of bad) {
        handler = json(ratesText(eur));
        assert.equal(await svc.refresh(), 'rejected', why);
        n++;
        assert.equal(svc.current().unitsPerUsd('EUR'), 0.86, `${why}: the rates in use are kept`);
        assert.match(svc.health() ?? '', msg, why);
        assert.match(svc.health() ?? '', /rejected.*keeping those of/, why);
        assert.equal(svc.stats().refreshes.rejected, n);
      }
      handler = json(ratesText(1.5));
      assert.equal(await svc.refresh(), 'updated', 'within twice: accepted');
      assert.equal(svc.current().unitsPerUsd('EUR'), 1.5);
      assert.equal(svc.health(), null, 'an accepted table clears the warning');
    } finally {
      svc.onApplicationShutdown();
    }
  });

  /**
   * Each refresh within CURRENCY_MAX_CHANGE_PCT of the last, the walk still moves far: the total
   * move against the reference (the first table, then the rates in use a day before) is bounded by
   * CURRENCY_MAX_DRIFT_PCT, with the same refusal, count and health.
   */
  it('refuses a step-by-step walk (0.9 → 1.75 → 3.4 → 6.6 → 9.6) past CURRENCY_MAX_DRIFT_PCT of the reference rates', async () => {
    handler = json(ratesText(0.9));
    const svc = await started(settings({ url: `${base}/r`, maxChangePct: 100, maxDriftPct: 100 }));
    try {
      handler = json(ratesText(1.75));
      assert.equal(await svc.refresh(), 'updated', '×1.94 of the reference: within');
      let n = 0;
      for (const eur of [3.4, 6.6, 9.6]) {
        handler = json(ratesText(eur));
        assert.equal(await svc.refresh(), 'rejected', `EUR ${eur}`);
        n++;
        assert.equal(svc.current().unitsPerUsd('EUR'), 1.75, `EUR ${eur}: the rates in use are kept`);
        assert.equal(svc.stats().refreshes.rejected, n);
        assert.match(svc.health() ?? '', new RegExp(`rejected .*EUR: 0\\.9 → ${String(eur).replace('.', '\\.')} per USD, ×[0-9.]+ against the reference rates of .*CURRENCY_MAX_DRIFT_PCT=100`));
      }
      // A step back toward the reference is accepted and clears the warning.
      handler = json(ratesText(1.2));
      assert.equal(await svc.refresh(), 'updated');
      assert.equal(svc.health(), null);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('refuses a currency outside the static table doubled again and again: it never gets past the bound', async () => {
    const xyz = (r: number) => JSON.stringify({ dataAsOf: today(), conversions: { USD: { EUR: 0.9, XYZ: r } } });
    handler = json(xyz(1));
    const svc = await started(settings({ url: `${base}/r`, maxChangePct: 100, maxDriftPct: 100 }));
    try {
      let r = 1;
      const outcomes: string[] = [];
      for (let i = 0; i < 22; i++) {
        r *= 2;
        handler = json(xyz(r));
        outcomes.push(await svc.refresh());
      }
      assert.equal(outcomes[0], 'updated', '×2: at the bound, accepted');
      assert.deepEqual(new Set(outcomes.slice(1)), new Set(['rejected']), outcomes.join(' '));
      assert.equal(svc.current().unitsPerUsd('XYZ'), 2);
      assert.match(svc.health() ?? '', /XYZ: 1 → 4194300 per USD, ×4194300 against the reference rates of .*CURRENCY_MAX_DRIFT_PCT=100/);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('moves the reference to the rates in use once its period has passed: a slow walk goes on, a step per period', async () => {
    handler = json(ratesText(0.9));
    const svc = await started(settings({ url: `${base}/r`, maxChangePct: 100, maxDriftPct: 100, driftPeriodMs: 300 }));
    try {
      handler = json(ratesText(1.75));
      assert.equal(await svc.refresh(), 'updated');
      handler = json(ratesText(3.4));
      assert.equal(await svc.refresh(), 'rejected', 'within the period: against 0.9');
      await new Promise((res) => setTimeout(res, 350));
      assert.equal(await svc.refresh(), 'updated', 'a period later: against 1.75, ×1.94');
      assert.equal(svc.current().unitsPerUsd('EUR'), 3.4);
      handler = json(ratesText(6.6));
      assert.equal(await svc.refresh(), 'rejected', 'the reference moved to 1.75, not to 3.4');
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('starts on the static table when the first table is implausible, and says so', async () => {
    handler = json(ratesText(1e9));
    const svc = await started(settings({ url: `${base}/r` }));
    try {
      assert.equal(svc.current(), STATIC_RATES);
      assert.match(svc.health() ?? '', /rejected/);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('never runs two refreshes at once', async () => {
    let requests = 0;
    handler = (req, res) => {
      requests++;
      setTimeout(() => json(ratesText(0.6))(req, res), 100);
    };
    const svc = new CurrencyService(settings({ url: `${base}/r` }));
    const [a, b] = [svc.refresh(), svc.refresh()];
    assert.equal(a, b);
    assert.equal(await a, 'updated');
    assert.equal(requests, 1);
  });
});
