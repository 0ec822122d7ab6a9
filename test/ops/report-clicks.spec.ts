// The report's CTR from a real bidder's log: a click URL is public in the markup, so clicks can come
// for bids whose impression never fired. Those are counted apart (a fraud signal), and CTR (clicked
// impressions / impressions) stays at or under 100 %.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { buildReport } from '../../src/shipper/report-data';
import { startTestApp } from '../support/app';
import { spawnShipper, untilDrained } from '../shipper/support';
import { postBid, request } from './support/http';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('the report: clicks without an impression', { timeout: 180_000 }, () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'report-clicks-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('counts them apart and keeps CTR at most 100 %', async () => {
    const app = await startTestApp({ LOG_FLUSH_INTERVAL_MS: '600000' });
    const redisUrl = app.redis.url;
    const fire = async (adm: string, kind: 'imp' | 'click') => {
      const m = new RegExp(`(/t/${kind}\\?[^'"\\s>]+)`).exec(adm);
      assert.ok(m, `no ${kind} URL in ${adm}`);
      const a = await request(`${app.url}${m[1].replace(/&amp;/g, '&')}`);
      assert.ok(a.status < 400, `${kind}: ${a.status} ${a.body}`);
    };
    let bids = 0;
    try {
      for (let i = 0; bids < 6 && i < 40; i++) {
        const a = await postBid(app.url, `clk-${i}`);
        if (a.status !== 200) continue;
        const adm = (JSON.parse(a.body) as { seatbid: Array<{ bid: Array<{ adm: string }> }> }).seatbid[0].bid[0].adm;
        // Bids 0, 1: shown and clicked; 2, 3, 4: clicked, never shown; 5: shown only.
        if (bids <= 1 || bids === 5) await fire(adm, 'imp');
        if (bids <= 4) await fire(adm, 'click');
        bids++;
      }
      assert.equal(bids, 6);
    } finally {
      await app.app.close();
    }
    const shipDir = path.join(dir, 'bidlog');
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    try {
      const shipper = spawnShipper({ REDIS_URL: redisUrl, SHIP_DIR: shipDir });
      try {
        await untilDrained(redis, 'bidlog', 60_000);
      } finally {
        await shipper.stop();
      }
    } finally {
      redis.disconnect();
      await app.close();
    }

    const r = await buildReport({ dir: shipDir, from: null, to: null });
    assert.equal(r.totals.impressions, 3);
    assert.equal(r.totals.clicks, 2, 'clicks of shown bids');
    assert.equal(r.totals.clicksWithoutImpression, 3);
    assert.equal(r.totals.ctr, 2 / 3);
    for (const h of r.hours) assert.ok(h.ctr === null || h.ctr <= 1, `hour ${h.hour}: CTR ${h.ctr}`);
    const c = r.campaigns.reduce((a, x) => ({ clicks: a.clicks + x.clicks, without: a.without + x.clicksWithoutImpression }), { clicks: 0, without: 0 });
    assert.deepEqual(c, { clicks: 2, without: 3 });
    for (const x of r.campaigns) assert.ok(x.ctr === null || x.ctr <= 1, `${x.cid}: CTR ${x.ctr}`);

    // What a person reads.
    const text = spawnSync(path.join(ROOT, 'node_modules', '.bin', 'node'), [path.join(ROOT, 'dist', 'shipper', 'report.js'), '--dir', shipDir], { encoding: 'utf8', timeout: 60_000 });
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /clicks without an impression \(left out of clicks and CTR; a fraud signal\): 3/);
    assert.match(text.stdout, /66\.7%/);
    assert.doesNotMatch(text.stdout, /166\.7%/);
  });
});
