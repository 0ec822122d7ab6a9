/**
 * Replayed notices: a bid's win, loss, impression and click URLs called again and again are logged
 * each time, flagged (`counted` false after the first), and counted once per bid in the report.
 * Real bidder (in-process, real Redis), real shipper process, `npm run report`.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Redis from 'ioredis';
import type { Report } from '../../src/shipper/report-data';
import { bidRequest, readRedisLog, runNode, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { readShipped, redisClient, ROOT, spawnShipper, tmpDir, untilDrained, type ShipperProc } from '../shipper/support';

interface Bid { id: string; cid: string; price: number; adm: string; nurl: string; lurl: string }

describe('replayed notices', () => {
  const KEY = 'replay-log';
  let t: TestApp;
  let admin: Redis;
  let shipper: ShipperProc | undefined;
  let shipDir: string;

  before(async () => {
    t = await startTestApp({ LOG_REDIS_KEY: KEY, LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'error', SHED_MAX_WAIT_MS: '0' });
    admin = await redisClient(t.redis.url);
    shipDir = tmpDir('ship-replay-');
  });
  after(async () => {
    await shipper?.stop('SIGKILL');
    admin?.disconnect();
    await t?.close();
    if (shipDir) fs.rmSync(shipDir, { recursive: true, force: true });
  });

  function local(url: string, macros: Record<string, string> = {}): string {
    const u = new URL(url.replace(/&amp;/g, '&'));
    let s = `${t.url}${u.pathname}${u.search}`;
    for (const [k, v] of Object.entries(macros)) s = s.split(`\${${k}}`).join(encodeURIComponent(v));
    return s;
  }

  async function bid(id: string): Promise<Bid> {
    // No tmax: an idle test machine's first request must not be shed.
    const body = { ...(JSON.parse(bidRequest(id)) as Record<string, unknown>), tmax: undefined };
    const r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
    assert.equal(r.status, 200, r.body.toString());
    return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
  }

  it('are logged each time, the repeats flagged, and the report counts each event once per bid', async () => {
    const won = await bid('replay-won');
    const lost = await bid('replay-lost');
    const imp = /(https?:\/\/[^'"\s]+\/t\/imp\?[^'"\s<]+)/.exec(won.adm)![1];
    const click = /(https?:\/\/[^'"\s]+\/t\/click\?[^'"\s<]+)/.exec(won.adm)![1];
    const price = String(Math.round(won.price * 0.5 * 10_000) / 10_000);
    // As in the issue: 20 replays of the win and the impression, 22 of the click (a CTR of 110 %).
    for (let i = 0; i < 20; i++) {
      assert.equal((await request(local(won.nurl, { AUCTION_PRICE: price, AUCTION_CURRENCY: 'USD' }), { method: 'GET' })).status, 204);
      assert.equal((await request(local(imp), { method: 'GET' })).status, 200);
      assert.equal((await request(local(lost.lurl, { AUCTION_PRICE: '', AUCTION_LOSS: '102' }), { method: 'GET' })).status, 204);
    }
    for (let i = 0; i < 22; i++) assert.equal((await request(local(click), { method: 'GET' })).status, 302);

    await until('every notice record in the log', async () => {
      const recs = (await readRedisLog(t.redis.url, KEY)).records;
      return recs.filter((r) => ['win', 'imp', 'click', 'loss'].includes(String(r.type))).length === 82;
    });
    shipper = spawnShipper({ REDIS_URL: t.redis.url, LOG_REDIS_KEY: KEY, SHIP_DIR: shipDir, SHIP_ID: 'replay' });
    await t.app.close(); // the final flush
    await untilDrained(admin, KEY, 60_000);
    const r = await runNode(path.join(ROOT, 'dist', 'shipper', 'report.js'), ['--dir', shipDir, '--json']);
    assert.equal(r.code, 0, r.stderr);
    const rep = JSON.parse(r.stdout) as Report;
    assert.equal(rep.totals.wins, 1);
    assert.equal(rep.totals.losses, 1);
    assert.equal(rep.totals.impressions, 1);
    assert.equal(rep.totals.clicks, 1);
    assert.equal(rep.totals.ctr, 1);
    assert.equal(rep.totals.winRate, 0.5);
    assert.equal(rep.repeats, 19 + 19 + 19 + 21);
    assert.equal(rep.hours.reduce((s, h) => s + h.wins, 0), 1);
    const c = rep.campaigns.find((x) => x.cid === won.cid);
    assert.ok(c && c.wins === 1 && c.impressions === 1 && c.clicks === 1 && c.ctr === 1, JSON.stringify(rep.campaigns));
    const text = await runNode(path.join(ROOT, 'dist', 'shipper', 'report.js'), ['--dir', shipDir]);
    assert.match(text.stdout, /78 repeated notice records left out/);
    // Every record is kept, the repeats flagged as billing flags them.
    const rows = await readShipped(shipDir, 'type, counted');
    for (const [type, n] of [['win', 20], ['imp', 20], ['loss', 20], ['click', 22]] as const) {
      const of = rows.filter((r) => r.type === type);
      assert.equal(of.length, n, type);
      assert.equal(of.filter((r) => r.counted === true).length, 1, `${type}: one record counted`);
      assert.equal(of.filter((r) => r.counted === false).length, n - 1, `${type}: the repeats flagged`);
    }
  });
});
