/**
 * Notices and trackers end to end: a real bid response's URLs, macros substituted as an exchange
 * would, called over HTTP against the real app and Redis; records checked in the bid log.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { request, startTestApp, type TestApp } from '../support/app';
import { readRedisLog } from '../log/support';
import { spendKeys } from '../../src/delivery/keys';

let t: TestApp;
let redis: Redis;
before(async () => {
  t = await startTestApp({ TRACKING_BASE_URL: 'http://127.0.0.1:1' });
  redis = new Redis(t.redis.url);
});
after(async () => {
  redis.disconnect();
  if (t) await t.close();
});

interface Bid {
  id: string;
  impid: string;
  price: number;
  adm: string;
  crid: string;
  cid: string;
  nurl: string;
  burl: string;
  lurl: string;
}

/** Points a tracking URL of the response at the test app and substitutes the macros. */
function local(url: string, macros: Record<string, string>): string {
  const u = new URL(url);
  let s = `${t.url}${u.pathname}${u.search}`;
  for (const [k, v] of Object.entries(macros)) s = s.split(`\${${k}}`).join(encodeURIComponent(v));
  return s;
}

async function getBid(id: string, imp: object): Promise<Bid> {
  const body = { id, imp: [imp], site: { domain: 'news.example', publisher: { name: 'RT Pub' } }, user: { id: 'user-rt' } };
  const r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

const get = (url: string) => request(url, { method: 'GET' });

describe('notice round trips', () => {
  it('win, bill twice (counted once), loss, impression and click', async () => {
    const bid = await getBid('rt-1', { id: '1', banner: { w: 300, h: 250 } });
    const clearing = (bid.price * 0.8).toFixed(4);
    const win = await get(local(bid.nurl, { AUCTION_PRICE: clearing, AUCTION_CURRENCY: 'USD' }));
    assert.equal(win.status, 204);

    const billUrl = local(bid.burl, { AUCTION_PRICE: clearing, AUCTION_CURRENCY: 'USD' });
    assert.equal((await get(billUrl)).status, 204);
    assert.equal((await get(billUrl)).status, 204);
    const micros = Number(await redis.get(spendKeys.total(bid.cid)));
    assert.equal(micros, Math.round((Number(clearing) / 1000) * 1e6), 'spend counted exactly once');

    const loss = await get(local(bid.lurl, { AUCTION_PRICE: clearing, AUCTION_LOSS: '102' }));
    assert.equal(loss.status, 204);

    const impUrl = /<img src='([^']+\/t\/imp\?[^']+)'/.exec(bid.adm)![1].replace(/&amp;/g, '&');
    const imp = await get(local(impUrl, {}));
    assert.equal(imp.status, 200);
    assert.equal(imp.headers['content-type'], 'image/gif');
    assert.equal(imp.body.subarray(0, 3).toString(), 'GIF');

    const clickUrl = /<a href='([^']+\/t\/click\?[^']+)'/.exec(bid.adm)![1].replace(/&amp;/g, '&');
    const click = await get(local(clickUrl, {}));
    assert.equal(click.status, 302);
    assert.match(String(click.headers.location), /^https:\/\//);
    assert.ok(!String(click.headers.location).includes('127.0.0.1'), 'redirects to the creative landing page');
  });

  it('a notice with its macros left unsubstituted is accepted', async () => {
    const bid = await getBid('rt-2', { id: '1', banner: { w: 300, h: 250 } });
    assert.equal((await get(local(bid.nurl, {}))).status, 204);
  });

  it('rejects forged and tampered payloads and a price above the bid', async () => {
    const bid = await getBid('rt-3', { id: '1', banner: { w: 300, h: 250 } });
    const u = new URL(local(bid.burl, { AUCTION_PRICE: '0.1' }));
    const p = u.searchParams.get('p')!;
    const tampered = new URL(u);
    tampered.searchParams.set('p', p.slice(0, -2) + (p.endsWith('AA') ? 'BB' : 'AA'));
    assert.equal((await get(tampered.toString())).status, 403);
    const forged = new URL(u);
    forged.searchParams.set('s', 'AAAAAAAAAAAAAAAAAAAAAA');
    assert.equal((await get(forged.toString())).status, 403);
    const noSig = new URL(u);
    noSig.searchParams.delete('s');
    assert.equal((await get(noSig.toString())).status, 400);
    const tooHigh = local(bid.burl, { AUCTION_PRICE: String(bid.price * 2) });
    assert.equal((await get(tooHigh)).status, 400);
    assert.equal(await redis.get(spendKeys.total(bid.cid)) !== null, true);
    const unknownEvent = new URL(u);
    unknownEvent.pathname = '/t/steal';
    assert.equal((await get(unknownEvent.toString())).status, 404);
  });

  it('routes /t/<event> exactly: repeated keys count by their first value, other paths are 404', async () => {
    const bid = await getBid('rt-front', { id: '1', banner: { w: 300, h: 250 } });
    const win = new URL(local(bid.nurl, { AUCTION_PRICE: '0.5', AUCTION_CURRENCY: 'USD' }));
    const target = `${win.pathname}${win.search}`;
    const badSig = await get(`${t.url}${target.replace(/&s=[^&]+/, '&s=AAAAAAAAAAAAAAAAAAAAAA')}`);
    assert.deepEqual([badSig.status, JSON.parse(badSig.body.toString())], [403, { error: 'payload bad_signature' }]);
    assert.match(String(badSig.headers['content-type']), /application\/json/);
    assert.equal((await get(`${t.url}${target.replace('&s=', '&s=AAAA&s=')}`)).status, 403);
    assert.equal((await get(`${t.url}${target}&p=second`)).status, 204);
    assert.equal((await get(`${t.url}${target.replace('/t/win', '/t/w%69n')}`)).status, 404);
    assert.equal((await get(`${t.url}/t/`)).status, 404);
    assert.equal((await get(`${t.url}/t/win/more${win.search}`)).status, 404);
    assert.equal((await request(`${t.url}${target}`, { method: 'HEAD' })).status, 204);
  });

  it('counts notices by type and outcome in /metrics', async () => {
    let text = '';
    const value = (labels: string) => {
      const m = new RegExp(`^bidder_notices_total\\{[^}]*${labels}[^}]*\\} (\\d+)`, 'm').exec(text);
      return m ? Number(m[1]) : 0;
    };
    // A click is counted once Redis has said it is the bid's first: its marker goes with the next
    // batch of commands (src/redis/batch.ts), up to REDIS_BATCH_MS after the answer.
    for (const end = Date.now() + 2_000; ; ) {
      text = (await get(`${t.adminUrl}/metrics`)).body.toString();
      if (value('type="click",outcome="ok"') > 0 || Date.now() > end) break;
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(value('type="bill",outcome="duplicate"'), 1);
    assert.ok(value('type="bill",outcome="ok"') >= 1);
    assert.ok(value('type="bill",outcome="rejected"') >= 3, 'forged, tampered, unsigned and too-high bills');
    assert.equal(value('type="click",outcome="ok"'), 1);
  });

  it('logs one record per notice type, with the bid request id', async () => {
    await t.app.close(); // graceful stop flushes the log
    const { records: recs } = await readRedisLog(t.redis.url, 'bidlog');
    const of = (type: string, id: string) => recs.filter((r) => r.type === type && r.id === id);
    assert.equal(of('win', 'rt-1').length, 1);
    assert.equal(of('bill', 'rt-1').length, 2, 'both billing calls are logged');
    assert.deepEqual(of('bill', 'rt-1').map((r) => r.counted).sort(), [false, true]);
    assert.equal(of('loss', 'rt-1').length, 1);
    assert.equal(of('loss', 'rt-1')[0].loss, 102);
    assert.equal(of('imp', 'rt-1').length, 1);
    assert.equal(of('click', 'rt-1').length, 1);
    assert.equal(of('win', 'rt-2').length, 1);
    assert.equal(of('win', 'rt-2')[0].price, null);
  });
});
