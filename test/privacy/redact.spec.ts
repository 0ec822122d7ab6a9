import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { PII_HASH_BYTES, PII_HASH_MAX_INPUT_CHARS, PiiHasher } from '../../src/privacy/pii-hasher';
import { redactRequest, truncateIp } from '../../src/privacy/redact';

const SECRET = 'test-pii-secret-0123456789abcdef';
const hasher = new PiiHasher(SECRET);

describe('privacy: truncateIp', () => {
  const cases: [unknown, string | null, string][] = [
    ['203.0.113.7', '203.0.113.0', 'IPv4 → /24'],
    ['10.0.0.0', '10.0.0.0', 'already a /24'],
    ['255.255.255.255', '255.255.255.0', 'top of the range'],
    ['2001:db8:85a3::8a2e:370:7334', '2001:db8:85a3::', 'IPv6 compressed → /48'],
    ['2001:0db8:85a3:0000:0000:8a2e:0370:7334', '2001:db8:85a3::', 'IPv6 full form'],
    ['2001:DB8:85A3:1:2:3:4:5', '2001:db8:85a3::', 'upper case'],
    ['2001:db8::1', '2001:db8::', 'a zero third group'],
    ['2001:0:0:1::', '2001::', 'zeros compressed as one run'],
    ['0:0:1::1', '0:0:1::', 'longest zero run compressed'],
    ['::1', '::', 'loopback'],
    ['::', '::', 'unspecified'],
    ['fe80::1%eth0', 'fe80::', 'zone id removed'],
    ['::ffff:192.0.2.77', '::ffff:192.0.2.0', 'IPv4-mapped, dotted → IPv4 /24'],
    ['::ffff:c000:24d', '::ffff:192.0.2.0', 'IPv4-mapped, hex'],
    ['0:0:0:0:0:ffff:192.0.2.77', '::ffff:192.0.2.0', 'IPv4-mapped, full form'],
    ['2001:db8:1:2:3:4:192.0.2.1', '2001:db8:1::', 'embedded IPv4 in a non-mapped address'],
    ['2001:db8::192.0.2.1', '2001:db8::', 'embedded IPv4 after ::'],
    ['1.2.3', null, 'three parts'],
    ['256.1.1.1', null, 'octet out of range'],
    ['01.2.3.4', null, 'leading zero (octal in some parsers)'],
    [' 1.2.3.4', null, 'spaces'],
    ['2001:db8:::1', null, 'triple colon'],
    ['1:2:3:4:5:6:7:8:9', null, 'nine groups'],
    ['localhost', null, 'a name'],
    ['', null, 'empty'],
    [1234, null, 'a number'],
    [null, null, 'null'],
    [{ ip: '1.2.3.4' }, null, 'an object'],
  ];
  for (const [ip, want, why] of cases) {
    it(`${JSON.stringify(ip)} → ${JSON.stringify(want)} (${why})`, () => assert.equal(truncateIp(ip), want));
  }
});

function typical(): any {
  return {
    id: 'r1',
    imp: [{ id: '1', banner: { w: 300, h: 250 } }],
    site: { domain: 'news.example' },
    device: {
      ua: 'Mozilla/5.0',
      ip: '203.0.113.7',
      ipv6: '2001:db8:85a3::8a2e:370:7334',
      ifa: '6d92078a-8246-4ba4-ae5b-76104861e7dc',
      geo: { country: 'USA', lat: 40.712776, lon: -74.005974, zip: '10001' },
      lmt: 0,
    },
    user: {
      id: 'user-123',
      buyeruid: 'buyer-456',
      consent: 'CQ…',
      data: [{ id: 'seg', segment: [{ id: '1' }] }],
      eids: [{ source: 'id5-sync.com', uids: [{ id: 'ID5*x' }] }],
      ext: { eids: [{ source: 'liveramp.com', uids: [{ id: 'XY' }] }], other: 'kept' },
      geo: { lat: '51.507351', lon: -0.127758 },
    },
  };
}

