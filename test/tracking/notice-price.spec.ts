/**
 * Prices of bids and notices in a first-price market: every bid price has at most 4 decimals (the
 * shaded ones too); win and bill notices accept what exchanges send (their price rounded to the 4th
 * decimal, converted with their own rates) and refuse more, counted by reason; a loss notice's
 * `${AUCTION_PRICE}` (the winner's clearing price, above our bid) is accepted, logged, and taught to
 * shading as the price to beat. Real app, real Redis, real HTTP.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { ShadingService } from '../../src/delivery/shading.service';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm, sum } from '../support/prom';

let t: TestApp;
let dir: string;
let redis: Redis;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-notice-price-'));
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      campaigns: [
        {
          id: 'fp',
          adomain: ['fp.example'],
          cat: ['IAB3'],
          landingUrl: 'https://fp.example/',
          budget: { total: 1000, daily: 1000 },
          creatives: [{ id: 'fp-cr', type: 'banner', price: 2, banner: { w: 300, h: 250, imageUrl: 'https://cdn.fp.example/a.png' } }],
        },
      ],
    }),
  );
  t = await startTestApp({ CAMPAIGNS_FILE: file, LOG_LEVEL: 'warn', LOG_FLUSH_INTERVAL_MS: '50', LOG_REDIS_KEY: 'price-log' });
  redis = new Redis(t.redis.url);
});

after(async () => {
  redis?.disconnect();
  await t?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Bid { id: string; price: number; nurl: string; burl: string; lurl: string }
let seq = 0;
async function bid(at: number, floor: number, cur = 'USD'): Promise<Bid> {
  const body = { id: `np-${seq++}`, at, cur: [cur], imp: [{ id: '1', bidfloor: floor, bidfloorcur: cur, banner: { w: 300, h: 250 } }], site: { domain: 'x.example', publisher: { id: 'pub-np' } }, device: { devicetype: 2 } };
  let r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
  for (let retry = 0; retry < 5 && r.headers['x-bidder-shed'] === '1'; retry++) r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

async function fire(url: string, macros: Record<string, string>): Promise<{ status: number; body: string }> {
  let u = url;
  for (const [k, v] of Object.entries(macros)) u = u.split('${' + k + '}').join(encodeURIComponent(v));
  const parsed = new URL(u);
  const r = await request(`${t.url}${parsed.pathname}${parsed.search}`, { method: 'GET' });
  return { status: r.status, body: r.body.toString() };
}

async function metrics(): Promise<ReturnType<typeof parseProm>> {
  const r = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  return parseProm(r.body.toString());
}

const decimals = (p: number): number => (String(p).split('.')[1] ?? '').length;
const spend = async (): Promise<number> => Number((await redis.get(spendKeys.total('fp'))) ?? 0);

describe('bid prices have at most 4 decimals', () => {
  it('first price (shaded, between floor and value) and second price, in USD and EUR', async () => {
    for (const [at, floor, cur] of [[1, 0.5, 'USD'], [1, 0.123456, 'USD'], [1, 1.9999, 'USD'], [1, 0.5, 'EUR'], [2, 0.5, 'USD'], [2, 0.5, 'EUR']] as const) {
      for (let i = 0; i < 10; i++) {
        const b = await bid(at, floor, cur);
        assert.ok(decimals(b.price) <= 4, `at=${at} floor ${floor} ${cur}: price ${b.price}`);
        // Never below the floor (a floor with more decimals is met by the tick above it), never above the value.
        assert.ok(b.price >= floor && b.price <= (cur === 'USD' ? 2 : 2 * 0.97), `at=${at} floor ${floor} ${cur}: price ${b.price}`);
      }
    }
  });
});

describe('win and bill notices: what exchanges send is accepted, more is refused and counted', () => {
  it('a clearing price rounded up to the 4th decimal is accepted, and the bill counts it', async () => {
    const b = await bid(1, 0.5);
    const rounded = (Math.round(b.price * 10_000) + 1) / 10_000;
    const before = await spend();
    assert.equal((await fire(b.nurl, { AUCTION_PRICE: String(rounded), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '' })).status, 204);
    assert.equal((await fire(b.burl, { AUCTION_PRICE: String(rounded), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '' })).status, 204);
    assert.equal((await spend()) - before, Math.round((rounded / 1000) * 1e6));
  });

  it('a price the exchange converted to its own currency with rates 1.5 % apart is accepted', async () => {
    const b = await bid(2, 0.5);
    assert.equal(b.price, 2);
    // Our table: 0.97 EUR per USD; the exchange's: 0.97 × 1.015.
    const eur = (2 * 0.97 * 1.015).toFixed(4);
    assert.equal((await fire(b.burl, { AUCTION_PRICE: eur, AUCTION_CURRENCY: 'EUR', AUCTION_MIN_TO_WIN: '' })).status, 204);
  });

  it('a bill far above the bid is refused with 400, counted by reason; the alertable metric says so', async () => {
    const b = await bid(1, 0.5);
    const before = await spend();
    const r = await fire(b.burl, { AUCTION_PRICE: String(b.price * 1.5), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '' });
    assert.equal(r.status, 400);
    assert.match(r.body, /price above the bid/);
    assert.equal(await spend(), before);
    const bad = await fire(b.burl, { AUCTION_PRICE: 'n/a', AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '' });
    assert.equal(bad.status, 400);
    const m = await metrics();
    assert.equal(sum(m, 'bidder_notices_refused_total', { type: 'bill', reason: 'price_above_bid' }), 1);
    assert.equal(sum(m, 'bidder_notices_refused_total', { type: 'bill', reason: 'price_invalid' }), 1);
  });
});

describe('loss notices carry the clearing price', () => {
  it("a loss whose ${AUCTION_PRICE} is the winner's price, above our bid, is accepted, logged and learned as the price to beat", async () => {
    const shading = t.app.get(ShadingService);
    const seen: Array<{ event: string; minToWin: number | null }> = [];
    const learn = shading.learn.bind(shading);
    shading.learn = (event, p, bidUsd, minToWinUsd, deviceType, loss) => {
      seen.push({ event, minToWin: minToWinUsd });
      learn(event, p, bidUsd, minToWinUsd, deviceType, loss);
    };
    try {
      const b = await bid(1, 0.5);
      const clearing = Math.min(b.price + 0.37, 50);
      const r = await fire(b.lurl, { AUCTION_PRICE: String(clearing), AUCTION_CURRENCY: 'USD', AUCTION_LOSS: '102', AUCTION_MIN_TO_WIN: '${AUCTION_MIN_TO_WIN}' });
      assert.equal(r.status, 204, r.body);
      assert.deepEqual(seen, [{ event: 'loss', minToWin: clearing }]);
      await until('the loss record', async () => {
        const { records } = await readRedisLog(t.redis.url, 'price-log');
        return records.some((x) => x.type === 'loss' && x.bid === b.id && x.price === clearing && x.counted === true);
      });
      const m = await metrics();
      assert.equal(sum(m, 'bidder_notices_total', { type: 'loss', outcome: 'ok' }), 1);
      assert.equal(sum(m, 'bidder_notices_refused_total', { type: 'loss' }), 0);
    } finally {
      shading.learn = learn;
    }
  });
});
