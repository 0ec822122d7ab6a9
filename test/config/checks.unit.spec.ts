/** Configuration checks an operator meets: passwords never shown, old keys as written, the development secrets in any place, the tracking and DSA addresses. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BIDDER_ENV, configWarnings, DEV_PII_HASH_SECRET, DEV_TRACKING_SECRET, hideUserinfo, loadConfig } from '../../src/config/config';
import { redactUrl } from '../../src/redis/redis.options';
import { configProblems as problems } from '../support/config';

const prod = { NODE_ENV: 'production', EXCHANGES_OPEN: '1', TRACKING_SECRET: 't'.repeat(32), PII_HASH_SECRET: 'p'.repeat(32), TRACKING_BASE_URL: 'https://bidder.example.com' };

describe('a password with an unencoded @ is never shown, not even in part', () => {
  for (const [name, value] of [
    ['REDIS_URL', 'http://:p@ss-hunter2@redis.example.com:6379'],
    ['CURRENCY_RATES_URL', 'ftp://user:p@ss-hunter2@rates.example.com/latest.json'],
    ['TRACKING_BASE_URL', 'https://user:p@ss-hunter2@bidder.example.com'],
  ] as const) {
    it(name, () => {
      const p = problems({ [name]: value }).join('\n');
      assert.match(p, new RegExp(name));
      assert.doesNotMatch(p, /hunter2|p@ss|ss-/, p);
    });
  }
  it('hideUserinfo and redactUrl hide everything up to the last @ of the address', () => {
    assert.equal(hideUserinfo('redis://:p@ss-hunter2@host:6379'), 'redis://***@host:6379');
    assert.doesNotMatch(redactUrl('redis://:p@ss hunter2@host:6379'), /hunter2/);
  });
});

describe('TRACKING_OLD_KEYS as written', () => {
  it('refuses a secret with a space after the colon (every URL signed with the old key would be refused)', () => {
    const p = problems({ TRACKING_OLD_KEYS: `2: ${'o'.repeat(32)}` }).join('\n');
    assert.match(p, /TRACKING_OLD_KEYS: key 2: .*whitespace/);
  });
  it('in production, a development secret with spaces around it is still the development secret', () => {
    const p = problems({ ...prod, TRACKING_OLD_KEYS: `2:${DEV_TRACKING_SECRET} ` }).join('\n');
    assert.match(p, /TRACKING_OLD_KEYS/);
  });
  it('accepts pairs separated by a comma and spaces', () => {
    assert.deepEqual(problems({ ...prod, TRACKING_OLD_KEYS: `2:${'o'.repeat(32)}, 3:${'q'.repeat(32)}` }), []);
  });
});

describe('production refuses either development secret in either place', () => {
  it('TRACKING_SECRET set to the development PII secret', () => {
    assert.match(problems({ ...prod, TRACKING_SECRET: DEV_PII_HASH_SECRET }).join('\n'), /TRACKING_SECRET: .*development/);
  });
  it('PII_HASH_SECRET set to the development tracking secret', () => {
    assert.match(problems({ ...prod, PII_HASH_SECRET: DEV_TRACKING_SECRET }).join('\n'), /PII_HASH_SECRET: .*development/);
  });
});

describe('the tracking and DSA addresses', () => {
  it('production warns about an explicit loopback TRACKING_BASE_URL (it reaches no exchange)', () => {
    for (const url of ['http://127.0.0.1:8080', 'http://localhost:8080', 'http://[::1]:8080', 'http://0.0.0.0:8080']) {
      const w = configWarnings(loadConfig({ ...prod, TRACKING_BASE_URL: url })).join('\n');
      assert.match(w, /TRACKING_BASE_URL=.*reaches no exchange/, url);
    }
    assert.deepEqual(configWarnings(loadConfig(prod)), []);
  });
  it('DSA_DOMAIN is not taken from an IP address: warned, and left to DSA_DOMAIN', () => {
    const cfg = loadConfig({ ...prod, TRACKING_BASE_URL: 'https://203.0.113.7' });
    assert.equal(cfg.dsaDomain, '');
    assert.match(configWarnings(cfg).join('\n'), /DSA_DOMAIN: not set, and TRACKING_BASE_URL's host 203\.0\.113\.7 is an IP address/);
    assert.equal(loadConfig({ ...prod, TRACKING_BASE_URL: 'https://[2001:db8::1]' }).dsaDomain, '');
    assert.equal(loadConfig(prod).dsaDomain, 'bidder.example.com');
    assert.equal(loadConfig({ ...prod, TRACKING_BASE_URL: 'https://203.0.113.7', DSA_DOMAIN: 'example.com' }).dsaDomain, 'example.com');
  });
  it('refuses a DSA_DOMAIN that is not a domain name', () => {
    assert.match(problems({ DSA_DOMAIN: 'https://example.com/' }).join('\n'), /DSA_DOMAIN=/);
    assert.match(problems({ DSA_DOMAIN: '203.0.113.7' }).join('\n'), /DSA_DOMAIN=/);
  });
});

describe('the environment schema: types, defaults, bounds and problems from one place', () => {
  const vars = Object.entries(BIDDER_ENV.properties);

  it('with nothing set, every variable takes its schema default', () => {
    const c = loadConfig({});
    assert.equal(c.port, BIDDER_ENV.properties.PORT.default);
    assert.equal(c.logRequestSample, BIDDER_ENV.properties.LOG_REQUEST_SAMPLE.default);
    assert.equal(c.pacingWindowMs, BIDDER_ENV.properties.PACING_WINDOW_S.default * 1000);
    assert.equal(c.tcfVendorId, null);
  });

  for (const [name, schema] of vars.filter(([, s]) => s.type === 'integer')) {
    it(`${name}: past its bounds or not a whole number, one problem naming it and its bounds`, () => {
      const max = schema.maximum as number;
      assert.deepEqual(problems({ [name]: String(max + 1) }), [`${name}=${max + 1}: expected a number from ${schema.minimum as number} to ${max}`]);
      assert.deepEqual(problems({ [name]: '1.5' }), [`${name}="1.5": expected a whole number`]);
    });
  }

  for (const [name] of vars.filter(([, s]) => s.type === 'boolean')) {
    it(`${name}: yes/no/on/off/1/0 in any case, anything else one problem`, () => {
      assert.deepEqual(problems({ [name]: 'Yes' }), []);
      assert.deepEqual(problems({ [name]: 'maybe' }), [`${name}="maybe": expected true or false`]);
    });
  }

  it('LOG_LEVEL: one of its words; LOG_REQUEST_SAMPLE: a number from 0 to 1', () => {
    assert.deepEqual(problems({ LOG_LEVEL: 'loud' }), ['LOG_LEVEL="loud": expected one of fatal, error, warn, info, debug, trace, silent']);
    assert.deepEqual(problems({ LOG_REQUEST_SAMPLE: '1.5' }), ['LOG_REQUEST_SAMPLE="1.5": expected a number from 0 to 1']);
    assert.equal(loadConfig({ LOG_REQUEST_SAMPLE: '.25' }).logRequestSample, 0.25);
  });
});
