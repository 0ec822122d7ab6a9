import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CurrencyRates, CurrencyRatesError, implausibleRates, MAX_CURRENCIES, MAX_RATES_FILE_BYTES, parseRatesFile, priceIn, ratesDrift, ratesJump, STATIC_RATES } from '../../src/currency/rates';

const NOW = Date.UTC(2026, 10, 23, 12);

function file(conversions: unknown, dataAsOf: unknown = '2026-11-23', extra: object = {}): string {
  return JSON.stringify({ dataAsOf, ...extra, conversions });
}

function close(a: number | null, b: number, why = ''): void {
  assert.ok(a !== null && Math.abs(a / b - 1) < 1e-12, `${why} ${a} ≉ ${b}`);
}

describe('currency: CurrencyRates', () => {
  const r = new CurrencyRates({ EUR: 0.86, JPY: 150, GBP: 0.75 }, NOW, 'test');

  it('knows USD as 1 even when not given', () => {
    assert.equal(r.unitsPerUsd('USD'), 1);
    assert.deepEqual(r.currencies(), ['USD', 'EUR', 'GBP', 'JPY']);
  });

  it('tolerates lower case', () => {
    assert.equal(r.unitsPerUsd('eur'), 0.86);
    assert.equal(r.isKnown('jpy'), true);
    assert.equal(r.unitsPerUsd('XYZ'), null);
  });

  it('converts through USD', () => {
    close(r.convert(1, 'USD', 'EUR'), 0.86);
    close(r.convert(0.86, 'EUR', 'USD'), 1);
    close(r.convert(150, 'JPY', 'GBP'), 0.75);
    assert.equal(r.convert(5, 'XYZ', 'XYZ'), 5, 'same currency is the identity');
    assert.equal(r.convert(1, 'USD', 'XYZ'), null);
    assert.equal(r.convert(1, 'XYZ', 'USD'), null);
  });

  it('chooses the bid currency as OpenRTB says', () => {
    assert.equal(r.chooseBidCurrency([]), 'USD');
    assert.equal(r.chooseBidCurrency(['EUR', 'usd']), 'USD');
    assert.equal(r.chooseBidCurrency(['XYZ', 'gbp']), 'GBP');
    assert.equal(r.chooseBidCurrency(['CHF']), null, 'not in this table');
    assert.equal(STATIC_RATES.chooseBidCurrency(['CHF']), 'CHF');
  });

  it('is immutable', () => {
    assert.ok(Object.isFrozen(r));
    assert.throws(() => ((r as unknown as { source: string }).source = 'x'));
  });

  it('refuses bad tables', () => {
    const bad: [Record<string, number>, RegExp][] = [
      [{ EUR: 0 }, /EUR must be a finite number > 0/],
      [{ EUR: -1 }, /EUR must be a finite number > 0/],
      [{ EUR: NaN }, /EUR must be a finite number > 0/],
      [{ EUR: Infinity }, /EUR must be a finite number > 0/],
      [{ eur: 0.9 }, /"eur" is not an ISO 4217 code/],
      [{ EURO: 0.9 }, /"EURO" is not an ISO 4217 code/],
      [{ USD: 2 }, /USD must be 1/],
    ];
    for (const [table, msg] of bad) assert.throws(() => new CurrencyRates(table, NOW, 't'), msg);
    assert.throws(() => new CurrencyRates({}, NaN, 't'), /asOf/);
  });

  it('holds the static fallback of 2025-01-02', () => {
    assert.equal(STATIC_RATES.source, 'static');
    assert.equal(new Date(STATIC_RATES.asOf).toISOString().slice(0, 10), '2025-01-02');
    for (const c of ['USD', 'EUR', 'GBP', 'JPY', 'CAD', 'AUD', 'CHF', 'CNY', 'INR', 'BRL', 'SEK']) assert.ok(STATIC_RATES.isKnown(c), c);
  });
});

