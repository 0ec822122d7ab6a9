/**
 * Forged and replayed notices: the signature binds a payload to its audience (exchange server or
 * browser), notices have an age limit, an impression counts once per bid, billing survives a failed
 * write, and tracking keys rotate. Real app, real Redis, real HTTP.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { PayloadCodec, trackingKeys } from '../../src/tracking/payload';
import { capKeys, spendKeys } from '../../src/delivery/keys';
import { utcDay } from '../../src/delivery/utc-day';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';

const SECRET_A = 'secret-a-0123456789-0123456789-0123456789';
const SECRET_B = 'secret-b-0123456789-0123456789-0123456789';

let t: TestApp;
let redis: Redis;
before(async () => {
  t = await startTestApp({ TRACKING_SECRET: SECRET_A, LOG_FLUSH_INTERVAL_MS: '50', LOG_REDIS_KEY: 'sec-log', BILL_DEDUPE_TTL_S: '86400' });
  redis = new Redis(t.redis.url);
});
after(async () => {
  redis.disconnect();
  await t.close();
});

interface Bid {
  id: string;
  price: number;
  adm: string;
  cid: string;
  nurl: string;
  burl: string;
  lurl: string;
}

function local(base: string, url: string, macros: Record<string, string> = {}): string {
  const u = new URL(url);
  let s = `${base}${u.pathname}${u.search}`;
  for (const [k, v] of Object.entries(macros)) s = s.split(`\${${k}}`).join(encodeURIComponent(v));
  return s;
}

async function getBid(app: TestApp, id: string, user = 'user-sec'): Promise<Bid> {
  const body = { id, imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'news.example', publisher: { name: 'Sec' } }, user: { id: user } };
  let r = await request(`${app.url}/openrtb2/bid`, { body: JSON.stringify(body) });
  // On a loaded machine a request may wait past the shedding budget: sent again, as an exchange would.
  for (let retry = 0; retry < 5 && r.headers['x-bidder-shed'] === '1'; retry++) r = await request(`${app.url}/openrtb2/bid`, { body: JSON.stringify(body) });
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

function impUrl(bid: Bid): string {
  return /<img src='([^']+\/t\/imp\?[^']+)'/.exec(bid.adm)![1].replace(/&amp;/g, '&');
}

const get = (url: string) => request(url, { method: 'GET' });
const spend = async (cid: string) => Number((await redis.get(spendKeys.total(cid))) ?? 0);

describe('signatures are bound to the audience', () => {
  it('the impression URL an ad page sees cannot be turned into a bill, a win or a loss', async () => {
    const bid = await getBid(t, 'bind-1');
    const imp = new URL(impUrl(bid));
    const before = await spend(bid.cid);
    for (const ev of ['bill', 'win', 'loss']) {
      const forged = `${t.url}/t/${ev}?${imp.search.slice(1)}&price=1000000000`;
      assert.equal((await get(forged)).status, 403, ev);
    }
    assert.equal(await spend(bid.cid), before);
  });
  it('a server-to-server signature does not work on the browser routes', async () => {
    const bid = await getBid(t, 'bind-2');
    const win = new URL(bid.nurl);
    assert.equal((await get(`${t.url}/t/imp?${win.search.slice(1)}`)).status, 403);
    assert.equal((await get(`${t.url}/t/click?${win.search.slice(1)}`)).status, 403);
  });
  it('the genuine URLs work', async () => {
    const bid = await getBid(t, 'bind-3');
    assert.equal((await get(local(t.url, bid.nurl, { AUCTION_PRICE: '0.5', AUCTION_CURRENCY: 'USD' }))).status, 204);
    assert.equal((await get(local(t.url, impUrl(bid)))).status, 200);
  });
});

describe('age limit', () => {
  const codec = () => new PayloadCodec(trackingKeys(t.config));
  const payload = (ts: number) => ({
    requestId: 'old',
    bidId: '0b3f4c1e-8d2a-4e8b-9a6c-5d4e3f2a1b0c',
    impId: '1',
    crid: 'cmp-001-cr001',
    cid: 'cmp-001',
    price: 2,
    cur: 'USD',
    ts,
    dealId: '',
    publisher: 'p',
    userKey: '',
  });
  it('refuses a bill older than the dedupe marker lives (BILL_DEDUPE_TTL_S)', async () => {
    const q = codec().encode(payload(Date.now() - 2 * 86_400_000)).s2s;
    const before = await spend('cmp-001');
    const r = await get(`${t.url}/t/bill?${q}&price=1`);
    assert.equal(r.status, 410);
    assert.equal(await spend('cmp-001'), before);
  });
  it('refuses a notice from the future', async () => {
    const q = codec().encode(payload(Date.now() + 3_600_000)).s2s;
    assert.equal((await get(`${t.url}/t/win?${q}&price=1`)).status, 400);
  });
  it('counts a bill toward the daily spend of the day of its bid', async () => {
    const yesterday = Date.now() - 86_400_000 + 60_000;
    const q = codec().encode({ ...payload(yesterday), bidId: 'a1b2c3d4-0000-4000-8000-000000000001' }).s2s;
    assert.equal((await get(`${t.url}/t/bill?${q}&price=1`)).status, 204);
    assert.equal(Number(await redis.get(spendKeys.daily('cmp-001', utcDay(yesterday)))), 1000);
  });
});

describe('hostile notice inputs: a reason, never a 5xx, and spend only for what was paid', () => {
  const codec = () => new PayloadCodec(trackingKeys(t.config));
  let n = 0;
  // A fresh bid of 2 USD (made now) for each input, so that no marker of an earlier one interferes.
  const bidQuery = (price = 2, cur = 'USD') =>
    codec().encode({ requestId: 'h', bidId: `c0ffee00-0000-4000-8000-${String(++n).padStart(12, '0')}`, impId: '1', crid: 'cmp-001-cr001', cid: 'cmp-001', price, cur, ts: Date.now(), dealId: '', publisher: 'p', userKey: '' }).s2s;
  const cases: Array<{ name: string; event: string; extra: string; status: number; spent: number; reason?: RegExp }> = [
    { name: 'a bill at the bid, rounded up to the 4th decimal', event: 'bill', extra: '&price=2.0001', status: 204, spent: 2 },
    { name: 'a bill converted by the exchange to EUR at its own rate (1.5 % off ours)', event: 'bill', extra: `&price=${(2 * 0.97 * 1.015).toFixed(4)}&cur=EUR`, status: 204, spent: 2.03 },
    { name: 'a bill at twice the bid', event: 'bill', extra: '&price=4', status: 400, spent: 0, reason: /above the bid/ },
    { name: 'a bill at a price past any double (1e400)', event: 'bill', extra: '&price=1e400', status: 400, spent: 0, reason: /not a number/ },
    { name: 'a bill in hexadecimal above the bid (0x10)', event: 'bill', extra: '&price=0x10', status: 400, spent: 0, reason: /above the bid/ },
    { name: 'a bill whose price is only spaces (unknown: charged at our bid)', event: 'bill', extra: '&price=%20%20', status: 204, spent: 2 },
    { name: 'a bill in an unknown currency', event: 'bill', extra: '&price=1&cur=QQQ', status: 400, spent: 0, reason: /currency/ },
    { name: "a loss whose price is the winner's, five times our bid", event: 'loss', extra: '&price=10&loss=102', status: 204, spent: 0 },
    { name: 'a loss with a negative price', event: 'loss', extra: '&price=-1&loss=102', status: 400, spent: 0, reason: /negative/ },
    { name: 'a win at twice the bid', event: 'win', extra: '&price=4', status: 400, spent: 0, reason: /above the bid/ },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const before = await spend('cmp-001');
      const r = await get(`${t.url}/t/${c.event}?${bidQuery()}${c.extra}`);
      assert.equal(r.status, c.status, r.body.toString());
      if (c.reason !== undefined) assert.match(r.body.toString(), c.reason);
      assert.equal((await spend('cmp-001')) - before, Math.round((c.spent / 1000) * 1e6));
    });
  }
});

describe('impressions count once per bid toward frequency caps', () => {
  it('a replayed impression is logged as not counted and does not move the cap count', async () => {
    const bid = await getBid(t, 'imp-once', 'user-once');
    const url = local(t.url, impUrl(bid));
    const q = new URL(url).searchParams;
    const { userKey } = new PayloadCodec(trackingKeys(t.config)).decode(q.get('p')!, q.get('s')!, 'browser');
    assert.notEqual(userKey, '');
    const countKey = capKeys.counts(userKey, utcDay(Date.now()));
    for (let i = 0; i < 3; i++) assert.equal((await get(url)).status, 200);
    await until('impressions logged', async () => {
      const recs = (await readRedisLog(t.redis.url, 'sec-log')).records as Array<{ type: string; id: string }>;
      return recs.filter((r) => r.type === 'imp' && r.id === 'imp-once').length === 3;
    });
    const recs = (await readRedisLog(t.redis.url, 'sec-log')).records as Array<{ type: string; id: string; counted?: boolean }>;
    assert.deepEqual(
      recs.filter((r) => r.type === 'imp' && r.id === 'imp-once').map((r) => r.counted),
      [true, false, false],
    );
    assert.equal(await redis.hget(countKey, bid.cid), '1');
  });
});

describe('billing survives a failed write', () => {
  it('spend is added before the dedupe marker is set, so a retry after a failure counts', async () => {
    const bid = await getBid(t, 'bill-retry');
    const dailyKey = spendKeys.daily(bid.cid, utcDay(Date.now()));
    const saved = await redis.get(dailyKey);
    await redis.del(dailyKey);
    await redis.rpush(dailyKey, 'not a number');
    const url = local(t.url, bid.burl, { AUCTION_PRICE: '1', AUCTION_CURRENCY: 'USD' });
    assert.equal((await get(url)).status, 503);
    await redis.del(dailyKey);
    if (saved !== null) await redis.set(dailyKey, saved);
    const before = await spend(bid.cid);
    assert.equal((await get(url)).status, 204);
    assert.equal(await spend(bid.cid), before + 1000);
    assert.equal((await get(url)).status, 204);
    assert.equal(await spend(bid.cid), before + 1000, 'counted once');
  });
});

describe('key rotation', () => {
  it('URLs signed with a previous key keep working where it is listed, and fail where it is not', async () => {
    const bid = await getBid(t, 'rotate-1');
    const rotated = await startTestApp({ TRACKING_SECRET: SECRET_B, TRACKING_KEY_ID: '2', TRACKING_OLD_KEYS: `1:${SECRET_A}` });
    const fresh = await startTestApp({ TRACKING_SECRET: SECRET_B, TRACKING_KEY_ID: '2' });
    try {
      assert.equal((await get(local(rotated.url, bid.nurl, { AUCTION_PRICE: '0.5' }))).status, 204);
      assert.equal((await get(local(fresh.url, bid.nurl, { AUCTION_PRICE: '0.5' }))).status, 403);
      // New bids are signed with the new key, which both accept.
      const nb = await getBid(rotated, 'rotate-2');
      assert.equal((await get(local(fresh.url, nb.nurl, { AUCTION_PRICE: '0.5' }))).status, 204);
      assert.equal((await get(local(t.url, nb.nurl, { AUCTION_PRICE: '0.5' }))).status, 403);
    } finally {
      await rotated.close();
      await fresh.close();
    }
  });
  it('the key id rides in the payload', () => {
    const c = loadConfig({ TRACKING_SECRET: SECRET_B, TRACKING_KEY_ID: '7', TRACKING_OLD_KEYS: `3:${SECRET_A}` });
    const keys = trackingKeys(c);
    assert.equal(keys.current.id, 7);
    assert.deepEqual(
      keys.accepted.map((k) => k.id),
      [7, 3],
    );
  });
});
