import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomInt } from 'node:crypto';
import { describe, it } from 'node:test';
import { Hmac } from '../../src/crypto/hmac';

describe('Hmac', () => {
  it('equals createHmac at every padding boundary and for non-ASCII text', () => {
    const key = Buffer.from('k'.repeat(48));
    const s = new Hmac(key);
    for (let n = 0; n <= 200; n++) {
      const text = 'é'.repeat(n % 7) + 'a'.repeat(n);
      assert.deepEqual(s.mac(text), createHmac('sha256', key).update(text).digest(), `length ${n}`);
    }
  });
  it('handles keys longer than a block and messages longer than its buffer', () => {
    const key = Buffer.alloc(100, 7);
    const s = new Hmac(key);
    const long = 'x'.repeat(5000);
    assert.deepEqual(s.mac(long), createHmac('sha256', key).update(long).digest());
    assert.deepEqual(s.mac('short'), createHmac('sha256', key).update('short').digest());
  });
  it('equals createHmac for keys shorter than, equal to and longer than a block', () => {
    for (const keyLen of [0, 1, 31, 32, 63, 64, 65, 128, 500]) {
      const key = randomBytes(keyLen);
      const s = new Hmac(key);
      for (const text of ['', 'A', 'ü✓新'.repeat(40), '😀'.repeat(300), randomBytes(700).toString('base64url')]) {
        assert.deepEqual(s.mac(text), createHmac('sha256', key).update(text).digest(), `key of ${keyLen} bytes, text of ${text.length} chars`);
      }
    }
  });
  it('macBytes equals createHmac over the bytes given, at every padding boundary and past its buffer', () => {
    const key = randomBytes(40);
    const s = new Hmac(key);
    for (const n of [...Array.from({ length: 200 }, (_, i) => i), 511, 512, 3000]) {
      const bytes = randomBytes(n + 5);
      assert.deepEqual(s.macBytes(bytes, n), createHmac('sha256', key).update(bytes.subarray(0, n)).digest(), `length ${n}`);
    }
  });
  it('gives the same answer after a longer message (no state left behind)', () => {
    const s = new Hmac(randomBytes(20));
    const first = Buffer.from(s.mac('short'));
    s.mac('x'.repeat(5000));
    assert.deepEqual(s.mac('short'), first);
  });
  it('equals createHmac on random keys and random messages', () => {
    for (let i = 0; i < 300; i++) {
      const key = randomBytes(randomInt(0, 200));
      // Random UTF-16 code units, lone surrogates included: both sides encode them as U+FFFD.
      const text = String.fromCharCode(...Array.from({ length: randomInt(0, 400) }, () => randomInt(0, 0x10000)));
      const s = new Hmac(key);
      assert.deepEqual(s.mac(text), createHmac('sha256', key).update(text).digest(), `key ${key.toString('hex')}, text ${JSON.stringify(text)}`);
    }
  });
  it('matches the RFC 4231 test case 2 vector', () => {
    const mac = new Hmac(Buffer.from('Jefe')).mac('what do ya want for nothing?');
    assert.equal(mac.toString('hex'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});
