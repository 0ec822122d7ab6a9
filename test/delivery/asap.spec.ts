/**
 * An asap campaign spends its whole budget as fast as traffic allows, without pauses, never more,
 * across workers and hosts: a billed bid counts once (in spend), not also in its bidder's window for
 * BUDGET_WINDOW_MS (which made a 10-bid budget take 10–20 s), and the tail of the budget (less than
 * one bid per worker) goes whole to one worker instead of being split into parts below one bid (the
 * 10th bid never came: 9 bids in 6 s, past the window, before the tail lease).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, listen } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { spendKeys } from '../../src/delivery/keys';
import { fire, firstBid } from '../support/bid';
import { startTestRedis, type TestRedis } from '../support/redis';

const BUDGET = 0.01; // USD: ten bids of 1.00 CPM
const WINDOW_MS = 5_000;
const campaigns = {
  version: 1,
  currency: 'USD',
  campaigns: [
    {
      id: 'fast',
      pacing: 'asap',
      adomain: ['fast.example'],
      cat: ['IAB3'],
      landingUrl: 'https://fast.example/landing',
      budget: { total: BUDGET, daily: BUDGET },
      creatives: [{ id: 'fast-cr', type: 'banner', price: 1, banner: { w: 300, h: 250, imageUrl: 'https://cdn.fast.example/a.png' } }],
    },
  ],
};

let redis: TestRedis;
let client: Redis;
let dir: string;

before(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-asap-'));
});

after(async () => {
  client?.disconnect();
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

let seq = 0;

/** Bidders (host id of each worker) on one campaign file; each layout has its own campaign id. */
async function start(id: string, hosts: string[]): Promise<{ apps: NestFastifyApplication[]; urls: string[] }> {
  const file = path.join(dir, `${id}.json`);
  fs.writeFileSync(file, JSON.stringify({ ...campaigns, campaigns: [{ ...campaigns.campaigns[0], id }] }));
  const apps: NestFastifyApplication[] = [];
  const urls: string[] = [];
  for (let w = 0; w < hosts.length; w++) {
    const config = loadConfig({
      PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', REDIS_URL: redis.url, HOST_ID: hosts[w], WORKER_ID: String(w + 1), CAMPAIGNS_FILE: file,
      LOG_SPILL_DIR: path.join(dir, `spill-${id}-${w}`), TRACKING_SECRET: 's', BUDGET_REFRESH_MS: '100', BUDGET_WINDOW_MS: String(WINDOW_MS), LOG_LEVEL: 'warn',
    });
    const app = await createApp(config);
    urls.push((await listen(app, config)).replace('[::1]', '127.0.0.1'));
    apps.push(app);
  }
  await new Promise((r) => setTimeout(r, 300));
  return { apps, urls };
}

async function bid(url: string): Promise<{ price: number; burl: string } | null> {
  const body = { id: `a-${seq++}`, imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'x.example' } };
  return firstBid<{ price: number; burl: string }>(url, body);
}

async function bill(url: string, burl: string, price: number): Promise<void> {
  assert.equal(await fire(url, burl, { AUCTION_PRICE: String(price), AUCTION_CURRENCY: 'USD', AUCTION_MIN_TO_WIN: '' }), 204);
}

const layouts = [
  { name: 'two workers of one host', hosts: ['h', 'h'] },
  { name: 'two hosts', hosts: ['host-a', 'host-b'] },
  { name: 'three workers on two hosts', hosts: ['host-a', 'host-a', 'host-b'] },
];

for (const [n, layout] of layouts.entries()) {
  describe(`asap delivery: ${layout.name}`, () => {
    const id = `fast-${n}`;
    let urls: string[] = [];
    let apps: NestFastifyApplication[] = [];
    before(async () => ({ apps, urls } = await start(id, layout.hosts)));
    after(async () => {
      for (const a of apps) await a.close().catch(() => undefined);
    });

    it('spends exactly a 10-bid budget without a pause, never more', { timeout: 20_000 }, async () => {
      const k = urls.length;
      const t0 = Date.now();
      let bids = 0;
      let last = t0;
      let longestGap = 0;
      // Bids go round the workers, each billed at once, at its full price, on the next one; a worker without lease is passed over.
      while (bids < 10 && Date.now() - t0 < WINDOW_MS + 1_000) {
        let b = null;
        let w = bids % k;
        for (let tries = 0; tries < k && b === null; tries++, w = (w + 1) % k) b = await bid(urls[w]);
        if (b === null) {
          await new Promise((r) => setTimeout(r, 20));
          continue;
        }
        w = (w - 1 + k) % k;
        bids++;
        longestGap = Math.max(longestGap, Date.now() - last);
        last = Date.now();
        await bill(urls[(w + 1) % k], b.burl, b.price);
      }
      const took = Date.now() - t0;
      assert.equal(bids, 10, `${bids} bids in ${took} ms`);
      assert.ok(longestGap < 1_000, `a pause of ${longestGap} ms between two bids (BUDGET_WINDOW_MS ${WINDOW_MS})`);
      assert.ok(took < 3_000, `10 bids took ${took} ms`);
      // Spent, and nothing more on any worker: not now, not after the leases are renewed.
      assert.equal(Number(await client.get(spendKeys.total(id))), BUDGET * 1e6);
      for (let i = 0; i < 3; i++) {
        await new Promise((r) => setTimeout(r, 150));
        for (const u of urls) assert.equal(await bid(u), null);
      }
      assert.equal(Number(await client.get(spendKeys.total(id))), BUDGET * 1e6);
    });
  });
}
