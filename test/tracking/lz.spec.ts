import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as lzString from 'lz-string';
import { compressToEncodedURIComponent } from '../../src/tracking/lz';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), a | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

describe('lz encoder: byte-identical to lz-string compressToEncodedURIComponent', () => {
  const fixed = [
    '', 'a', 'aa', 'ab', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'abababababababab', 'hello world hello world',
    '[1,"80ce30c53c16e6ede735f123ef6e32361bfc7b22","b6a1c0a4-9d0b-4e43-8f4b-2f0c5b1f7a11","1","cmp-001-cr001","cmp-001",3.2,"USD",1763779200000,"","News Example","u1"]',
    'é漢字😀 non-latin text ünïcödé', '\u0000\u00ff\u0100\uffff',
  ];
  for (const s of fixed) {
    it(`matches on ${JSON.stringify(s).slice(0, 40)}`, () => {
      const ours = compressToEncodedURIComponent(s);
      assert.equal(ours, lzString.compressToEncodedURIComponent(s));
      assert.equal(lzString.decompressFromEncodedURIComponent(ours), s);
    });
  }
  it('matches on 3000 random strings of random alphabets and lengths', () => {
    const rand = rng(7);
    for (let n = 0; n < 3000; n++) {
      const alphabet = Math.floor(rand() * 4);
      const len = Math.floor(rand() * (n % 10 === 0 ? 5000 : 300));
      let s = '';
      for (let i = 0; i < len; i++) {
        const r = rand();
        s += String.fromCharCode(
          alphabet === 0 ? 97 + Math.floor(r * 3) : alphabet === 1 ? 32 + Math.floor(r * 95) : alphabet === 2 ? Math.floor(r * 512) : Math.floor(r * 65536),
        );
      }
      assert.equal(compressToEncodedURIComponent(s), lzString.compressToEncodedURIComponent(s), `input #${n}`);
    }
  });
});
