/**
 * Two bidder hosts on one Redis Cluster: two `node dist/main.js` processes with different HOST_IDs
 * (and the same WORKER_ID, as two machines' first PM2 workers have), REDIS_MODE=cluster, sharing
 * a small budget, a frequency cap and the bid log; a manual master failover during their traffic;
 * then the log read back from every list by the reader, and shipped to Parquet from every list by
 * the shipper.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { stopSlotsRefresh } from '../../src/redis/redis.options';
import { procKey } from '../../src/bidlog/keys';
import { postBid, sleep, spawnBidder, until, type Bidder } from '../log/support';
import { assertShippedOnce, readShipped, spawnShipper } from '../shipper/support';
import { request } from '../support/app';
import { freePort } from '../support/redis';
import { startTestRedisCluster, type TestRedisCluster } from '../support/redis-cluster';
import { adminClient, clusterEnv, clusterLogKeys, masterPortOf, readClusterLog, runCliOnCluster } from './support';
import { bannerCampaign } from '../support/campaigns';

const BUDGET = 0.01; // USD; a bid of 1.00 CPM may cost 0.001
const BID_COST = 0.001;
const KEY = 'hosts';

let cluster: TestRedisCluster;
let admin: Cluster;
let dir: string;
let campaignsFile: string;
const hosts: Bidder[] = [];
const adminUrls: string[] = [];
/** Every bid request id sent, and the host it went to. */
const sent = new Map<string, string>();

before(async () => {
  cluster = await startTestRedisCluster({ nodeTimeoutMs: 1_000 });
  admin = await adminClient(cluster);
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-hosts-'));
  campaignsFile = path.join(dir, 'campaigns.json');
  fs.writeFileSync(
    campaignsFile,
    JSON.stringify({
      version: 1,
      currency: 'USD',
      campaigns: [
        bannerCampaign('tiny', { w: 300, h: 250 }, { budget: { total: BUDGET, daily: BUDGET } }),
        bannerCampaign('capped', { w: 728, h: 90 }, { budget: { total: 1000, daily: 1000 }, frequencyCap: { perDay: 1 } }),
      ],
    }),
  );
  for (const host of ['host-a', 'host-b']) {
    const bidder = await spawnBidder(
      clusterEnv(cluster, {
        HOST_ID: host,
        WORKER_ID: '0',
        CAMPAIGNS_FILE: campaignsFile,
        LOG_REDIS_KEY: KEY,
        LOG_FLUSH_INTERVAL_MS: '20',
        LOG_SPILL_DIR: path.join(dir, `spill-${host}`),
        TRACKING_SECRET: 'hosts-secret',
        TRACKING_BASE_URL: 'http://127.0.0.1:9',
        BUDGET_REFRESH_MS: '100',
        LOG_LEVEL: 'info',
      }),
      await freePort(),
    );
    hosts.push(bidder);
    const m = /"admin":"(http:\/\/[^"]+)"/.exec(bidder.output());
    assert.ok(m, `the admin URL in ${bidder.output()}`);
    adminUrls.push(m[1]);
  }
});

