import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { HmacSha256 } from '../../src/tracking/hmac-sha256';

const reference = (key: Uint8Array, text: string): string => createHmac('sha256', key).update(text, 'utf8').digest('hex');

describe('HmacSha256', () => {
  it('equals node:crypto at every padding boundary (message bytes 0 to 200)', () => {
    // 55/56 and 119/120 bytes are where the length no longer fits in the last block.
    const key = Buffer.from('dev-only-tracking-secret-change-me');
    const mac = new HmacSha256(key);
    for (let n = 0; n <= 200; n++) {
      const text = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(6).slice(0, n);
      assert.equal(mac.macOfText(text).toString('hex'), reference(key, text), `message of ${n} bytes`);
    }
  });

  it('equals node:crypto for keys shorter than, equal to and longer than a block, and for non-ASCII text', () => {
    for (const keyLen of [0, 1, 31, 32, 63, 64, 65, 128, 500]) {
      const key = randomBytes(keyLen);
      const mac = new HmacSha256(key);
      for (const text of ['', 'A', 'ü✓新'.repeat(40), '😀'.repeat(300), randomBytes(700).toString('base64url')]) {
        assert.equal(mac.macOfText(text).toString('hex'), reference(key, text), `key of ${keyLen} bytes, text of ${text.length} chars`);
      }
    }
  });

  it('gives the same answer when called again after a longer message (no state left behind)', () => {
    const key = randomBytes(20);
    const mac = new HmacSha256(key);
    const short = 'short';
    const first = mac.macOfText(short).toString('hex');
    mac.macOfText('x'.repeat(5000));
    assert.equal(mac.macOfText(short).toString('hex'), first);
    assert.equal(first, reference(key, short));
  });

  it('matches the RFC 4231 test case 2 vector', () => {
    const mac = new HmacSha256(Buffer.from('Jefe'));
    assert.equal(mac.macOfText('what do ya want for nothing?').toString('hex'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
  });
});