describe('currency: parseRatesFile', () => {
  it('reads the Prebid Server format', () => {
    const r = parseRatesFile(file({ USD: { EUR: 0.86, GBP: 0.75, JPY: 155.5 } }, '2026-11-23', { generatedAt: '2026-11-23T10:00:00.000Z' }), '/rates.json', NOW);
    assert.equal(r.source, '/rates.json');
    assert.equal(r.asOf, Date.UTC(2026, 10, 23));
    assert.equal(r.unitsPerUsd('EUR'), 0.86);
    assert.equal(r.unitsPerUsd('JPY'), 155.5);
    assert.deepEqual(r.warnings, []);
  });

  it('takes an ISO time as dataAsOf', () => {
    assert.equal(parseRatesFile(file({ USD: { EUR: 0.86 } }, '2026-11-23T09:30:00+01:00'), 's', NOW).asOf, Date.UTC(2026, 10, 23, 8, 30));
  });

  it('inverts quotes against USD', () => {
    const r = parseRatesFile(file({ EUR: { USD: 1.25 } }), 's', NOW);
    close(r.unitsPerUsd('EUR'), 0.8);
  });

  it('derives cross rates through USD', () => {
    // Only the EUR row: GBP is reached through EUR, whose USD rate is inverted.
    const r = parseRatesFile(file({ EUR: { USD: 1.25, GBP: 0.9 } }), 's', NOW);
    close(r.unitsPerUsd('GBP'), 0.8 * 0.9);
    close(r.convert(1, 'EUR', 'GBP'), 0.9);
  });

  it('follows a chain of rows, whatever their order, both ways', () => {
    const r = parseRatesFile(file({ CHF: { SEK: 12 }, NOK: { CHF: 0.08 }, EUR: { CHF: 0.95 }, USD: { EUR: 0.8 } }), 's', NOW);
    close(r.unitsPerUsd('CHF'), 0.8 * 0.95, 'CHF through EUR');
    close(r.unitsPerUsd('SEK'), 0.8 * 0.95 * 12, 'SEK through CHF');
    close(r.unitsPerUsd('NOK'), (0.8 * 0.95) / 0.08, 'NOK from a quote into CHF');
    assert.deepEqual(r.warnings, []);
  });

  it('leaves out, and names, a currency no quote links to USD', () => {
    const r = parseRatesFile(file({ USD: { EUR: 0.8 }, AUD: { NZD: 1.1 } }), 's', NOW);
    assert.equal(r.isKnown('AUD'), false);
    assert.equal(r.isKnown('NZD'), false);
    assert.deepEqual(r.warnings, ['no quote links AUD, NZD to USD; left out']);
  });

  it('uses the most direct of inconsistent duplicates, and says so', () => {
    const r = parseRatesFile(file({ EUR: { USD: 1.25, GBP: 0.5 }, USD: { EUR: 0.86, GBP: 0.75 } }), 's', NOW);
    assert.equal(r.unitsPerUsd('EUR'), 0.86, 'the USD row wins over the inverted EUR → USD quote');
    assert.equal(r.unitsPerUsd('GBP'), 0.75, 'the USD row wins over the cross rate');
    assert.equal(r.warnings.length, 2);
    assert.match(r.warnings[0], /conversions\.EUR\.USD = 1\.25 disagrees/);
    assert.match(r.warnings[1], /conversions\.EUR\.GBP = 0\.5 disagrees/);
  });

  it('accepts consistent duplicates silently (within 1 %)', () => {
    const r = parseRatesFile(file({ USD: { EUR: 0.8 }, EUR: { USD: 1.251 } }), 's', NOW);
    assert.equal(r.unitsPerUsd('EUR'), 0.8);
    assert.deepEqual(r.warnings, []);
  });

  const bad: [string, string, RegExp][] = [
    ['not JSON', '{"dataAsOf": ', /not JSON/],
    ['an array', '[]', /must be a JSON object/],
    ['null', 'null', /must be a JSON object/],
    ['no dataAsOf', JSON.stringify({ conversions: { USD: { EUR: 1 } } }), /dataAsOf must be a date/],
    ['dataAsOf a number', file({ USD: { EUR: 1 } }, 20261123), /dataAsOf must be a date/],
    ['dataAsOf in another format', file({ USD: { EUR: 1 } }, '23/11/2026'), /dataAsOf must be a date/],
    ['dataAsOf a day that does not exist', file({ USD: { EUR: 1 } }, '2026-02-31'), /dataAsOf must be a date/],
    ['dataAsOf a time without a zone', file({ USD: { EUR: 1 } }, '2026-11-23T10:00:00'), /dataAsOf must be a date/],
    ['dataAsOf in the future', file({ USD: { EUR: 1 } }, '2026-12-01'), /in the future/],
    ['generatedAt not a time', file({ USD: { EUR: 1 } }, '2026-11-23', { generatedAt: 'yesterday' }), /generatedAt must be a date/],
    ['no conversions', JSON.stringify({ dataAsOf: '2026-11-23' }), /conversions must be an object/],
    ['conversions an array', file([{ USD: 1 }]), /conversions must be an object/],
    ['a row not an object', file({ USD: 0.86 }), /conversions\.USD must be an object/],
    ['a lower-case code', file({ USD: { eur: 0.86 } }), /conversions\.USD: "eur" is not an ISO 4217 code/],
    ['a lower-case row', file({ usd: { EUR: 0.86 } }), /conversions: "usd" is not an ISO 4217 code/],
    ['a long code', file({ USD: { EURO: 0.86 } }), /"EURO" is not an ISO 4217 code/],
    ['a zero rate', file({ USD: { EUR: 0 } }), /conversions\.USD\.EUR must be a finite number > 0, got 0/],
    ['a negative rate', file({ USD: { EUR: -0.86 } }), /must be a finite number > 0/],
    ['a rate as a string', file({ USD: { EUR: '0.86' } }), /must be a finite number > 0, got "0.86"/],
    ['a rate null', file({ USD: { EUR: null } }), /must be a finite number > 0, got null/],
    ['an infinite rate', '{"dataAsOf":"2026-11-23","conversions":{"USD":{"EUR":1e400}}}', /must be a finite number > 0/],
    ['a currency not 1 to itself', file({ USD: { USD: 2 } }), /conversions\.USD\.USD must be 1/],
  ];
  for (const [why, text, msg] of bad) {
    it(`refuses ${why}`, () => {
      assert.throws(() => parseRatesFile(text, 's', NOW), (e: unknown) => e instanceof CurrencyRatesError && msg.test(e.message));
    });
  }

  it(`refuses more than ${MAX_CURRENCIES} currencies`, () => {
    const row: Record<string, number> = {};
    const A = 65;
    for (let i = 0; i < MAX_CURRENCIES + 5; i++) row[String.fromCharCode(A + Math.floor(i / 676), A + (Math.floor(i / 26) % 26), A + (i % 26))] = 1 + i / 1000;
    assert.throws(() => parseRatesFile(file({ USD: row }), 's', NOW), /more than 512 currencies/);
  });

  it(`refuses a text over ${MAX_RATES_FILE_BYTES} bytes`, () => {
    const text = file({ USD: { EUR: 0.86 } }, '2026-11-23', { padding: 'x'.repeat(MAX_RATES_FILE_BYTES) });
    assert.throws(() => parseRatesFile(text, 's', NOW), /over 4194304 bytes/);
  });
});