after(async () => {
  for (const h of hosts) await h.stop('SIGKILL').catch(() => undefined);
  admin?.disconnect();
  if (admin) stopSlotsRefresh(admin);
  await cluster?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Bid {
  price: number;
  cid: string;
  burl: string;
  adm: string;
}

let seq = 0;
async function bid(host: number, imp: object, user = ''): Promise<Bid | null> {
  const id = `hosts-${seq++}`;
  sent.set(id, `host-${'ab'[host]}`);
  const body = { id, imp: [{ id: '1', ...imp }], site: { domain: 'x.example', publisher: { id: 'p1', name: 'x.example' } }, user: user ? { id: user } : undefined };
  const r = await request(`${hosts[host].url}/openrtb2/bid`, { body: JSON.stringify(body) });
  if (r.status === 204) return null;
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

/** Calls a tracking URL of a bid on a host, the price macro substituted. */
async function fire(host: number, url: string, price: number): Promise<number> {
  const u = new URL(url.replace('${AUCTION_PRICE}', String(price)).replace('${AUCTION_CURRENCY}', 'USD'));
  return (await request(`${hosts[host].url}${u.pathname}${u.search}`, { method: 'GET' })).status;
}

/** Bid requests to `url`, 4 at a time, each sender pausing 5 ms between requests, for `ms`; every one answered 200 or 204. Returns the ids. */
async function steadyBids(url: string, prefix: string, ms: number): Promise<string[]> {
  const ids: string[] = [];
  const end = Date.now() + ms;
  let n = 0;
  await Promise.all(
    [0, 1, 2, 3].map(async () => {
      while (Date.now() < end) {
        const id = `${prefix}-${n++}`;
        ids.push(id);
        const a = await postBid(url, id);
        assert.ok(a.status === 200 || a.status === 204, `${id}: ${a.status}`);
        await sleep(5);
      }
    }),
  );
  return ids;
}

async function metric(host: number, name: string): Promise<number> {
  const text = (await request(`${adminUrls[host]}/metrics`, { method: 'GET' })).body.toString();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? NaN : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('two bidder hosts on a Redis Cluster', () => {
  it('count each other\'s workers (same WORKER_ID, different HOST_ID)', async () => {
    await until('both hosts to count 2 live workers', async () => (await metric(0, 'bidder_live_workers')) === 2 && (await metric(1, 'bidder_live_workers')) === 2, 5_000);
  });

  it('share a small budget: total spend never exceeds it by more than one bid', async (t) => {
    let bids = 0;
    let billed = 0;
    // Bid on both hosts in turn, each bid billed at its full price on the other host, until both stop
    // and stay stopped for 1.5 s: bills release their bids' reservations, and the last bid of the
    // budget comes as the tail lease (docs/bidding.md, "The tail"), given to one host only after
    // both have published their windows, a few refreshes later. A pause of both hosts shorter than
    // that is not the end of the budget.
    for (let round = 0; round < 200; round++) {
      const h = round % 2;
      let b = await bid(h, { banner: { w: 300, h: 250 } });
      let on = h;
      if (b === null) {
        b = await bid(1 - h, { banner: { w: 300, h: 250 } });
        on = 1 - h;
      }
      for (let wait = 0; b === null && wait < 6; wait++) {
        await sleep(250);
        on = wait % 2 === 0 ? h : 1 - h;
        b = await bid(on, { banner: { w: 300, h: 250 } });
      }
      if (b === null) break;
      assert.equal(b.cid, 'tiny');
      bids++;
      assert.equal(await fire(1 - on, b.burl, b.price), 204);
      billed += b.price / 1000;
    }
    const spent = Number(await admin.get(spendKeys.total('tiny'))) / 1e6;
    assert.ok(Math.abs(spent - billed) < 1e-9, `spend ${spent} = billed ${billed}`);
    assert.ok(bids >= 5, `only ${bids} bids before stopping`);
    assert.ok(spent <= BUDGET + BID_COST + 1e-9, `spent ${spent} of a budget of ${BUDGET}`);
    // Each of the two hosts may commit half of what is left: they stop once less than two bids remain.
    assert.ok(spent >= BUDGET - 2 * BID_COST - 1e-9, `spent only ${spent} of a budget of ${BUDGET}`);
    t.diagnostic(`${bids} bids, spent ${spent} USD of a budget of ${BUDGET} USD`);
    // Stopped for good: a tail lease later than the pause above may still buy the one bid left
    // within the budget, never one past it.
    await sleep(250);
    let total = spent;
    for (const h of [0, 1, 0, 1]) {
      const late = await bid(h, { banner: { w: 300, h: 250 } });
      if (late === null) continue;
      assert.equal(await fire(1 - h, late.burl, late.price), 204);
      total += late.price / 1000;
      assert.ok(total <= BUDGET + 1e-9, `a bid past the budget: ${total} of ${BUDGET}`);
    }
    assert.equal(await bid(0, { banner: { w: 300, h: 250 } }), null);
    assert.equal(await bid(1, { banner: { w: 300, h: 250 } }), null);
  });

  it('a frequency cap of 1 reached on one host blocks the user on the other within a second', async (t) => {
    const user = 'hosts-cap-user';
    const b = await bid(0, { banner: { w: 728, h: 90 } }, user);
    assert.ok(b !== null, 'a bid for a user under the cap');
    assert.equal(b.cid, 'capped');
    const impUrl = /<img src='([^']+\/t\/imp\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&');
    assert.equal(await fire(0, impUrl, 0), 200);
    const t0 = Date.now();
    while (Date.now() - t0 < 1_000 && (await bid(1, { banner: { w: 728, h: 90 } }, user)) !== null) await sleep(10);
    const ms = Date.now() - t0;
    assert.equal(await bid(1, { banner: { w: 728, h: 90 } }, user), null, `host-b still bids for the capped user ${ms} ms after the impression`);
    assert.ok(ms < 1_000, `blocked on host-b after ${ms} ms`);
    t.diagnostic(`blocked on host-b ${ms} ms after the impression on host-a was answered`);
    assert.equal(await bid(0, { banner: { w: 728, h: 90 } }, user), null);
    assert.ok((await bid(1, { banner: { w: 728, h: 90 } }, 'hosts-other-user')) !== null, 'another user is not capped');
  });

  it('a host that dies (SIGKILL) stops counting within the heartbeat window (1 s) plus a refresh', async (t) => {
    const dead = await spawnBidder(
      clusterEnv(cluster, { HOST_ID: 'host-c', WORKER_ID: '0', CAMPAIGNS_FILE: campaignsFile, LOG_REDIS_KEY: KEY, LOG_SPILL_DIR: path.join(dir, 'spill-host-c'), BUDGET_REFRESH_MS: '100', LOG_LEVEL: 'info' }),
      await freePort(),
    );
    await until('host-a to count 3 live workers', async () => (await metric(0, 'bidder_live_workers')) === 3, 5_000);
    await dead.stop('SIGKILL');
    const t0 = Date.now();
    await until('host-a to count 2 live workers again', async () => (await metric(0, 'bidder_live_workers')) === 2, 5_000);
    const ms = Date.now() - t0;
    assert.ok(ms < 1_000 + 100 + 500, `${ms} ms`);
    t.diagnostic(`host-c no longer counted ${ms} ms after SIGKILL`);
  });

  it('log every request and response once, from both hosts, across a manual master failover', async (t) => {
    // A steady stream to both hosts for 3 s, the failover of the first list's master 1 s in.
    const traffic = Promise.all(hosts.map((h, i) => steadyBids(h.url, `fo${'ab'[i]}`, 3_000)));
    await sleep(1_000);
    await cluster.failover(await masterPortOf(admin, `${KEY}:{0}`));
    const results = await traffic;
    results.forEach((ids, i) => ids.forEach((id) => sent.set(id, `host-${'ab'[i]}`)));
    // Leases went on being renewed: both hosts' view of the spend is fresh.
    for (const h of [0, 1]) {
      const age = await metric(h, 'bidder_budget_view_age_seconds');
      assert.ok(age >= 0 && age < 1, `host ${h}: budget view ${age} s old after the failover`);
    }
    // Bids were answered all along (sendBids checks 200/204); now a graceful stop flushes both logs.
    for (const h of hosts) assert.equal(await h.stop('SIGTERM'), 0, h.output().slice(-2_000));

    const env = clusterEnv(cluster, { LOG_REDIS_KEY: KEY, LOG_SPILL_DIR: path.join(dir, 'no-spill') });
    const check = await runCliOnCluster(['check', '--source', 'redis'], env);
    assert.equal(check.code, 0, check.stdout + check.stderr);
    const summary = JSON.parse(check.stdout) as { ok: boolean; requestIds: number; responseIds: number };
    assert.equal(summary.requestIds, sent.size);
    assert.equal(summary.responseIds, sent.size);

    const { perList, records } = await readClusterLog(admin, clusterLogKeys(KEY));
    assert.ok(perList.filter((n) => n > 0).length >= 12, `frames in most of the 16 lists: ${perList.join(' ')}`);
    const problems: string[] = [];
    const count = new Map<string, number>();
    for (const r of records) {
      if (r.type !== 'request' && r.type !== 'response') continue;
      const k = `${r.type}:${r.id}`;
      count.set(k, (count.get(k) ?? 0) + 1);
      if (r.host !== sent.get(r.id)) problems.push(`${k} from ${String(r.host)}, sent to ${sent.get(r.id)}`);
    }
    for (const id of sent.keys()) for (const t of ['request', 'response']) if (count.get(`${t}:${id}`) !== 1) problems.push(`${t} ${id}: ${count.get(`${t}:${id}`) ?? 0}`);
    assert.deepEqual(problems.slice(0, 10), [], `${problems.length} problems`);
    assert.equal(count.size, 2 * sent.size, 'no other request or response records');
    t.diagnostic(`${sent.size} bid requests, ${records.length} records in ${perList.reduce((a, b) => a + b, 0)} frames over the 16 lists`);
  });

  it('the shipper claims from every list, and stores every record once', async () => {
    const keys = clusterLogKeys(KEY);
    const waiting = (await Promise.all(keys.map((k) => admin.llen(k)))).filter((n) => n > 0).length;
    assert.ok(waiting >= 12, `${waiting} lists hold frames`);
    const shipDir = path.join(dir, 'parquet');
    const shipper = spawnShipper(clusterEnv(cluster, { LOG_REDIS_KEY: KEY, SHIP_DIR: shipDir, SHIP_ID: 'hosts-shipper', LOG_LEVEL: 'warn' }));
    try {
      await until(
        'every list and processing list to be empty',
        async () => (await Promise.all(keys.flatMap((k) => [admin.llen(k), admin.exists(procKey(k, 'hosts-shipper'))]))).every((n) => n === 0),
        60_000,
      );
    } finally {
      const exit = await shipper.stop();
      assert.equal(exit.code, 0, shipper.output().slice(-2_000));
    }
    await assertShippedOnce(shipDir, [...sent.keys()]);
    // The Parquet `host` column holds each record's host.
    const rows = (await readShipped(shipDir, 'host, id, type')) as Array<{ host: string; id: string; type: string }>;
    const wrong = rows.filter((r) => (r.type === 'request' || r.type === 'response') && r.host !== sent.get(r.id));
    assert.deepEqual(wrong.slice(0, 5), []);
    assert.deepEqual([...new Set(rows.map((r) => r.host))].sort(), ['host-a', 'host-b']);
  });
});
