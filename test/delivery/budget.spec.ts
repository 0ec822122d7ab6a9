/**
 * Budgets, frequency caps and campaign reload across two workers (two app instances sharing one
 * real Redis, as two PM2 workers or two machines would).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp, listen } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { capKeys, spendKeys } from '../../src/delivery/keys';
import { utcDay } from '../../src/delivery/utc-day';
import { PayloadCodec, trackingKeys } from '../../src/tracking/payload';
import { fire as fireAt, firstBid } from '../support/bid';
import { startTestRedis, type TestRedis } from '../support/redis';
import { bannerCampaign } from '../support/campaigns';

const BUDGET = 0.01; // USD; each bid of 1.00 CPM may cost 0.001
const file = (campaigns: object[]) => JSON.stringify({ version: 1, currency: 'USD', campaigns });
const initial = [
  bannerCampaign('tiny', { w: 300, h: 250 }, { budget: { total: BUDGET, daily: BUDGET } }),
  bannerCampaign('capped', { w: 728, h: 90 }, { budget: { total: 1000, daily: 1000 }, frequencyCap: { perDay: 2 } }),
  bannerCampaign('ext', { w: 160, h: 600 }, { budget: { total: 1000, daily: 1000 } }),
];

let redis: TestRedis;
let client: Redis;
let dir: string;
let campaignsFile: string;
const apps: NestFastifyApplication[] = [];
const configs: Config[] = [];
const urls: string[] = [];

before(async () => {
  redis = await startTestRedis();
  client = new Redis(redis.url);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-budget-'));
  campaignsFile = path.join(dir, 'campaigns.json');
  fs.writeFileSync(campaignsFile, file(initial));
  for (const worker of ['1', '2']) {
    const config = loadConfig({
      PORT: '0', HOST: '127.0.0.1', ADMIN_PORT: '0', REDIS_URL: redis.url, WORKER_ID: worker, CAMPAIGNS_FILE: campaignsFile,
      LOG_SPILL_DIR: path.join(dir, `spill-${worker}`), TRACKING_SECRET: 's', BUDGET_REFRESH_MS: '100',
      CAMPAIGNS_WATCH_MS: '100',
    });
    configs.push(config);
    const app = await createApp(config);
    urls.push((await listen(app, config)).replace('[::1]', '127.0.0.1'));
    apps.push(app);
  }
  await new Promise((r) => setTimeout(r, 300)); // first budget refresh on both workers
});

after(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
  client?.disconnect();
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Bid { price: number; crid: string; cid: string; burl: string; adm: string }

let seq = 0;
async function bid(worker: number, imp: object, user = ''): Promise<Bid | null> {
  const body = { id: `b-${seq++}`, imp: [{ id: '1', ...imp }], site: { domain: 'x.example' }, user: user ? { id: user } : undefined };
  return firstBid<Bid>(urls[worker], body);
}

/** Fires a tracking URL of a bid at the given worker, with the clearing price substituted. */
function fire(worker: number, url: string, price: number): Promise<number> {
  return fireAt(urls[worker], url, { AUCTION_PRICE: String(price), AUCTION_CURRENCY: 'USD' });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('budgets across two workers', () => {
  it('a tiny budget stops bidding once billed, with overspend within the bound', async () => {
    let bids = 0;
    let billedUsd = 0;
    // Bid on both workers, bill every bid at its full price on the other worker, until both stop
    // (and still refuse after a few refreshes: the budget's tail goes to one of them at a refresh).
    let refused = 0;
    for (let round = 0; round < 200; round++) {
      const w = round % 2;
      const b = await bid(w, { banner: { w: 300, h: 250 } });
      if (b === null) {
        const other = await bid(1 - w, { banner: { w: 300, h: 250 } });
        if (other === null) {
          if (++refused === 4) break;
          await sleep(100);
          continue;
        }
        refused = 0;
        bids++;
        assert.equal(await fire(w, other.burl, other.price), 204);
        billedUsd += other.price / 1000;
        continue;
      }
      refused = 0;
      bids++;
      assert.equal(b.cid, 'tiny');
      assert.equal(await fire(1 - w, b.burl, b.price), 204);
      billedUsd += b.price / 1000;
    }
    const spent = Number(await client.get(spendKeys.total('tiny'))) / 1e6;
    assert.ok(Math.abs(spent - billedUsd) < 1e-9, `spend ${spent} = billed ${billedUsd}`);
    assert.ok(bids >= 5, `only ${bids} bids before stopping`);
    // Bound: leases are remaining/workers minus the worker's own unbilled bids, so billed bids never exceed the budget.
    assert.ok(spent <= BUDGET + 1e-9, `overspend: spent ${spent} of ${BUDGET}`);
    assert.ok(spent >= BUDGET - 1e-9, `the budget's tail was left: spent ${spent} of ${BUDGET}`);
    // And both workers keep refusing.
    await sleep(250);
    assert.equal(await bid(0, { banner: { w: 300, h: 250 } }), null);
    assert.equal(await bid(1, { banner: { w: 300, h: 250 } }), null);
  });

  it('spend recorded elsewhere stops every worker within a second', async () => {
    assert.ok((await bid(0, { banner: { w: 160, h: 600 } })) !== null);
    assert.ok((await bid(1, { banner: { w: 160, h: 600 } })) !== null);
    await client.set(spendKeys.total('ext'), String(1000 * 1e6)); // another machine spent it all
    const t0 = Date.now();
    let stopped = false;
    while (Date.now() - t0 < 1000) {
      const [a, b] = await Promise.all([bid(0, { banner: { w: 160, h: 600 } }), bid(1, { banner: { w: 160, h: 600 } })]);
      if (a === null && b === null) {
        stopped = true;
        break;
      }
      await sleep(20);
    }
    assert.ok(stopped, 'both workers still bid a second after the budget was spent');
  });
});

describe('frequency caps', () => {
  it('a user stops seeing the campaign after perDay impressions, on every worker', async () => {
    const user = 'cap-user-1';
    for (let i = 0; i < 2; i++) {
      const b = await bid(i % 2, { banner: { w: 728, h: 90 } }, user);
      assert.ok(b !== null, `bid ${i} for a user under the cap`);
      const impUrl = /<img src='([^']+\/t\/imp\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&');
      assert.equal(await fire(1 - (i % 2), impUrl, 0), 200);
    }
    // Impressions are counted in 50 ms batches, then the news of the capped pair reaches the other worker.
    const t0 = Date.now();
    while (Date.now() - t0 < 2_000 && ((await bid(0, { banner: { w: 728, h: 90 } }, user)) !== null || (await bid(1, { banner: { w: 728, h: 90 } }, user)) !== null)) {
      await sleep(20);
    }
    assert.equal(await bid(0, { banner: { w: 728, h: 90 } }, user), null);
    assert.equal(await bid(1, { banner: { w: 728, h: 90 } }, user), null);
    // Another user is not capped.
    assert.ok((await bid(0, { banner: { w: 728, h: 90 } }, 'cap-user-2')) !== null);
  });
});

