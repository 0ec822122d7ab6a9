import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseBidCurrency, convert, isKnownCurrency, knownCurrencies, staticRates, unitsPerUsd } from '../../src/targeting/currency';

describe('currency: chooseBidCurrency', () => {
  const cases: { cur: string[]; want: string | null; why: string }[] = [
    { cur: [], want: 'USD', why: 'none listed means USD' },
    { cur: ['USD'], want: 'USD', why: 'USD allowed' },
    { cur: ['EUR', 'USD'], want: 'USD', why: 'USD preferred even when not first' },
    { cur: ['EUR', 'GBP'], want: 'EUR', why: 'first known one' },
    { cur: ['XYZ', 'GBP'], want: 'GBP', why: 'unknown ones skipped' },
    { cur: ['XYZ', 'ABC'], want: null, why: 'none known' },
    { cur: ['usd'], want: 'USD', why: 'lower case tolerated' },
    { cur: ['jpy'], want: 'JPY', why: 'answered upper case' },
  ];
  for (const c of cases) {
    it(`${JSON.stringify(c.cur)} → ${c.want} (${c.why})`, () => {
      assert.equal(chooseBidCurrency(c.cur, staticRates), c.want);
    });
  }
});

describe('currency: convert', () => {
  it('same currency is the identity, even for an unknown code', () => {
    assert.equal(convert(1.23, 'USD', 'USD'), 1.23);
    assert.equal(convert(1.23, 'XYZ', 'XYZ'), 1.23);
  });
  it('USD → EUR and back round-trips', () => {
    const eur = convert(2, 'USD', 'EUR');
    assert.ok(eur !== null);
    assert.equal(eur, 2 * (unitsPerUsd('EUR') as number));
    assert.ok(Math.abs((convert(eur, 'EUR', 'USD') as number) - 2) < 1e-12);
  });
  it('cross rate goes through USD', () => {
    const v = convert(100, 'JPY', 'GBP') as number;
    assert.ok(Math.abs(v - (100 / (unitsPerUsd('JPY') as number)) * (unitsPerUsd('GBP') as number)) < 1e-12);
    assert.ok(v > 0.3 && v < 0.7, `100 JPY is about half a pound, got ${v}`);
  });
  it('unknown currency → null', () => {
    assert.equal(convert(1, 'XYZ', 'USD'), null);
    assert.equal(convert(1, 'USD', 'XYZ'), null);
  });
  it('knows the currencies it documents', () => {
    for (const c of ['USD', 'EUR', 'GBP', 'JPY', 'CAD', 'AUD', 'CHF', 'CNY', 'INR', 'BRL', 'SEK']) assert.ok(isKnownCurrency(c), c);
    assert.ok(knownCurrencies().length >= 11);
    assert.equal(isKnownCurrency('XXX'), false);
  });
});