describe('privacy: redactRequest', () => {
  it('removes the personal data of a typical request', () => {
    const r = typical();
    assert.equal(redactRequest(r, hasher, { keepRawPii: false }), true);
    assert.equal(r.device.ip, '203.0.113.0');
    assert.equal(r.device.ipv6, '2001:db8:85a3::');
    assert.equal(r.device.ifa, hasher.hash('6d92078a-8246-4ba4-ae5b-76104861e7dc'));
    assert.equal(r.user.id, hasher.hash('user-123'));
    assert.equal(r.user.buyeruid, hasher.hash('buyer-456'));
    // Dropped fields are left undefined, so the log's JSON.stringify leaves them out.
    const logged = JSON.parse(JSON.stringify(r));
    assert.equal('data' in logged.user, false);
    assert.equal('eids' in logged.user, false);
    assert.equal('eids' in logged.user.ext, false);
    assert.equal(r.user.ext.other, 'kept');
    assert.deepEqual(r.device.geo, { country: 'USA', lat: 40.71, lon: -74.01, zip: '10001' });
    assert.deepEqual(r.user.geo, { lat: 51.51, lon: -0.13 });
    // Untouched: what is not personal.
    assert.equal(r.device.ua, 'Mozilla/5.0');
    assert.equal(r.user.consent, 'CQ…');
    assert.deepEqual(r.imp, typical().imp);
    const text = JSON.stringify(r);
    for (const raw of ['203.0.113.7', '8a2e', '6d92078a', 'user-123', 'buyer-456', 'ID5*x', 'liveramp']) assert.ok(!text.includes(raw), raw);
  });

  it('keeps everything raw when allowed', () => {
    const r = typical();
    assert.equal(redactRequest(r, hasher, { keepRawPii: true }), false);
    assert.deepEqual(r, typical());
  });

  it('hashes ids stably: the same id gives the same key, in any request', () => {
    const a = typical();
    const b = typical();
    b.user.id = 'user-999';
    redactRequest(a, hasher, { keepRawPii: false });
    redactRequest(b, hasher, { keepRawPii: false });
    assert.equal(a.device.ifa, b.device.ifa);
    assert.notEqual(a.user.id, b.user.id);
    assert.equal(a.user.id, new PiiHasher(SECRET).hash('user-123'));
  });

  it('puts an IPv6 sent in device.ip through the IPv6 rule, and an IPv4 in device.ipv6 through the IPv4 one', () => {
    const r: any = { device: { ip: '2001:db8:1:2::5', ipv6: '198.51.100.9' } };
    redactRequest(r, hasher, { keepRawPii: false });
    assert.deepEqual(r.device, { ip: '2001:db8:1::', ipv6: '198.51.100.0' });
  });

  it('drops what cannot be truncated or hashed', () => {
    const r: any = { device: { ip: 'junk', ipv6: 12, ifa: { x: 1 }, geo: { lat: 'north', lon: null } }, user: { id: '', buyeruid: ['b'] } };
    assert.equal(redactRequest(r, hasher, { keepRawPii: false }), true);
    assert.deepEqual(JSON.parse(JSON.stringify(r)), { device: { geo: {} }, user: {} });
  });

  it('hashes numeric ids and the OpenRTB 2.5 hardware ids', () => {
    const r: any = { device: { didsha1: 'abc', dpidmd5: 'def', macsha1: 'ghi' }, user: { id: 12345 } };
    redactRequest(r, hasher, { keepRawPii: false });
    assert.deepEqual(r, { device: { didsha1: hasher.hash('abc'), dpidmd5: hasher.hash('def'), macsha1: hasher.hash('ghi') }, user: { id: hasher.hash('12345') } });
  });

  it('reports no change when there is nothing personal', () => {
    const r: any = { id: 'r', imp: [{ id: '1' }], device: { ua: 'x', ip: '192.0.2.0', geo: { country: 'FRA', lat: 48.85, lon: 2.35 } }, user: { ext: { consent: 'CQ' } } };
    const before = structuredClone(r);
    assert.equal(redactRequest(r, hasher, { keepRawPii: false }), false);
    assert.deepEqual(r, before);
  });

  it('never throws on odd bodies', () => {
    for (const body of [null, undefined, 'x', 5, [], [{ device: { ip: '1.2.3.4' } }], { device: 'd', user: [1] }, { device: null, user: null }]) {
      assert.equal(redactRequest(body, hasher, { keepRawPii: false }), false);
    }
  });
});

describe('privacy: PiiHasher', () => {
  it('is HMAC-SHA256 of the UTF-8 id, truncated to 16 bytes, base64url', () => {
    for (const id of ['user-123', '6d92078a-8246-4ba4-ae5b-76104861e7dc', 'é漢字🙂', '', 'x'.repeat(500)]) {
      const want = createHmac('sha256', SECRET).update(id, 'utf8').digest().subarray(0, PII_HASH_BYTES).toString('base64url');
      assert.equal(hasher.hash(id), want, id);
    }
    assert.match(hasher.hash('a'), /^[A-Za-z0-9_-]{22}$/);
  });

  it('hashes a secret longer than a block first (RFC 2104)', () => {
    const long = Buffer.alloc(100, 7);
    assert.equal(new PiiHasher(long).hash('u'), createHmac('sha256', long).update('u').digest().subarray(0, PII_HASH_BYTES).toString('base64url'));
  });

  it('depends on the secret', () => {
    assert.notEqual(new PiiHasher(`${SECRET}x`).hash('user-123'), hasher.hash('user-123'));
    assert.equal(new PiiHasher(Buffer.from(SECRET)).hash('user-123'), hasher.hash('user-123'));
  });

  it('refuses a secret shorter than 16 bytes', () => {
    assert.throws(() => new PiiHasher('short'), /at least 16 bytes/);
  });

  it(`hashes only the first ${PII_HASH_MAX_INPUT_CHARS} characters of a very long id`, () => {
    const long = 'y'.repeat(PII_HASH_MAX_INPUT_CHARS);
    assert.equal(hasher.hash(`${long}tail`), hasher.hash(long));
    assert.notEqual(hasher.hash(long.slice(1)), hasher.hash(long));
  });
});
