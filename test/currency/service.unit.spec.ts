/**
 * CurrencyService above an in-memory rates source (test/support/fake-stores.ts): a table taken,
 * the same text not parsed again, a source that fails or a table that jumps refused with the rates
 * in use kept, a change the source reports read at once. On real files and a real HTTP server:
 * test/currency/service.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import { CurrencyService, type CurrencySettings } from '../../src/currency/currency.service';
import { MemoryRatesSource } from '../support/fake-stores';

Logger.overrideLogger(false);

const table = (eur: number): string => JSON.stringify({ dataAsOf: new Date().toISOString().slice(0, 10), conversions: { USD: { EUR: eur, GBP: 0.75 } } });
const settings: CurrencySettings = { file: null, url: null, refreshSeconds: 3600, maxAgeSeconds: 0, maxChangePct: 20 };

async function started(source: MemoryRatesSource): Promise<CurrencyService> {
  const svc = new CurrencyService(settings, source);
  await svc.onModuleInit();
  return svc;
}

describe('CurrencyService over an in-memory rates source', () => {
  it('takes the table at start and converts with it; the same text again is unchanged', async () => {
    const source = new MemoryRatesSource(table(0.9));
    const svc = await started(source);
    try {
      assert.equal(svc.current().convert(100, 'USD', 'EUR'), 90);
      assert.equal(svc.source, 'memory-rates.json');
      assert.equal(await svc.refresh(), 'unchanged');
      assert.deepEqual(svc.stats().refreshes, { updated: 1, unchanged: 1, failed: 0, rejected: 0 });
      assert.equal(svc.health(), null);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('keeps the rates in use when the source fails or a rate jumps past the bound, and says why', async () => {
    const source = new MemoryRatesSource(table(0.9));
    const svc = await started(source);
    try {
      source.failing = 'HTTP 503';
      assert.equal(await svc.refresh(), 'failed');
      assert.equal(svc.stats().lastError, 'HTTP 503');
      source.failing = null;
      source.text = table(1.5);
      assert.equal(await svc.refresh(), 'rejected');
      assert.equal(svc.current().convert(100, 'USD', 'EUR'), 90);
      assert.match(svc.health() ?? '', /memory-rates\.json rejected/);
    } finally {
      svc.onApplicationShutdown();
    }
  });

  it('reads the source again as soon as it reports a change, and not after shutdown', async () => {
    const source = new MemoryRatesSource(table(0.9));
    const svc = await started(source);
    source.change(table(0.95));
    await svc.refresh();
    assert.equal(svc.current().convert(100, 'USD', 'EUR'), 95);
    svc.onApplicationShutdown();
    const reads = source.reads;
    source.change(table(0.99));
    assert.equal(source.reads, reads);
  });

  it('without a source, the static table, and nothing to report', async () => {
    const svc = new CurrencyService(settings);
    await svc.onModuleInit();
    assert.equal(svc.source, 'static');
    assert.equal(svc.health(), null);
  });
});