/** `usd` as a bid price in `cur` (the auction's rounding, priceIn). */
const toBidPrice = (usd: number, rates: CurrencyRates, cur: string): number => priceIn(usd, rates.unitsPerUsd(cur)!);

describe('currency: bid prices (priceIn)', () => {
  const tables = [
    STATIC_RATES,
    new CurrencyRates({ EUR: 0.8613, JPY: 155.47, KRW: 1471.3, KWD: 0.3075, GBP: 0.7531, BTC: 0.0000105 }, NOW, 'test'),
  ];

  it('never exceeds the USD value when converted back, and is the largest such 4-decimal price', () => {
    let checked = 0;
    let seed = 7;
    const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 40;
    const values = [0, 0.0001, 0.01, 0.1, 0.29, 0.3, 0.57, 1, 1.1, 1.15, 2.675, 9.99, 10, 33.33, 1000];
    for (let i = 0; i < 3000; i++) values.push(random(), Math.round(random() * 100) / 100);
    for (const rates of tables) {
      for (const cur of rates.currencies()) {
        for (const usd of values) {
          const p = toBidPrice(usd, rates, cur);
          assert.ok(!Number.isNaN(p), `${cur} ${usd}`);
          const ticks = Math.round(p * 10_000);
          assert.equal(ticks / 10_000, p, `${p} ${cur} has at most 4 decimals`);
          assert.ok(rates.convert(p, cur, 'USD')! <= usd, `${usd} USD → ${p} ${cur} → ${rates.convert(p, cur, 'USD')} USD`);
          assert.ok(rates.convert((ticks + 1) / 10_000, cur, 'USD')! > usd, `${usd} USD → ${p} ${cur}: one tick more would still fit`);
          checked++;
        }
      }
    }
    assert.ok(checked > 100_000, `${checked} values checked`);
  });

  it('rounds down, not to nearest', () => {
    assert.equal(toBidPrice(1.23456, STATIC_RATES, 'USD'), 1.2345);
    assert.equal(toBidPrice(1.99999, STATIC_RATES, 'USD'), 1.9999);
    assert.equal(toBidPrice(0.29, STATIC_RATES, 'USD'), 0.29, 'an exact value stays (0.29 × 10000 is 2899.99… in binary)');
    const r = new CurrencyRates({ EUR: 0.86 }, NOW, 't');
    assert.equal(toBidPrice(1, r, 'EUR'), 0.86);
    assert.equal(toBidPrice(1.5, r, 'eur'), 1.29);
    assert.equal(toBidPrice(0.00005, r, 'EUR'), 0, 'under one tick');
  });

  it('gives NaN beyond what ten-thousandths can count', () => {
    assert.ok(Number.isNaN(toBidPrice(1e12, STATIC_RATES, 'KRW')));
  });
});

