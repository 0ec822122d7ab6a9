/** Configuration: production refuses unsafe secrets; tracking keys; the HTTP limits' ranges. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configWarnings, DEV_PII_HASH_SECRET, DEV_TRACKING_SECRET, loadConfig } from '../../src/config/config';
import { configProblems as problems } from '../support/config';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const GOOD = 'g'.repeat(32);

describe('production secrets', () => {
  const prod = { NODE_ENV: 'production', PII_HASH_SECRET: 'p'.repeat(32), TRACKING_BASE_URL: 'https://bidder.example.com', EXCHANGES_OPEN: '1' };
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
      env: { PATH: process.env.PATH, NODE_ENV: 'production', PORT: '0', EXCHANGES_OPEN: '1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /TRACKING_SECRET: .*at least 32 bytes/);
  });
});

/**
 * Who may call the bid endpoint in production: without EXCHANGES_FILE anyone could request bids
 * and bill them (spend budgets) or teach the win-price model; refused unless EXCHANGES_OPEN=1 says
 * the open endpoint is meant.
 */
describe('production admission (EXCHANGES_FILE)', () => {
  const prod = { NODE_ENV: 'production', TRACKING_SECRET: GOOD, PII_HASH_SECRET: 'o'.repeat(32), TRACKING_BASE_URL: 'https://bidder.example.com' };
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-exchanges-'));
    fs.writeFileSync(path.join(dir, 'exchanges.json'), JSON.stringify({ exchanges: [{ name: 'local', addresses: ['127.0.0.0/8', '::1'] }] }));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses production without EXCHANGES_FILE, naming it and the opt-out EXCHANGES_OPEN=1', () => {
    const p = problems(prod);
    assert.equal(p.length, 1, p.join('\n'));
    assert.match(p[0], /^EXCHANGES_FILE: not set, and NODE_ENV=production needs it/);
    assert.match(p[0], /EXCHANGES_OPEN=1/);
  });
  it('production with EXCHANGES_FILE starts, admitting its exchanges only', () => {
    const c = loadConfig({ ...prod, EXCHANGES_FILE: path.join(dir, 'exchanges.json') });
    assert.deepEqual(c.exchanges?.map((e) => e.name), ['local']);
  });
  it('production with EXCHANGES_OPEN=1 starts open, by choice', () => {
    assert.equal(loadConfig({ ...prod, EXCHANGES_OPEN: '1' }).exchanges, null);
  });
  for (const v of ['0', 'false', '']) {
    it(`EXCHANGES_OPEN=${JSON.stringify(v)} is no opt-out`, () => {
      assert.match(problems({ ...prod, EXCHANGES_OPEN: v }).join('\n'), /^EXCHANGES_FILE: not set/);
    });
  }
  it('EXCHANGES_OPEN=1 beside EXCHANGES_FILE is refused (which one is meant?)', () => {
    assert.match(problems({ ...prod, EXCHANGES_OPEN: '1', EXCHANGES_FILE: path.join(dir, 'exchanges.json') }).join('\n'), /^EXCHANGES_OPEN=1 and EXCHANGES_FILE/);
  });
  it('outside production the endpoint may stay open without a word in the configuration', () => {
    assert.deepEqual(problems({}), []);
    assert.equal(loadConfig({}).exchanges, null);
  });
  it('the process exits at once with the message', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'main.js')], {
      env: { PATH: process.env.PATH, ...prod, PORT: '0' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /EXCHANGES_FILE: not set, and NODE_ENV=production needs it.*EXCHANGES_OPEN=1/);
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

/**
 * Configuration mistakes that cannot work (issue 23, finding 8): in production each one refuses to
 * start with a message naming the variable; the hostile-input suite of configuration.
 */
describe('configuration that cannot work is refused', () => {
  const OTHER = 'o'.repeat(32);
  const prod = { NODE_ENV: 'production', TRACKING_SECRET: GOOD, PII_HASH_SECRET: OTHER, TRACKING_BASE_URL: 'https://bidder.example.com', EXCHANGES_OPEN: '1' };
  it('the production example itself starts', () => {
    assert.deepEqual(problems(prod), []);
  });
  const mistakes: Array<[string, Record<string, string>, RegExp]> = [
    ['TRACKING_BASE_URL with a query and a fragment', { TRACKING_BASE_URL: 'https://bidder.example.com/?y=1#frag' }, /^TRACKING_BASE_URL=.*query.*fragment|^TRACKING_BASE_URL=.*no path, query or fragment/],
    ['TRACKING_BASE_URL with a query', { TRACKING_BASE_URL: 'https://bidder.example.com?y=1' }, /^TRACKING_BASE_URL=/],
    ['TRACKING_BASE_URL with a fragment', { TRACKING_BASE_URL: 'https://bidder.example.com#x' }, /^TRACKING_BASE_URL=/],
    ['TRACKING_BASE_URL with a path', { TRACKING_BASE_URL: 'https://bidder.example.com/rtb' }, /^TRACKING_BASE_URL=/],
    ['TRACKING_BASE_URL with credentials', { TRACKING_BASE_URL: 'https://u:p@bidder.example.com' }, /^TRACKING_BASE_URL/],
    ['TRACKING_BASE_URL unset (the loopback default)', { TRACKING_BASE_URL: '' }, /^TRACKING_BASE_URL: not set/],
    ['TRACKING_OLD_KEYS holding the development secret', { TRACKING_OLD_KEYS: `7:${DEV_TRACKING_SECRET}` }, /^TRACKING_OLD_KEYS: key 7 is the development secret/],
    ['TRACKING_OLD_KEYS holding the PII development secret', { TRACKING_OLD_KEYS: `7:${DEV_PII_HASH_SECRET}` }, /^TRACKING_OLD_KEYS: key 7 is the development secret/],
    ['PII_HASH_SECRET equal to TRACKING_SECRET', { PII_HASH_SECRET: GOOD }, /^PII_HASH_SECRET: the same as TRACKING_SECRET/],
    ['PII_HASH_SECRET equal to an old tracking key', { TRACKING_OLD_KEYS: `7:${OTHER}` }, /^PII_HASH_SECRET: the same as key 7 of TRACKING_OLD_KEYS/],
  ];
  for (const [why, env, msg] of mistakes) {
    it(`refuses ${why} in production, naming the variable`, () => {
      const p = problems({ ...prod, ...env });
      assert.equal(p.length, 1, p.join('\n'));
      assert.match(p[0], msg);
    });
  }
  it('a TRACKING_BASE_URL with a path, query or fragment is refused outside production too (every notice URL would be broken)', () => {
    assert.match(problems({ TRACKING_BASE_URL: 'http://127.0.0.1:8080/?y=1#frag' }).join(), /^TRACKING_BASE_URL=/);
    assert.deepEqual(problems({ TRACKING_BASE_URL: 'http://127.0.0.1:8080/' }), [], 'a lone trailing slash is fine');
  });

  for (const v of ['Production', 'PRODUCTION', 'prod', 'staging', 'development production']) {
    it(`NODE_ENV=${JSON.stringify(v)} is refused, naming NODE_ENV (not run as development on the public secrets)`, () => {
      const p = problems({ ...prod, NODE_ENV: v });
      assert.equal(p.length, 1, p.join('\n'));
      assert.match(p[0], /^NODE_ENV=.*expected production, development or test/);
    });
  }
  it('NODE_ENV unset under PM2 (pm_id set) is production: the development secrets are refused', () => {
    assert.match(problems({ pm_id: '0' }).join('\n'), /TRACKING_SECRET: not set/);
    assert.equal(loadConfig({ ...prod, NODE_ENV: '', pm_id: '3' }).nodeEnv, 'production');
  });
  it('NODE_ENV unset outside PM2 is development, and says it runs on the public development secrets', () => {
    const c = loadConfig({});
    assert.equal(c.nodeEnv, 'development');
    assert.match(configWarnings(c).join('\n'), /NODE_ENV=development.*TRACKING_SECRET.*development secret/);
    assert.deepEqual(configWarnings(loadConfig(prod)), []);
  });

  it('never shows a password of REDIS_URL or a secret in a message', () => {
    const texts = [
      ...problems({ REDIS_URL: 'http://user:s3cretpw@10.0.0.5:6379' }),
      ...problems({ REDIS_URL: 'redis://user:s3cretpw@[bad:6379' }),
      ...problems({ REDIS_URL: 'redis://:s3cretpw@10.0.0.5:6379 x' }),
      ...problems({ CURRENCY_RATES_URL: 'ftp://u:s3cretpw@rates.example/k/s3cretpw' }),
      ...problems({ ...prod, TRACKING_SECRET: 's3cretpw' }),
      ...problems({ ...prod, PII_HASH_SECRET: 's3cretpw-s3cretpw' }),
      ...problems({ ...prod, TRACKING_OLD_KEYS: '5:s3cretpw' }),
      ...problems({ ...prod, TRACKING_BASE_URL: 'https://u:s3cretpw@bidder.example.com' }),
    ];
    assert.ok(texts.length >= 8, texts.join('\n'));
    for (const t of texts) assert.ok(!t.includes('s3cretpw'), t);
    assert.match(texts[0], /^REDIS_URL=.*\*\*\*/);
  });

  it('the process exits with code 2 and the message for each mistake (node dist/main.js)', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'main.js')], {
      env: { PATH: process.env.PATH, NODE_ENV: 'Production', PORT: '0', REDIS_URL: 'http://u:s3cretpw@127.0.0.1:1' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /NODE_ENV="Production"/);
    assert.match(r.stderr, /REDIS_URL=/);
    assert.ok(!r.stderr.includes('s3cretpw'), r.stderr);
  });
});
