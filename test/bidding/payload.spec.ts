import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import * as lz from 'lz-string';
import { PAYLOAD_VERSION, PayloadCodec, PayloadError, type TrackingPayload } from '../../src/tracking/payload';

const sample: TrackingPayload = {
  requestId: 'req-1', bidId: '6f1c2a4e-0000-4000-8000-000000000001', impId: '1', crid: 'cr-1', cid: 'c-1',
  price: 1.25, cur: 'USD', ts: 1_700_000_000_000, dealId: '', publisher: 'pub "quoted" & co', userId: 'u1',
};

function parts(q: string): { p: string; s: string } {
  const u = new URLSearchParams(q);
  return { p: u.get('p')!, s: u.get('s')! };
}

/** What versions before format 2 wrote: lz-string of a JSON array, signed the same way. */
function legacyQuery(p: TrackingPayload, codec: PayloadCodec): string {
  const packed = lz.compressToEncodedURIComponent(
    JSON.stringify([1, p.requestId, p.bidId, p.impId, p.crid, p.cid, p.price, p.cur, p.ts, p.dealId, p.publisher, p.userId]),
  );
  return `p=${packed}&s=${codec.sign(packed)}`;
}

describe('tracking payload codec', () => {
  const codec = new PayloadCodec('k1');
  it(`writes format ${PAYLOAD_VERSION} and round-trips it through a URL query`, () => {
    const { p, s } = parts(codec.encode(sample));
    assert.equal(p[0], 'A');
    assert.equal(Buffer.from(p, 'base64url')[0], PAYLOAD_VERSION);
    assert.deepEqual(codec.decode(p, s), sample);
  });
  it('round-trips unusual values: non-UUID bid id, Unicode, long strings (multi-byte lengths), odd prices', () => {
    const cases: TrackingPayload[] = [
      { ...sample, bidId: 'not-a-uuid' },
      { ...sample, bidId: '6F1C2A4E-0000-4000-8000-00000000000A' },
      { ...sample, publisher: 'Zeitung für Ölförderung ✓ 新聞', userId: '𝔘𝔰𝔢𝔯' },
      { ...sample, requestId: 'r'.repeat(127), userId: 'u'.repeat(128), dealId: 'd'.repeat(20_000) },
      { ...sample, price: 0.000_001, ts: 0 },
      { ...sample, price: 123_456.789, cur: 'JPY', dealId: 'deal-7' },
      { ...sample, requestId: '', impId: '', crid: '', cid: '', cur: '', publisher: '', userId: '' },
    ];
    for (const c of cases) {
      const { p, s } = parts(codec.encode(c));
      const back = codec.decode(p, s);
      // A UUID in upper case comes back in lower case: the bytes are what is kept.
      assert.deepEqual(back, c.bidId.startsWith('6F1C') ? { ...c, bidId: c.bidId.toLowerCase() } : c);
    }
  });
  it('is shorter than the lz-string format for a typical bid', () => {
    const typical: TrackingPayload = {
      ...sample, requestId: '80ce30c53c16e6ede735f123ef6e32361bfc7b22', crid: 'cmp-004-cr010', cid: 'cmp-004',
      publisher: 'News Example', userId: 'a4b5c6d7-1234-4bcd-9abc-0123456789ab',
    };
    assert.ok(parts(codec.encode(typical)).p.length < parts(legacyQuery(typical, codec)).p.length);
  });
  it('still reads format 1 (lz-string) payloads from URLs issued by earlier versions', () => {
    const { p, s } = parts(legacyQuery(sample, codec));
    assert.notEqual(p[0], 'A');
    assert.deepEqual(codec.decode(p, s), sample);
  });
  const rejects: Array<{ name: string; mutate: (x: { p: string; s: string }) => { p?: string; s?: string }; reason: string }> = [
    { name: 'missing signature', mutate: (x) => ({ p: x.p }), reason: 'missing' },
    { name: 'tampered payload', mutate: (x) => ({ p: x.p.slice(0, 10) + (x.p[10] === 'x' ? 'y' : 'x') + x.p.slice(11), s: x.s }), reason: 'bad_signature' },
    { name: 'forged signature', mutate: (x) => ({ p: x.p, s: 'AAAAAAAAAAAAAAAAAAAAAA' }), reason: 'bad_signature' },
    { name: 'signature of another secret', mutate: (x) => ({ p: x.p, s: new PayloadCodec('k2').sign(x.p) }), reason: 'bad_signature' },
    { name: 'signed garbage', mutate: () => ({ p: 'garbage', s: codec.sign('garbage') }), reason: 'undecodable' },
    { name: 'signed truncated format 2', mutate: (x) => ({ p: x.p.slice(0, 30), s: codec.sign(x.p.slice(0, 30)) }), reason: 'undecodable' },
    { name: 'signed format 2 with trailing bytes', mutate: (x) => ({ p: `${x.p}AAAA`, s: codec.sign(`${x.p}AAAA`) }), reason: 'undecodable' },
  ];
  for (const c of rejects) {
    it(`rejects ${c.name}`, () => {
      const m = c.mutate(parts(codec.encode(sample)));
      assert.throws(() => codec.decode(m.p, m.s), (e: unknown) => e instanceof PayloadError && e.reason === c.reason);
    });
  }
  it('rejects a signed payload of an unknown format version', () => {
    const buf = Buffer.from(parts(codec.encode(sample)).p, 'base64url');
    buf[0] = 3;
    const p = buf.toString('base64url');
    assert.throws(() => codec.decode(p, codec.sign(p)), (e: unknown) => e instanceof PayloadError && e.reason === 'bad_version');
  });
  it('signs with exactly HMAC-SHA256 (first 16 bytes, base64url), for any key and message length', () => {
    const secrets = ['k', 'dev-secret', 'x'.repeat(64), 'y'.repeat(65), 'z'.repeat(300), 'geheim-schlüssel-✓'];
    for (const secret of secrets) {
      const c = new PayloadCodec(secret);
      for (let i = 0; i < 50; i++) {
        const m = i === 0 ? '' : i === 1 ? 'ü✓新'.repeat(200) : randomBytes(i * 13).toString('base64url');
        const expected = createHmac('sha256', secret).update(m).digest().subarray(0, 16).toString('base64url');
        assert.equal(c.sign(m), expected, `secret of ${secret.length} chars, message of ${m.length}`);
      }
    }
  });
  it('contains no characters that break URLs or exchange macros', () => {
    const q = codec.encode(sample);
    assert.match(q, /^p=[A-Za-z0-9_-]+&s=[A-Za-z0-9_-]+$/);
    assert.ok(!q.includes('${'));
  });
});