describe('currency: plausibility of a table (issue 23, finding 2)', () => {
  const table = (rates: Record<string, number>) => new CurrencyRates(rates, NOW, 'test');
  // Hostile or mistaken tables: a rates source serving these must not set bid prices.
  const implausible: Array<[string, Record<string, number>, RegExp]> = [
    ['USD→EUR 1e9', { EUR: 1e9 }, /EUR: 1000000000 per USD/],
    ['USD→EUR 1e-9', { EUR: 1e-9 }, /EUR: 1e-9 per USD/],
    ['EUR in cents (100×)', { EUR: 86 }, /EUR: 86 per USD.*0\.097 to 9\.7/],
    ['JPY a thousand times too small', { JPY: 0.15 }, /JPY: 0\.15 per USD/],
    ['an unknown code past the general bound', { XXA: 5e7 }, /XXA: 50000000 per USD.*0\.0001 to 10000000/],
    ['an unknown code below the general bound', { XXB: 5e-5 }, /XXB: 0\.00005 per USD/],
  ];
  for (const [why, rates, msg] of implausible) {
    it(`refuses ${why}`, () => {
      const p = implausibleRates(table(rates));
      assert.equal(p.length, 1, p.join('; '));
      assert.match(p[0], msg);
    });
  }
  it('accepts real tables: the static one, weak and strong currencies, gold', () => {
    assert.deepEqual(implausibleRates(STATIC_RATES), []);
    assert.deepEqual(implausibleRates(table({ EUR: 0.86, KWD: 0.307, IRR: 42_000, VND: 26_000, LBP: 89_500, XAU: 0.0003, TRY: 41.5 })), []);
  });
  it('names every implausible rate, not just the first', () => {
    assert.equal(implausibleRates(table({ EUR: 1e9, GBP: 1e-9, JPY: 150 })).length, 2);
  });
});

describe('currency: change between refreshes (issue 23, finding 2)', () => {
  const before = new CurrencyRates({ EUR: 0.86, JPY: 150 }, NOW, 'test');
  it('refuses a 1000× jump, either way', () => {
    assert.match(ratesJump(before, new CurrencyRates({ EUR: 860, JPY: 150 }, NOW, 't'), 100).join(), /EUR: 0\.86 → 860 per USD, ×1000/);
    assert.match(ratesJump(before, new CurrencyRates({ EUR: 0.86, JPY: 0.15 }, NOW, 't'), 100).join(), /JPY: 150 → 0\.15 per USD, ×0\.001/);
  });
  it('accepts a change within the bound (100 %: up to twice or half), and new or dropped currencies', () => {
    assert.deepEqual(ratesJump(before, new CurrencyRates({ EUR: 1.72, JPY: 75, GBP: 0.75 }, NOW, 't'), 100), []);
    assert.deepEqual(ratesJump(before, new CurrencyRates({ EUR: 0.9 }, NOW, 't'), 100), []);
  });
  it('takes the bound from its argument; 0 turns the check off', () => {
    assert.equal(ratesJump(before, new CurrencyRates({ EUR: 0.97, JPY: 150 }, NOW, 't'), 10).length, 1);
    assert.deepEqual(ratesJump(before, new CurrencyRates({ EUR: 0.95, JPY: 150 }, NOW, 't'), 11), []);
    assert.deepEqual(ratesJump(before, new CurrencyRates({ EUR: 8600, JPY: 150 }, NOW, 't'), 0), []);
  });
});

describe('currency: total move against the reference rates', () => {
  const reference = new Map([['EUR', 0.9], ['XYZ', 1]]);
  it('refuses a rate past the bound of its reference, either way, naming the setting', () => {
    assert.match(ratesDrift(reference, NOW, new CurrencyRates({ EUR: 3.4, XYZ: 1 }, NOW, 't'), 100).join(), /EUR: 0\.9 → 3\.4 per USD, ×3\.77778 against the reference rates of .*CURRENCY_MAX_DRIFT_PCT=100/);
    assert.match(ratesDrift(reference, NOW, new CurrencyRates({ EUR: 0.9, XYZ: 0.2 }, NOW, 't'), 100).join(), /XYZ: 1 → 0\.2 per USD/);
  });
  it('accepts a move within the bound and currencies without a reference; 0 turns it off', () => {
    assert.deepEqual(ratesDrift(reference, NOW, new CurrencyRates({ EUR: 1.75, XYZ: 2, GBP: 9 }, NOW, 't'), 100), []);
    assert.deepEqual(ratesDrift(reference, NOW, new CurrencyRates({ EUR: 90 }, NOW, 't'), 0), []);
  });
});
