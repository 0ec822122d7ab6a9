import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ByteWriter, writeJsonString, writeNumber } from '../../src/bidlog/json-bytes';
import { wellFormedJson } from '../../src/bidlog/well-formed';

/** A small deterministic generator (the same numbers every run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('JSON values written as bytes (json-bytes.ts)', () => {
  it('numbers: the bytes of JSON.stringify, for integers, prices, milliseconds, fractions and the rest', () => {
    const r = rng(7);
    const values = [0, -0, 1, -1, 0.1, 0.2 + 0.1, 1 / 3, 1e-6, 1e-7, 5e-324, 123456789.123456, 999999999.999999, 1e9 + 0.5, 1e15, 1e21, 2 ** 53, -(2 ** 53), NaN, Infinity, -Infinity, 1.2345, 0.0001, 1700000000123];
    for (let i = 0; i < 20000; i++) {
      const scale = 10 ** Math.floor(r() * 8);
      values.push(Math.round(r() * 1e6 * scale) / scale, (r() - 0.5) * 10 ** Math.floor(r() * 30 - 10), Math.round(r() * 1e4) / 1e4, Math.round(r() * 1e8) / 1000);
    }
    const buf = Buffer.alloc(64);
    for (const v of values) assert.equal(buf.toString('utf8', 0, writeNumber(v, buf, 0)), JSON.stringify(v), String(v));
  });

  it('strings: the bytes of JSON.stringify made well-formed, whatever they hold', () => {
    const r = rng(11);
    const units = [0x41, 0x7a, 0x20, 0x22, 0x5c, 0x0a, 0x00, 0x1f, 0x7f, 0xe9, 0x2028, 0xd83d, 0xde00, 0xd800, 0xdfff, 0xfffd, 0x3042];
    const buf = Buffer.alloc(1024);
    for (let i = 0; i < 5000; i++) {
      let s = '';
      const n = Math.floor(r() * 20);
      for (let j = 0; j < n; j++) s += String.fromCharCode(r() < 0.7 ? 0x20 + Math.floor(r() * 95) : units[Math.floor(r() * units.length)]);
      const end = writeJsonString(s, buf, 0);
      assert.equal(buf.toString('utf8', 0, end), wellFormedJson(JSON.stringify(s)), JSON.stringify(s));
      assert.ok(end <= 6 * s.length + 2);
    }
  });

  it('ByteWriter grows and keeps what it wrote', () => {
    const w = new ByteWriter(8);
    w.raw('{"a":');
    w.str('é'.repeat(100));
    w.raw(',"b":');
    w.num(1.5);
    w.bytes(Buffer.from('}'));
    assert.equal(w.text(), JSON.stringify({ a: 'é'.repeat(100), b: 1.5 }));
  });
});
