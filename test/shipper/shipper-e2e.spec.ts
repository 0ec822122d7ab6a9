// End to end: bid requests and notices through the real bidder (in-process, real Redis), the real
// shipper process, then the Parquet partitions and `npm run report` checked against that traffic.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Redis from 'ioredis';
import type { Report } from '../../src/shipper/report-data';
import { request, startTestApp, type TestApp } from '../support/app';
import { bidRequest, runNode, type RunResult } from '../log/support';
import { assertShippedOnce, readShipped, redisClient, ROOT, spawnShipper, tmpDir, untilDrained, type ShipperProc } from './support';

interface Bid {
  id: string;
  impid: string;
  price: number;
  adm: string;
  cid: string;
  crid: string;
  nurl: string;
  burl: string;
  lurl: string;
}

function runReport(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return runNode(path.join(ROOT, 'dist', 'shipper', 'report.js'), args, env);
}

describe('bidder → Redis → shipper → Parquet → report', () => {
  const KEY = 'e2e-ship';
  let t: TestApp;
  let admin: Redis;
  let shipper: ShipperProc;
  let shipDir: string;
  const sent = { requests: 0, bids: 0, answeredWithBid: 0, noBids: 0, errors: 0, wins: 0, losses: 0, imps: 0, clicks: 0, billed: 0, spend: 0 };
  const bidsByCampaign = new Map<string, number>();
  const winsByCampaign = new Map<string, number>();
  const ids: string[] = [];

  before(async () => {
    t = await startTestApp({ LOG_REDIS_KEY: KEY, LOG_FLUSH_INTERVAL_MS: '50', LOG_FLUSH_BYTES: String(64 * 1024), LOG_LEVEL: 'warn', WORKER_ID: 'e2e' });
    admin = await redisClient(t.redis.url);
    shipDir = tmpDir('ship-e2e-');
    shipper = spawnShipper({ REDIS_URL: t.redis.url, LOG_REDIS_KEY: KEY, SHIP_DIR: shipDir, SHIP_ID: 'e2e', SHIP_BATCH_FRAMES: '8' });
  });
  after(async () => {
    await shipper?.stop('SIGKILL');
    admin?.disconnect();
    await t?.close();
    if (shipDir) fs.rmSync(shipDir, { recursive: true, force: true });
  });

  /** Points a tracking URL at the test app and substitutes the macros. */
  function local(url: string, macros: Record<string, string> = {}): string {
    const u = new URL(url.replace(/&amp;/g, '&'));
    let s = `${t.url}${u.pathname}${u.search}`;
    for (const [k, v] of Object.entries(macros)) s = s.split(`\${${k}}`).join(encodeURIComponent(v));
    return s;
  }

  async function notice(url: string, status: number): Promise<void> {
    const r = await request(url, { method: 'GET' });
    assert.equal(r.status, status, `${url}: ${r.body.toString()}`);
  }

  it('N bid requests and their notices end up in the partitions exactly once; the list and processing lists end empty', async () => {
    const N = 240;
    for (let i = 0; i < N; i++) {
      const id = `e2e-${i}`;
      ids.push(id);
      let body = bidRequest(id);
      // Every 12th asks for a size nothing has (a no-bid), every 20th has no imp at all (a 400).
      if (i % 12 === 5) body = body.replace('"w":300,"h":250', '"w":1,"h":1');
      if (i % 20 === 7) body = JSON.stringify({ id, imp: [] });
      const r = await request(`${t.url}/openrtb2/bid`, { body, headers: { 'content-type': 'application/json' } });
      sent.requests++;
      if (r.status === 204) {
        sent.noBids++;
        continue;
      }
      if (r.status === 400) {
        sent.errors++;
        continue;
      }
      assert.equal(r.status, 200, r.body.toString());
      sent.answeredWithBid++;
      const bids = (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid.flatMap((s) => s.bid);
      for (const bid of bids) {
        sent.bids++;
        bidsByCampaign.set(bid.cid, (bidsByCampaign.get(bid.cid) ?? 0) + 1);
        if (i % 4 === 3) {
          await notice(local(bid.lurl, { AUCTION_PRICE: '', AUCTION_LOSS: '102' }), 204);
          sent.losses++;
          continue;
        }
        const clearing = Math.round(bid.price * 0.8 * 10_000) / 10_000;
        await notice(local(bid.nurl, { AUCTION_PRICE: String(clearing), AUCTION_CURRENCY: 'USD' }), 204);
        sent.wins++;
        winsByCampaign.set(bid.cid, (winsByCampaign.get(bid.cid) ?? 0) + 1);
        if (i % 2 === 0) {
          const burl = local(bid.burl, { AUCTION_PRICE: String(clearing), AUCTION_CURRENCY: 'USD' });
          await notice(burl, 204);
          sent.billed++;
          sent.spend += clearing / 1000;
          if (i % 10 === 0) await notice(burl, 204); // a repeat: logged with counted=false, not billed again
        }
        const imp = /(https?:\/\/[^'"\s]+\/t\/imp\?[^'"\s<]+)/.exec(bid.adm);
        if (imp && i % 3 === 0) {
          await notice(local(imp[1]), 200);
          sent.imps++;
          const click = /(https?:\/\/[^'"\s]+\/t\/click\?[^'"\s<]+)/.exec(bid.adm);
          if (click && i % 6 === 0) {
            await notice(local(click[1]), 302);
            sent.clicks++;
          }
        }
      }
    }
    assert.ok(sent.answeredWithBid > 100 && sent.noBids > 0 && sent.errors > 0, JSON.stringify(sent));
    assert.ok(sent.imps > 0 && sent.clicks > 0 && sent.billed > 0 && sent.losses > 0, JSON.stringify(sent));

    // The bidder's final flush, then the shipper drains what is left.
    await t.app.close();
    await untilDrained(admin, KEY, 60_000);

    await assertShippedOnce(shipDir, ids);
    const rows = await readShipped(shipDir, 'type, counted, id, frame');
    const byType = new Map<string, number>();
    for (const r of rows) byType.set(String(r.type), (byType.get(String(r.type)) ?? 0) + 1);
    const repeats = rows.filter((r) => r.type === 'bill' && r.counted === false).length;
    assert.deepEqual(Object.fromEntries([...byType].sort()), {
      bill: sent.billed + repeats,
      click: sent.clicks,
      imp: sent.imps,
      loss: sent.losses,
      request: N,
      response: N,
      win: sent.wins,
    });
    assert.ok(repeats > 0, 'repeated billing notices are logged too');
    assert.equal(await admin.llen(KEY), 0);
    assert.deepEqual(await admin.keys(`${KEY}:proc:*`), []);
  });

  it('the report\'s figures match the traffic; --html writes one self-contained page', async () => {
    const html = path.join(shipDir, 'report.html');
    const r = await runReport(['--dir', shipDir, '--json', '--html', html]);
    assert.equal(r.code, 0, r.stderr);
    const rep = JSON.parse(r.stdout) as Report;
    const tot = rep.totals;
    assert.equal(tot.requests, sent.requests);
    assert.equal(tot.answeredWithBid, sent.answeredWithBid);
    assert.equal(tot.noBids, sent.noBids);
    assert.equal(tot.errors, sent.errors);
    assert.equal(tot.bids, sent.bids);
    assert.equal(tot.fillRate, sent.answeredWithBid / sent.requests);
    assert.equal(tot.wins, sent.wins);
    assert.equal(tot.winRate, sent.wins / sent.bids);
    assert.equal(tot.losses, sent.losses);
    assert.equal(tot.impressions, sent.imps);
    assert.equal(tot.clicks, sent.clicks);
    assert.equal(tot.ctr, sent.clicks / sent.imps);
    assert.equal(tot.billed, sent.billed);
    assert.equal(tot.money.length, 1);
    assert.equal(tot.money[0].cur, 'USD');
    assert.ok(Math.abs(tot.money[0].spend - sent.spend) < 1e-9, `spend ${tot.money[0].spend} vs ${sent.spend}`);
    assert.ok(Math.abs((tot.money[0].ecpm ?? 0) - (sent.spend / sent.billed) * 1000) < 1e-6);
    // Every response record carries the bidder's answer time (ms): percentiles over all of them.
    assert.equal(tot.answerMs.count, sent.requests);
    const a = tot.answerMs;
    assert.ok(a.p50 !== null && a.p99 !== null && a.max !== null && a.p50 > 0 && a.p50 <= a.p99 && a.p99 <= a.max, JSON.stringify(a));
    assert.equal(rep.hours.reduce((s, h) => s + h.requests, 0), sent.requests);
    assert.equal(rep.hours.reduce((s, h) => s + h.wins, 0), sent.wins);
    const reasons = new Map<string, number>();
    for (const x of rep.reasons) reasons.set(`${x.status}`, (reasons.get(`${x.status}`) ?? 0) + x.count);
    assert.equal(reasons.get('204'), sent.noBids);
    assert.equal(reasons.get('400'), sent.errors);
    assert.ok(rep.reasons.some((x) => x.status === 400 && /imp/.test(x.reason)), JSON.stringify(rep.reasons));
    for (const [cid, n] of bidsByCampaign) {
      const c = rep.campaigns.find((x) => x.cid === cid);
      assert.ok(c, cid);
      assert.equal(c.bids, n, `bids of ${cid}`);
      assert.equal(c.wins, winsByCampaign.get(cid) ?? 0, `wins of ${cid}`);
    }
    assert.equal(rep.campaigns.reduce((s, c) => s + c.billed, 0), sent.billed);

    const page = fs.readFileSync(html, 'utf8');
    assert.match(page, /^<!doctype html>/);
    assert.match(page, /<table>/);
    assert.ok(!/<script|<link|src=|@import|url\(/i.test(page), 'nothing fetched from anywhere');
    assert.ok(page.includes(rep.campaigns[0].cid));

    const text = await runReport(['--dir', shipDir, '--day', 'today']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Per hour \(UTC\)/);
    assert.match(text.stdout, new RegExp(`all\\s+${sent.requests.toLocaleString('en-US')}\\s`));
    const none = await runReport(['--dir', shipDir, '--day', '2001-01-01', '--json']);
    assert.equal((JSON.parse(none.stdout) as Report).records, 0, 'a window with no records');
    const bad = await runReport(['--dir', shipDir, '--from', 'last tuesday']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /last tuesday/);
  });
});
