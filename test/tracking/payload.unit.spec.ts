import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, it } from 'node:test';
import * as lz from 'lz-string';
import { type Audience, PAYLOAD_VERSION, PayloadCodec, PayloadError, type TrackingKeys, type TrackingPayload } from '../../src/tracking/payload';

const sample: TrackingPayload = {
  requestId: 'req-1', bidId: '6f1c2a4e-0000-4000-8000-000000000001', impId: '1', crid: 'cr-1', cid: 'c-1',
  price: 1.25, cur: 'USD', ts: 1_700_000_000_000, dealId: '', publisher: 'pub "quoted" & co', userKey: 'hashed-user', test: false, source: 0,
};
const SECRET = 'k1-secret';
const keys = (secret = SECRET, id = 1, old: Array<{ id: number; secret: string }> = [], legacy = true): TrackingKeys => ({
  current: { id, secret },
  accepted: [{ id, secret }, ...old],
  legacy,
});

function parts(q: string): { p: string; s: string } {
  const u = new URLSearchParams(q);
  return { p: u.get('p')!, s: u.get('s')! };
}

/** What a signature is, computed independently: HMAC-SHA256 under HMAC(secret, "tracking:<audience>"), 16 bytes, base64url. */
function sign(secret: string, audience: Audience, packed: string): string {
  // Format 3: one HMAC-SHA256 under a key derived from the secret; its first half for the servers, its last for browsers.
  const key = createHmac('sha256', secret).update('tracking:v3').digest();
  const mac = createHmac('sha256', key).update(packed).digest();
  return (audience === 's2s' ? mac.subarray(0, 16) : mac.subarray(16, 32)).toString('base64url');
}

/** What earlier versions wrote: one HMAC under the secret itself, for every URL. */
function legacySign(secret: string, packed: string): string {
  return createHmac('sha256', secret).update(packed).digest().subarray(0, 16).toString('base64url');
}