describe('frequency caps: impressions arriving together', () => {
  it('are all counted (once per bid) and cap the user', async () => {
    const user = 'cap-user-burst';
    // Five bids before any impression: the user is not capped yet.
    const bids: Bid[] = [];
    for (let i = 0; i < 5; i++) {
      const b = await bid(i % 2, { banner: { w: 728, h: 90 } }, user);
      assert.ok(b !== null);
      bids.push(b);
    }
    const impUrls = bids.map((b) => /<img src='([^']+\/t\/imp\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&'));
    const q = new URL(impUrls[0]).searchParams;
    const { userKey } = new PayloadCodec(trackingKeys(configs[0])).decode(q.get('p')!, q.get('s')!, 'browser');
    // Each bid's impression twice (a replay among them), to both workers, at once.
    const answers = await Promise.all([...impUrls, ...impUrls].map((u, i) => fire(i % 2, u, 0)));
    assert.deepEqual(answers, Array(10).fill(200));
    const t0 = Date.now();
    let counts: Record<string, string> = {};
    while (Date.now() - t0 < 2_000) {
      counts = await client.hgetall(capKeys.counts(userKey, utcDay(Date.now())));
      if (Object.values(counts)[0] === '5') break;
      await sleep(20);
    }
    assert.deepEqual(Object.values(counts), ['5']);
    while (Date.now() - t0 < 2_000 && (await bid(1, { banner: { w: 728, h: 90 } }, user)) !== null) await sleep(20);
    assert.equal(await bid(0, { banner: { w: 728, h: 90 } }, user), null);
    assert.equal(await bid(1, { banner: { w: 728, h: 90 } }, user), null);
  });
});

describe('campaign reload', () => {
  it('a new file is picked up by every worker; a bad file keeps the old set', async () => {
    assert.equal(await bid(0, { banner: { w: 320, h: 50 } }), null);
    const next = [...initial, bannerCampaign('fresh', { w: 320, h: 50 }, { budget: { total: 1000, daily: 1000 } })];
    fs.writeFileSync(`${campaignsFile}.tmp`, file(next));
    fs.renameSync(`${campaignsFile}.tmp`, campaignsFile);
    const t0 = Date.now();
    let seen = [false, false];
    while (Date.now() - t0 < 5000 && !(seen[0] && seen[1])) {
      await sleep(100);
      seen = [(await bid(0, { banner: { w: 320, h: 50 } }))?.cid === 'fresh', (await bid(1, { banner: { w: 320, h: 50 } }))?.cid === 'fresh'];
    }
    assert.deepEqual(seen, [true, true], 'both workers bid with the new campaign');

    fs.writeFileSync(campaignsFile, '{"version": 1, "campaigns": [{"id": "broken"');
    await sleep(600);
    assert.equal((await bid(0, { banner: { w: 320, h: 50 } }))?.cid, 'fresh', 'worker 1 keeps the old set');
    assert.equal((await bid(1, { banner: { w: 320, h: 50 } }))?.cid, 'fresh', 'worker 2 keeps the old set');
  });
});
