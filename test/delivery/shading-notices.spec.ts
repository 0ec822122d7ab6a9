/**
 * Bid shading over HTTP: first-price bids are shaded within [floor, value], second-price bids are
 * at the value; notice URLs carry the macros shading learns from; a few hundred notices of one
 * segment move its bids within a second; notices with an empty price or a price to win that is no
 * number are still answered (and a bill still counted).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { startTestApp, type TestApp } from '../support/app';
import { fire as fireAt, postBid } from '../support/bid';

let t: TestApp;
let dir: string;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-shade-'));
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      campaigns: [
        {
          id: 'shaded',
          adomain: ['shaded.example'],
          cat: ['IAB3'],
          landingUrl: 'https://shaded.example/',
          budget: { total: 1000, daily: 1000 },
          creatives: [{ id: 'shaded-cr', type: 'banner', price: 2, banner: { w: 300, h: 250, imageUrl: 'https://cdn.shaded.example/a.png' } }],
        },
      ],
    }),
  );
  t = await startTestApp({ CAMPAIGNS_FILE: file, SHADING_EXPLORE_PERCENT: '0', LOG_LEVEL: 'warn' });
});

after(async () => {
  await t?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Bid { price: number; nurl: string; burl: string; lurl: string }
let seq = 0;
async function bid(at: number | undefined, floor = 0.1): Promise<Bid> {
  const body = { id: `s-${seq++}`, at, imp: [{ id: '1', bidfloor: floor, banner: { w: 300, h: 250 } }], site: { domain: 'x.example', publisher: { id: 'pub-x' } }, device: { devicetype: 4 } };
  let r = await postBid<Bid>(t.url, body);
  // On a loaded machine a request may wait past the shedding budget: sent again, as an exchange would.
  for (let retry = 0; retry < 5 && r.shed; retry++) r = await postBid<Bid>(t.url, body);
  assert.equal(r.status, 200, r.text);
  return r.bids[0];
}

function fire(url: string, macros: Record<string, string>): Promise<number> {
  return fireAt(t.url, url, macros);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

describe('bid shading over HTTP', () => {
  it('second price (and no at) bids the value; first price a shaded price within [floor, value]', async () => {
    assert.equal((await bid(2)).price, 2);
    const plain = await bid(undefined);
    assert.equal(plain.price, 2);
    assert.ok(!plain.nurl.includes('sd='), 'a bid at value carries no segment parameter');
    const shaded = await bid(1, 0.5);
    assert.ok(shaded.price >= 0.5 && shaded.price < 2, `shaded ${shaded.price}`);
    assert.equal((await bid(1, 1.9)).price >= 1.9, true, 'never below the floor');
    assert.match(shaded.nurl, /&sd=\d+&price=\$\{AUCTION_PRICE\}&cur=\$\{AUCTION_CURRENCY\}&mtw=\$\{AUCTION_MIN_TO_WIN\}$/);
    assert.equal(Number(/&sd=(\d+)/.exec(shaded.nurl)?.[1]) % 16, 4, 'the segment parameter names the device type');
    assert.match(shaded.burl, /&mtw=\$\{AUCTION_MIN_TO_WIN\}$/);
    assert.match(shaded.lurl, /\/t\/loss\?.*&loss=\$\{AUCTION_LOSS\}&mtw=\$\{AUCTION_MIN_TO_WIN\}$/);
  });

  it('notices with an empty price or a price to win that is no number are answered; the bill counts', async () => {
    const a = await bid(1);
    assert.equal(await fire(a.lurl, { AUCTION_PRICE: '', AUCTION_CURRENCY: '', AUCTION_LOSS: '102', AUCTION_MIN_TO_WIN: '' }), 204);
    const b = await bid(1);
    assert.equal(await fire(b.burl, { AUCTION_PRICE: String(b.price), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: 'n/a' }), 204);
    const client = new Redis(t.redis.url);
    try {
      assert.equal(Number(await client.get(spendKeys.total('shaded'))), Math.round((b.price / 1000) * 1e6));
    } finally {
      client.disconnect();
    }
  });

  it('three hundred notices with prices to win move the segment\'s bids within a second', async () => {
    const prices = async (): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < 21; i++) out.push((await bid(1)).price);
      return out;
    };
    const before = median(await prices());
    // The market: 0.35 always wins (told on every win notice).
    for (let i = 0; i < 300; i++) {
      const b = await bid(1);
      assert.equal(await fire(b.nurl, { AUCTION_PRICE: String(b.price), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '0.35' }), 204);
    }
    await new Promise((r) => setTimeout(r, 300)); // the 100 ms learning tick
    const after = median(await prices());
    assert.ok(before > 0.6, `bid before learning ${before}`);
    assert.ok(after >= 0.35 && after < 0.45, `bid after learning ${after} (before ${before})`);
  });
});
