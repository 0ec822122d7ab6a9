/**
 * Spend and pacing per campaign in /metrics (issue 25: target against actual spend, throttle rate):
 * every budgeted campaign of the campaign file has its spend of the day, its budget of the day and
 * its share of eligible requests (1 − throttle rate); an even one also its pacing target. Labels
 * come from the campaign file only: a campaign removed from it leaves the metrics at the next
 * refresh (every campaign of a file has a budget: src/targeting/loader.ts).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { localDay } from '../../src/delivery/local-day';
import { request, startTestApp, type TestApp } from '../support/app';
import { bannerCampaign } from '../support/campaigns';

const EVEN = bannerCampaign('even-1', { w: 300, h: 250 }, { pacing: 'even', timeZone: 'Europe/Paris', budget: { total: 1000, daily: 40 } });
const ASAP = bannerCampaign('asap-1', { w: 300, h: 250 }, { pacing: 'asap', budget: { total: 60, daily: 40 } });

/** `name{…campaign="id"…} value` series of the scrape: {campaign: [values]} (one per worker label set). */
function series(text: string, name: string): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const m of text.matchAll(new RegExp(`^${name}\\{([^}]*)\\} (\\S+)$`, 'gm'))) {
    const c = /campaign="([^"]*)"/.exec(m[1])?.[1];
    if (c === undefined) continue;
    out.set(c, [...(out.get(c) ?? []), Number(m[2])]);
  }
  return out;
}

async function until<T>(what: string, f: () => Promise<T | null>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== null) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('per-campaign spend and pacing metrics', () => {
  let dir: string;
  let file: string;
  let app: TestApp;
  let client: Redis;

  const write = (campaigns: unknown[]) => {
    // Written then renamed, so the watcher never reads half a file.
    fs.writeFileSync(`${file}.tmp`, JSON.stringify({ version: 1, currency: 'USD', campaigns }));
    fs.renameSync(`${file}.tmp`, file);
  };
  const scrape = async (): Promise<string> => {
    const r = await request(`${app.adminUrl}/metrics`, { method: 'GET' });
    assert.equal(r.status, 200);
    return r.body.toString();
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-pacing-metrics-'));
    file = path.join(dir, 'campaigns.json');
    write([EVEN, ASAP]);
    app = await startTestApp({ CAMPAIGNS_FILE: file, CAMPAIGNS_WATCH_MS: '100', BUDGET_REFRESH_MS: '100' });
    client = new Redis(app.redis.url);
    // Spend already in Redis: 12 USD of even-1's day (its own, in Paris) and 20 of asap-1's, which
    // spent 30 on earlier days: its total of 60 leaves it 10 more today although its daily budget is 40.
    // Written for the next day too, so that a test that runs across a midnight sees the same spend.
    // One MSET: a refresh between separate writes would read a day's spend without its total (asap-1's
    // budget 40, not 30) and the scrape could see that refresh.
    const now = Date.now();
    const spend: string[] = [];
    for (const t of [now, localDay(now, 'Europe/Paris').end]) spend.push(spendKeys.daily('even-1', localDay(t, 'Europe/Paris').day), String(12 * 1_000_000));
    for (const t of [now, localDay(now, 'UTC').end]) spend.push(spendKeys.daily('asap-1', localDay(t, 'UTC').day), String(20 * 1_000_000));
    spend.push(spendKeys.total('even-1'), String(300 * 1_000_000), spendKeys.total('asap-1'), String(50 * 1_000_000));
    await client.mset(...spend);
  });

  after(async () => {
    client?.disconnect();
    await app?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('exports spend, budget and share of every budgeted campaign, and the target of even ones', async () => {
    const text = await until('the spend in /metrics', async () => {
      const t = await scrape();
      const spent = series(t, 'bidder_pacing_spent_usd');
      return spent.get('even-1')?.[0] === 12 && spent.get('asap-1')?.[0] === 20 ? t : null;
    });
    const spent = series(text, 'bidder_pacing_spent_usd');
    const budget = series(text, 'bidder_pacing_budget_usd');
    const target = series(text, 'bidder_pacing_target_usd');
    const share = series(text, 'bidder_pacing_share');
    for (const m of [spent, budget, share]) assert.deepEqual([...m.keys()].sort(), ['asap-1', 'even-1']);
    assert.deepEqual([...target.keys()], ['even-1']);
    assert.deepEqual(budget.get('even-1'), [40]);
    // asap-1: its daily budget is 40, but only 60 − 50 = 10 of its total is left: 20 + 10 today.
    assert.deepEqual(budget.get('asap-1'), [30]);
    // The curve started at the worker's first refresh (before the spend was written here) and runs
    // to the day's budget by the end of the day, less the pacing's end margin: within that margin
    // the target is the whole budget (a run a few minutes before midnight in Paris sees 40).
    const t0 = target.get('even-1')![0];
    const scrapedAt = Date.now();
    const aimEnd = localDay(scrapedAt, 'Europe/Paris').end - app.config.pacingEndMarginMs;
    // The value is the last refresh's (BUDGET_REFRESH_MS 100 before the scrape at most): 2 s either way.
    if (scrapedAt < aimEnd - 2_000) assert.ok(t0 >= 0 && t0 < 40, `target ${t0}`);
    else if (scrapedAt > aimEnd + 2_000) assert.equal(t0, 40);
    else assert.ok(t0 >= 0 && t0 <= 40, `target ${t0}`);
    assert.deepEqual(share.get('asap-1'), [1]);
    const s = share.get('even-1')![0];
    assert.ok(s > 0 && s <= 1, `share ${s}`);
    assert.match(text, /^# TYPE bidder_pacing_throttled_total counter$/m);
  });

  it('a campaign removed from the file leaves the metrics; one added joins them', async () => {
    write([EVEN, bannerCampaign('even-2', { w: 300, h: 250 }, { pacing: 'even', budget: { total: 100, daily: 10 } })]);
    const text = await until('the reload in /metrics', async () => {
      const t = await scrape();
      const ids = [...series(t, 'bidder_pacing_budget_usd').keys()].sort().join(',');
      return ids === 'even-1,even-2' ? t : null;
    });
    for (const name of ['bidder_pacing_spent_usd', 'bidder_pacing_budget_usd', 'bidder_pacing_share']) {
      assert.deepEqual([...series(text, name).keys()].sort(), ['even-1', 'even-2'], name);
    }
    assert.deepEqual([...series(text, 'bidder_pacing_target_usd').keys()].sort(), ['even-1', 'even-2']);
    assert.doesNotMatch(text, /campaign="asap-1"/);
  });
});
