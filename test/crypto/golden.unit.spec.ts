import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PiiHasher } from '../../src/privacy/pii-hasher';
import { PayloadCodec, type TrackingPayload } from '../../src/tracking/payload';

// Outputs written by the hand-written HMAC-SHA256 that src/crypto/hmac.ts held before it went
// through node:crypto (commit ecf842a): signatures and user keys already out in URLs, caps and logs
// must stay the same.
describe('HMAC outputs are unchanged since the hand-written SHA-256', () => {
  it('tracking payload: both signatures of one fixed payload', () => {
    const secret = 'golden-tracking-secret';
    const codec = new PayloadCodec({ current: { id: 7, secret }, accepted: [{ id: 7, secret }], legacy: false });
    const p: TrackingPayload = {
      requestId: 'req-golden', bidId: '6f1c2a4e-0000-4000-8000-000000000001', impId: '1', crid: 'cr-é', cid: 'c-1', price: 1.25, cur: 'USD',
      ts: 1_700_000_000_000, dealId: 'deal-9', publisher: 'Pub 漢字 🙂', userKey: 'hashed-user', test: true, source: 3,
    };
    const packed = 'Aw8HAYvP5WgAP_QAAAAAAABvHCpOAABAAIAAAAAAAAABCnJlcS1nb2xkZW4BMQVjci3DqQNjLTEDVVNEBmRlYWwtOQ9QdWIg5ryi5a2XIPCfmYILaGFzaGVkLXVzZXI';
    assert.deepEqual(codec.encode(p), { s2s: `p=${packed}&s=0DgsPXtF8tPCpzZtfgIM6Q`, browser: `p=${packed}&s=2i3YI0U9Gpp3e1cTTPuEGg` });
  });

  it('PII hash: fixed ids under one secret', () => {
    const h = new PiiHasher('golden-pii-secret-0123456789');
    assert.equal(h.hash('user-123'), 'lxfKaEsHai7M2zRB-5Y_TA');
    assert.equal(h.hash('6d92078a-8246-4ba4-ae5b-76104861e7dc'), 'Rdd6I7xA1-8ZPPFC0WgHHw');
    assert.equal(h.hash('é漢字🙂'), 'tGbTU7UiVAC6JsLdt9VA8Q');
    assert.equal(h.hash('x'.repeat(300)), 'yu6veNcEssDdG7V3POI0wA');
  });
});
