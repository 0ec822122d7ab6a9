import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PayloadCodec, PayloadError, type TrackingPayload } from '../../src/tracking/payload';

const sample: TrackingPayload = {
  requestId: 'req-1', bidId: '6f1c2a4e-0000-4000-8000-000000000001', impId: '1', crid: 'cr-1', cid: 'c-1',
  price: 1.25, cur: 'USD', ts: 1_700_000_000_000, dealId: '', publisher: 'pub "quoted" & co', userId: 'u1',
};

function parts(q: string): { p: string; s: string } {
  const u = new URLSearchParams(q);
  return { p: u.get('p')!, s: u.get('s')! };
}

describe('tracking payload codec', () => {
  const codec = new PayloadCodec('k1');
  it('round-trips through a URL query (lz-string output survives + → space)', () => {
    const { p, s } = parts(codec.encode(sample));
    assert.deepEqual(codec.decode(p, s), sample);
  });
  const rejects: Array<{ name: string; mutate: (x: { p: string; s: string }) => { p?: string; s?: string }; reason: string }> = [
    { name: 'missing signature', mutate: (x) => ({ p: x.p }), reason: 'missing' },
    { name: 'tampered payload', mutate: (x) => ({ p: `A${x.p.slice(1)}` === x.p ? `B${x.p.slice(1)}` : `A${x.p.slice(1)}`, s: x.s }), reason: 'bad_signature' },
    { name: 'forged signature', mutate: (x) => ({ p: x.p, s: 'AAAAAAAAAAAAAAAAAAAAAA' }), reason: 'bad_signature' },
    { name: 'signature of another secret', mutate: (x) => ({ p: x.p, s: new PayloadCodec('k2').sign(x.p) }), reason: 'bad_signature' },
    { name: 'signed garbage', mutate: () => ({ p: 'garbage', s: codec.sign('garbage') }), reason: 'undecodable' },
  ];
  for (const c of rejects) {
    it(`rejects ${c.name}`, () => {
      const m = c.mutate(parts(codec.encode(sample)));
      assert.throws(() => codec.decode(m.p, m.s), (e: unknown) => e instanceof PayloadError && e.reason === c.reason);
    });
  }
  it('contains no characters that break URLs or exchange macros', () => {
    const q = codec.encode(sample);
    assert.match(q, /^p=[A-Za-z0-9+\-$]+&s=[A-Za-z0-9_-]+$/);
    assert.ok(!q.includes('${'));
  });
});
