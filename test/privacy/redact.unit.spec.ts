import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import { PII_HASH_BYTES, PII_HASH_MAX_INPUT_CHARS, PiiHasher } from '../../src/privacy/pii-hasher';
import { pseudonymize, requestLogJson, truncateIp } from '../../src/privacy/redact';

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

/** The request record's `req` as the log keeps it (redaction on). */
function logged(body: unknown): any {
  return JSON.parse(requestLogJson(body, hasher, { keepRawPii: false }));
}

describe('privacy: requestLogJson (the request record, by allowlist)', () => {
  it('removes the personal data of a typical request', () => {
    const r = typical();
    const l = logged(r);
    assert.equal(l.device.ip, '203.0.113.0');
    assert.equal(l.device.ipv6, '2001:db8:85a3::');
    assert.equal(l.device.ifa, hasher.hash('6d92078a-8246-4ba4-ae5b-76104861e7dc'));
    assert.equal(l.user.id, hasher.hash('user-123'));
    assert.equal(l.user.buyeruid, hasher.hash('buyer-456'));
    assert.equal('data' in l.user, false);
    assert.equal('eids' in l.user, false);
    // user.ext keeps only the consent string: eids and anything unknown are not on the list.
    assert.equal('ext' in l.user && Object.keys(l.user.ext).length, 0);
    assert.deepEqual(l.device.geo, { country: 'USA', lat: 40.71, lon: -74.01, zip: '10001' });
    assert.deepEqual(l.user.geo, { lat: 51.51, lon: -0.13 });
    // Kept as sent: what is not personal.
    assert.equal(l.device.ua, 'Mozilla/5.0');
    assert.equal(l.user.consent, 'CQ…');
    assert.deepEqual(l.imp, typical().imp);
    assert.deepEqual(l.site, typical().site);
    const text = JSON.stringify(l);
    for (const raw of ['203.0.113.7', '8a2e', '6d92078a', 'user-123', 'buyer-456', 'ID5*x', 'liveramp', 'kept']) assert.ok(!text.includes(raw), raw);
    // The parsed body is read, not changed.
    assert.deepEqual(r, typical());
  });

  it('keeps the request as sent when allowed', () => {
    assert.deepEqual(JSON.parse(requestLogJson(typical(), hasher, { keepRawPii: true })), typical());
  });

  it('leaves out every field and ext member it does not name, and objects where a value belongs', () => {
    const r = {
      id: 'r',
      imp: [{ id: '1', banner: { w: 1, h: 2, ext: { any: 'inventory' } }, ext: { gpid: 'g', bidder: { key: 'x' } } }, 'not an imp'],
      device: { ua: 'u', ext: { ifv: 'IFV', idfv: 'IDFV', atts: 2 }, make: { nested: 'OBJ' }, model: ['a', { b: 'ARR' }] },
      user: { ext: { prebid: { buyeruids: { a: 'BUYERUIDS' } }, tpid: [{ uid: 'TPID' }], consent: 'C' }, keywords: 'k' },
      regs: { gdpr: 1, ext: { dsa: { dsarequired: 1 }, other: 'REGS' } },
      source: { tid: 't', schain: { ver: '1.0', nodes: [] }, ext: { junk: 'SRC' } },
      ext: { prebid: { x: 'REQEXT' } },
      unknown: 'TOP',
    };
    assert.deepEqual(logged(r), {
      id: 'r',
      imp: [{ id: '1', banner: { w: 1, h: 2, ext: { any: 'inventory' } }, ext: { gpid: 'g' } }],
      device: { ua: 'u', ext: { atts: 2 } },
      user: { ext: { consent: 'C' }, keywords: 'k' },
      regs: { gdpr: 1, ext: { dsa: { dsarequired: 1 } } },
      source: { tid: 't', schain: { ver: '1.0', nodes: [] }, ext: {} },
    });
  });

  it('hashes ids stably: the same id gives the same key, in any request', () => {
    const b = typical();
    b.user.id = 'user-999';
    const la = logged(typical());
    const lb = logged(b);
    assert.equal(la.device.ifa, lb.device.ifa);
    assert.notEqual(la.user.id, lb.user.id);
    assert.equal(la.user.id, new PiiHasher(SECRET).hash('user-123'));
  });

  it('puts an IPv6 sent in device.ip through the IPv6 rule, and an IPv4 in device.ipv6 through the IPv4 one', () => {
    assert.deepEqual(logged({ device: { ip: '2001:db8:1:2::5', ipv6: '198.51.100.9' } }).device, { ip: '2001:db8:1::', ipv6: '198.51.100.0' });
  });

  it('drops what cannot be truncated or hashed', () => {
    const r = { device: { ip: 'junk', ipv6: 12, ifa: { x: 1 }, geo: { lat: 'north', lon: null } }, user: { id: '', buyeruid: ['b'] } };
    assert.deepEqual(logged(r), { device: { geo: {} }, user: {} });
  });

  it('hashes numeric ids and the OpenRTB 2.5 hardware ids', () => {
    const r = { device: { didsha1: 'abc', dpidmd5: 'def', macsha1: 'ghi' }, user: { id: 12345 } };
    assert.deepEqual(logged(r), { device: { didsha1: hasher.hash('abc'), dpidmd5: hasher.hash('def'), macsha1: hasher.hash('ghi') }, user: { id: hasher.hash('12345') } });
  });

  it('keeps a request with nothing personal as it was', () => {
    const r = { id: 'r', imp: [{ id: '1' }], device: { ua: 'x', ip: '192.0.2.0', geo: { country: 'FRA', lat: 48.85, lon: 2.35 } }, user: { ext: { consent: 'CQ' } } };
    assert.deepEqual(logged(r), r);
  });

  it('writes valid JSON for odd bodies and strings that need escaping, and never throws', () => {
    for (const body of [null, undefined, 'x', 5, [], [{ device: { ip: '1.2.3.4' } }], { device: 'd', user: [1] }, { device: null, user: null }]) {
      const text = requestLogJson(body, hasher, { keepRawPii: false });
      assert.doesNotThrow(() => JSON.parse(text), text);
    }
    const r = { id: 'a"b\\c\n\u2028', site: { name: 'x/?q="\u0000' } };
    assert.deepEqual(logged(r), r);
  });

  it('keeps page, referrer and content URLs without their query string and fragment (they may carry an e-mail or a session token)', () => {
    const r = {
      site: {
        page: 'https://news.example/a/b?email=jo%40example.com&utm=x#top',
        ref: 'https://search.example/?q=jo+smith',
        content: { url: 'https://news.example/v#t=3' },
      },
      app: { content: { url: 'https://app.example/c?token=abc' }, storeurl: 'https://play.google.com/store/apps/details?id=com.example' },
    };
    assert.deepEqual(logged(r), {
      site: { page: 'https://news.example/a/b', ref: 'https://search.example/', content: { url: 'https://news.example/v' } },
      // A store URL names the app, never a person: kept whole.
      app: { content: { url: 'https://app.example/c' }, storeurl: 'https://play.google.com/store/apps/details?id=com.example' },
    });
    // Without a query or fragment the value is kept as it is; a non-string is left out.
    assert.deepEqual(logged({ site: { page: 'https://news.example/a', ref: 7 } }), { site: { page: 'https://news.example/a' } });
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

describe('privacy: pseudonymize (the request record and the user key, made together)', () => {
  const mac = (id: string): string => createHmac('sha256', SECRET).update(id).digest().subarray(0, PII_HASH_BYTES).toString('base64url');
  const body = { id: 'r1', device: { ifa: 'ifa-1', ip: '203.0.113.7' }, user: { id: 'user-1', buyeruid: 'buyer-1' } };

  it('keys the user by the keyed hash of the id, the same the record holds, only with user data', () => {
    const h = new PiiHasher(SECRET);
    const a = pseudonymize(body, 'user-1', true, h, { keepRawPii: false });
    const rec = JSON.parse(a.record);
    assert.equal(a.userKey, mac('user-1'));
    assert.equal(rec.user.id, a.userKey);
    assert.equal(rec.device.ifa, mac('ifa-1'));
    assert.equal(rec.user.buyeruid, mac('buyer-1'));
    assert.equal(rec.device.ip, '203.0.113.0');
    assert.equal(pseudonymize(body, 'user-1', false, h, { keepRawPii: false }).userKey, '', 'no user data: no key');
    assert.equal(pseudonymize(body, '', true, h, { keepRawPii: false }).userKey, '', 'no id: no key');
  });

  it('keeps the request raw with keepRawPii and still keys the user', () => {
    const a = pseudonymize(body, 'user-1', true, new PiiHasher(SECRET), { keepRawPii: true });
    assert.deepEqual(JSON.parse(a.record), body);
    assert.equal(a.userKey, mac('user-1'));
  });

  it('gives every id its own hash when more ids than the hasher remembers go through it', () => {
    const h = new PiiHasher(SECRET);
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'a', 'c', 'f', 'b', 'a', 'a', 'e'];
    for (const id of ids) assert.equal(h.hash(id), mac(id), id);
  });
});