describe('tracking payload codec', () => {
  const codec = new PayloadCodec(keys());
  it(`writes format ${PAYLOAD_VERSION} with the signing key's id, and round-trips it for both audiences`, () => {
    const q = codec.encode(sample);
    const s2s = parts(q.s2s);
    const browser = parts(q.browser);
    assert.equal(s2s.p, browser.p, 'one payload, two signatures');
    assert.notEqual(s2s.s, browser.s);
    const bytes = Buffer.from(s2s.p, 'base64url');
    assert.equal(bytes[0], PAYLOAD_VERSION);
    assert.equal(bytes[2], 1, 'key id');
    assert.deepEqual(codec.decode(s2s.p, s2s.s, 's2s'), sample);
    assert.deepEqual(codec.decode(browser.p, browser.s, 'browser'), sample);
    assert.equal(s2s.s, sign(SECRET, 's2s', s2s.p));
    assert.equal(browser.s, sign(SECRET, 'browser', browser.p));
  });
  it('pack writes the payload and both signatures as the text encode joins; a UUID given as bytes packs as its text', () => {
    for (let i = 0; i < 300; i++) {
      const p = { ...sample, requestId: 'r'.repeat(i), publisher: 'é'.repeat(i % 50), bidId: i % 2 === 0 ? sample.bidId : `not-a-uuid-${i}` };
      const q = codec.encode(p);
      codec.pack(p, null, 0);
      const n = codec.packedChars;
      const text = codec.text.toString('latin1', 0, n + 44);
      assert.equal(`p=${text.slice(0, n)}&s=${text.slice(n, n + 22)}`, q.s2s);
      assert.equal(`p=${text.slice(0, n)}&s=${text.slice(n + 22)}`, q.browser);
    }
    const bytes = Buffer.alloc(40);
    Buffer.from(sample.bidId.replace(/-/g, ''), 'hex').copy(bytes, 7);
    codec.pack({ ...sample, bidId: '' }, bytes, 7);
    assert.equal(codec.text.toString('latin1', 0, codec.packedChars), parts(codec.encode(sample).s2s).p);
  });

  it('a signature for one audience is refused for the other', () => {
    const q = codec.encode(sample);
    const b = parts(q.browser);
    assert.throws(() => codec.decode(b.p, b.s, 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_signature');
    const s = parts(q.s2s);
    assert.throws(() => codec.decode(s.p, s.s, 'browser'), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_signature');
  });
  it('round-trips unusual values: non-UUID bid id, Unicode, long strings (multi-byte lengths), odd prices', () => {
    const cases: TrackingPayload[] = [
      { ...sample, bidId: 'not-a-uuid' },
      { ...sample, bidId: '6F1C2A4E-0000-4000-8000-00000000000A' },
      { ...sample, publisher: 'Zeitung für Ölförderung ✓ 新聞', userKey: '𝔘𝔰𝔢𝔯' },
      { ...sample, requestId: 'r'.repeat(127), userKey: 'u'.repeat(128), dealId: 'd'.repeat(256) },
      { ...sample, price: 0.000_001, ts: 0 },
      { ...sample, price: 123_456.789, cur: 'JPY', dealId: 'deal-7' },
      { ...sample, requestId: '', impId: '', crid: '', cid: '', cur: '', publisher: '', userKey: '' },
      // A test bid, and the exchange's index in the flags byte (0-63), with and without a UUID bid id.
      { ...sample, test: true, source: 5 },
      { ...sample, bidId: 'not-a-uuid', test: true, source: 63 },
      { ...sample, test: false, source: 1 },
    ];
    for (const c of cases) {
      const { p, s } = parts(codec.encode(c).s2s);
      const back = codec.decode(p, s, 's2s');
      // A UUID in upper case comes back in lower case: the bytes are what is kept.
      assert.deepEqual(back, c.bidId.startsWith('6F1C') ? { ...c, bidId: c.bidId.toLowerCase() } : c);
    }
  });
  it('keys rotate: a payload signed with an earlier key is read where that key is still listed', () => {
    const before = new PayloadCodec(keys('old-secret', 1));
    const { p, s } = parts(before.encode(sample).s2s);
    const rotated = new PayloadCodec(keys('new-secret', 2, [{ id: 1, secret: 'old-secret' }]));
    assert.deepEqual(rotated.decode(p, s, 's2s'), sample);
    assert.equal(Buffer.from(parts(rotated.encode(sample).s2s).p, 'base64url')[2], 2, 'new payloads name the new key');
    const fresh = new PayloadCodec(keys('new-secret', 2));
    assert.throws(() => fresh.decode(p, s, 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === 'unknown_key');
  });
  it('still reads format 1 (lz-string) and format 2 payloads of earlier versions, with either audience, without their user ids', () => {
    const v1 = lz.compressToEncodedURIComponent(JSON.stringify([1, 'r', 'b', 'i', 'cr', 'c', 2, 'USD', 5, '', 'pub', 'raw-user']));
    const a = codec.decode(v1, legacySign(SECRET, v1), 'browser');
    assert.equal(a.requestId, 'r');
    assert.equal(a.userKey, '');
    // Format 2: format 3 without the key id byte.
    const v3 = Buffer.from(parts(codec.encode(sample).s2s).p, 'base64url');
    const v2bytes = Buffer.concat([Buffer.from([2, v3[1]]), v3.subarray(3)]);
    const v2 = v2bytes.toString('base64url');
    const b = codec.decode(v2, legacySign(SECRET, v2), 's2s');
    assert.deepEqual(b, { ...sample, userKey: '' });
    const strict = new PayloadCodec(keys(SECRET, 1, [], false));
    assert.throws(() => strict.decode(v1, legacySign(SECRET, v1), 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_version');
    assert.throws(() => strict.decode(v2, legacySign(SECRET, v2), 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_version');
  });
  const rejects: Array<{ name: string; mutate: (x: { p: string; s: string }) => { p?: string; s?: string }; reason: string }> = [
    { name: 'missing signature', mutate: (x) => ({ p: x.p }), reason: 'missing' },
    { name: 'tampered payload', mutate: (x) => ({ p: x.p.slice(0, 10) + (x.p[10] === 'x' ? 'y' : 'x') + x.p.slice(11), s: x.s }), reason: 'bad_signature' },
    { name: 'forged signature', mutate: (x) => ({ p: x.p, s: 'AAAAAAAAAAAAAAAAAAAAAA' }), reason: 'bad_signature' },
    { name: 'signature of another secret', mutate: (x) => ({ p: x.p, s: sign('k2', 's2s', x.p) }), reason: 'bad_signature' },
    { name: 'an over-long payload', mutate: (x) => ({ p: x.p + 'A'.repeat(10_000), s: x.s }), reason: 'bad_signature' },
    { name: 'signed truncated format 3', mutate: (x) => ({ p: x.p.slice(0, 30), s: sign(SECRET, 's2s', x.p.slice(0, 30)) }), reason: 'undecodable' },
    { name: 'signed format 3 with trailing bytes', mutate: (x) => ({ p: `${x.p}AAAA`, s: sign(SECRET, 's2s', `${x.p}AAAA`) }), reason: 'undecodable' },
  ];
  for (const c of rejects) {
    it(`rejects ${c.name}`, () => {
      const m = c.mutate(parts(codec.encode(sample).s2s));
      assert.throws(() => codec.decode(m.p, m.s, 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === c.reason);
    });
  }
  it('rejects a payload of an unknown format version', () => {
    const buf = Buffer.from(parts(codec.encode(sample).s2s).p, 'base64url');
    buf[0] = 0;
    const p = buf.toString('base64url');
    assert.throws(() => codec.decode(p, sign(SECRET, 's2s', p), 's2s'), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_version');
  });
  it('contains no characters that break URLs or exchange macros', () => {
    const q = codec.encode(sample);
    for (const x of [q.s2s, q.browser]) {
      assert.match(x, /^p=[A-Za-z0-9_-]+&s=[A-Za-z0-9_-]+$/);
      assert.ok(!x.includes('${'));
    }
  });
});
