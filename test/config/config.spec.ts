/** Configuration: production refuses unsafe secrets; tracking keys; the HTTP limits' ranges. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { DEV_TRACKING_SECRET, loadConfig } from '../../src/config/config';
import { configProblems as problems } from '../support/config';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const GOOD = 'g'.repeat(32);

describe('production secrets', () => {
  const prod = { NODE_ENV: 'production', PII_HASH_SECRET: GOOD };
  it('refuses to start without TRACKING_SECRET, saying what to set', () => {
    const p = problems(prod);
    assert.equal(p.length, 1);
    assert.match(p[0], /^TRACKING_SECRET: .*at least 32 bytes/);
  });
  it('refuses the development default and a secret shorter than 32 bytes', () => {
    assert.match(problems({ ...prod, TRACKING_SECRET: DEV_TRACKING_SECRET }).join(), /TRACKING_SECRET/);
    assert.match(problems({ ...prod, TRACKING_SECRET: 'x'.repeat(31) }).join(), /TRACKING_SECRET.*32 bytes/);
  });
  it('refuses a short previous key too', () => {
    assert.match(problems({ ...prod, TRACKING_SECRET: GOOD, TRACKING_OLD_KEYS: '1:short' }).join(), /TRACKING_OLD_KEYS/);
  });
  it('accepts 32 bytes and more', () => {
    assert.deepEqual(problems({ ...prod, TRACKING_SECRET: GOOD }), []);
  });
  it('outside production the development default still starts', () => {
    assert.deepEqual(problems({}), []);
    assert.equal(loadConfig({}).trackingSecret, DEV_TRACKING_SECRET);
  });
  it('the process exits at once with the message', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'main.js')], {
      env: { PATH: process.env.PATH, NODE_ENV: 'production', PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /TRACKING_SECRET: .*at least 32 bytes/);
  });
});

describe('tracking keys', () => {
  it('reads the key id and the previous keys', () => {
    const c = loadConfig({ TRACKING_SECRET: GOOD, TRACKING_KEY_ID: '4', TRACKING_OLD_KEYS: `3:${'a'.repeat(32)}, 2:${'b'.repeat(40)}` });
    assert.equal(c.trackingKeyId, 4);
    assert.deepEqual(
      c.trackingOldKeys.map((k) => k.id),
      [3, 2],
    );
  });
  it('rejects malformed previous keys and an id used twice', () => {
    assert.match(problems({ TRACKING_OLD_KEYS: 'nocolon' }).join(), /TRACKING_OLD_KEYS/);
    assert.match(problems({ TRACKING_OLD_KEYS: `300:${GOOD}` }).join(), /TRACKING_OLD_KEYS/);
    assert.match(problems({ TRACKING_KEY_ID: '1', TRACKING_OLD_KEYS: `1:${GOOD}` }).join(), /TRACKING_OLD_KEYS/);
  });
});

describe('HTTP limits', () => {
  it('defaults suited to RTB: seconds, not minutes', () => {
    const c = loadConfig({});
    assert.ok(c.httpHeadersTimeoutMs <= 5_000 && c.httpRequestTimeoutMs <= 10_000);
    assert.ok(c.httpHeadersTimeoutMs <= c.httpRequestTimeoutMs);
    assert.ok(c.httpMaxConnections > 0);
  });
  it('refuses a headers deadline above the request deadline', () => {
    assert.match(problems({ HTTP_HEADERS_TIMEOUT_MS: '5000', HTTP_REQUEST_TIMEOUT_MS: '1000' }).join(), /HTTP_HEADERS_TIMEOUT_MS/);
  });
});
