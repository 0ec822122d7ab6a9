import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NoticeError, readNotice } from '../../src/tracking/notice';
import { STATIC_RATES } from '../../src/currency/rates';
import { PayloadCodec, type TrackingPayload } from '../../src/tracking/payload';

const secret = { id: 1, secret: 'notice-secret' };
const codec = new PayloadCodec({ current: secret, accepted: [secret], legacy: false });
const NOW = 1_700_000_000_000;
const DAY = 86_400_000;
const payload: TrackingPayload = {
  requestId: 'r1', bidId: 'b1', impId: '1', crid: 'cr', cid: 'c', price: 2, cur: 'USD', ts: NOW - 1000, dealId: '', publisher: 'p', userKey: 'u', test: false, source: 0,
};

function query(extra: Record<string, string>, p: TrackingPayload = payload): Record<string, string> {
  const q = new URLSearchParams(codec.encode(p).s2s);
  return { p: q.get('p')!, s: q.get('s')!, ...extra };
}

describe('readNotice: macros', () => {
  const ok: Array<{ name: string; q: Record<string, string>; price: number | null; loss?: number | null }> = [
    { name: 'substituted price', q: { price: '1.5' }, price: 1.5 },
    { name: 'price equal to the bid', q: { price: '2' }, price: 2 },
    { name: 'unsubstituted price macro', q: { price: '${AUCTION_PRICE}' }, price: null },
    { name: 'empty price', q: { price: '' }, price: null },
    { name: 'no price at all', q: {}, price: null },
    { name: 'price in another currency, converted', q: { price: '1.0', cur: 'EUR' }, price: 1 / 0.97 },
    { name: 'unsubstituted currency macro', q: { price: '1', cur: '${AUCTION_CURRENCY}' }, price: 1 },
    { name: 'loss code', q: { price: '${AUCTION_PRICE}', loss: '102' }, price: null, loss: 102 },
    { name: 'price one tick (0.0001) above the bid: the exchange rounded up to the 4th decimal', q: { price: '2.0001' }, price: 2.0001 },
    { name: 'price converted by the exchange at rates 1.5 % apart from ours', q: { price: String(2 * 0.97 * 1.015), cur: 'EUR' }, price: 2 * 1.015 },
    { name: 'unsubstituted loss code', q: { loss: '${AUCTION_LOSS}' }, price: null, loss: null },
  ];
  for (const c of ok) {
    it(c.name, () => {
      const n = readNotice('win', query(c.q), codec, DAY, STATIC_RATES, NOW);
      if (c.price === null) assert.equal(n.price, null);
      else assert.ok(Math.abs(n.price! - c.price) < 1e-9, `price ${n.price}`);
      if (c.loss !== undefined) assert.equal(n.loss, c.loss);
      assert.deepEqual(n.payload, payload);
    });
  }
  const bad: Array<{ name: string; q: Record<string, string>; status: number; reason: RegExp }> = [
    { name: 'negative price', q: { price: '-1' }, status: 400, reason: /negative/ },
    { name: 'price above our bid', q: { price: '2.5' }, status: 400, reason: /above the bid/ },
    { name: 'price two ticks above our bid, same currency', q: { price: '2.0002' }, status: 400, reason: /above the bid/ },
    { name: 'price converted at rates 3 % apart from ours', q: { price: String(2 * 0.97 * 1.03), cur: 'EUR' }, status: 400, reason: /above the bid/ },
    { name: 'price not a number', q: { price: 'abc' }, status: 400, reason: /not a number/ },
    { name: 'unknown price currency', q: { price: '1', cur: 'XQZ' }, status: 400, reason: /currency/ },
    { name: 'tampered signature', q: { s: 'AAAAAAAAAAAAAAAAAAAAAA' }, status: 403, reason: /bad_signature/ },
    { name: 'missing payload', q: { p: '' }, status: 400, reason: /missing/ },
  ];
  for (const c of bad) {
    it(`rejects ${c.name}`, () => {
      assert.throws(() => readNotice('win', query(c.q), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === c.status && c.reason.test(e.reason));
      assert.throws(() => readNotice('bill', query(c.q), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === c.status && c.reason.test(e.reason));
    });
  }
  it('refusals carry a reason code for the metrics', () => {
    const code = (q: Record<string, string>): string | null => {
      try {
        readNotice('bill', query(q), codec, DAY, STATIC_RATES, NOW);
        return null;
      } catch (e) {
        return (e as NoticeError).code;
      }
    };
    assert.equal(code({ price: '2.5' }), 'price_above_bid');
    assert.equal(code({ price: 'abc' }), 'price_invalid');
    assert.equal(code({ price: '-1' }), 'price_invalid');
    assert.equal(code({ price: '1', cur: 'XQZ' }), 'price_currency');
    assert.equal(code({ s: 'AAAAAAAAAAAAAAAAAAAAAA' }), 'payload_bad_signature');
    assert.equal(code({ p: '' }), 'payload_missing');
  });
});

describe('readNotice: a loss carries the clearing price, above our bid', () => {
  it("a loss's ${AUCTION_PRICE} is the winner's price: above our bid is accepted and read", () => {
    const n = readNotice('loss', query({ price: '5', loss: '102' }), codec, DAY, STATIC_RATES, NOW);
    assert.equal(n.price, 5);
    assert.equal(n.loss, 102);
  });
  it('a loss price that is no price is still refused', () => {
    assert.throws(() => readNotice('loss', query({ price: 'abc' }), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === 400);
  });
});

describe('readNotice: audience and age', () => {
  it('a browser event does not accept the server-to-server signature', () => {
    assert.throws(() => readNotice('imp', query({}), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === 403);
  });
  it('refuses a notice about a bid older than the age limit (410) and one from the future (400)', () => {
    assert.throws(() => readNotice('bill', query({}, { ...payload, ts: NOW - DAY - 1 }), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === 410);
    assert.throws(() => readNotice('bill', query({}, { ...payload, ts: NOW + 3_600_000 }), codec, DAY, STATIC_RATES, NOW), (e: unknown) => e instanceof NoticeError && e.status === 400);
    assert.equal(readNotice('bill', query({}, { ...payload, ts: NOW - DAY + 1000 }), codec, DAY, STATIC_RATES, NOW).payload.ts, NOW - DAY + 1000);
  });
});
