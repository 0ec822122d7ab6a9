/**
 * Money keys that vanish: a campaign's spend total that goes backwards, or the billing markers of
 * its node gone (a Redis restart without persistence, a FLUSHALL, a failover to an empty replica),
 * would let budgets be spent again and bills already counted count again. Each is detected at the
 * next budget refresh, counted in bidder_money_keys_lost_total{what}, logged, and shown in
 * readiness (degraded) — a real Redis, a real app.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { spendKeys } from '../../src/delivery/keys';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm } from '../support/prom';

const campaigns = {
  version: 1,
  currency: 'USD',
  campaigns: ['m1', 'm2'].map((id) => ({
    id,
    adomain: [`${id}.example`],
    cat: ['IAB3'],
    landingUrl: `https://${id}.example/landing`,
    budget: { total: 100, daily: 100 },
    creatives: [{ id: `${id}-cr`, type: 'banner', price: 1, banner: { w: 300, h: 250, imageUrl: `https://cdn.${id}.example/a.png` } }],
  })),
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('money keys that vanish are detected, counted and shown in readiness', { timeout: 60_000 }, () => {
  let app: TestApp;
  let client: Redis;
  let dir = '';
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'money-keys-'));
    const file = path.join(dir, 'campaigns.json');
    fs.writeFileSync(file, JSON.stringify(campaigns));
    app = await startTestApp({ CAMPAIGNS_FILE: file, BUDGET_REFRESH_MS: '50', LOG_LEVEL: 'error' });
    client = new Redis(app.redis.url);
  });
  after(async () => {
    client?.disconnect();
    await app?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function lost(): Promise<Record<string, number>> {
    const r = await request(`${app.adminUrl}/metrics`, { method: 'GET' });
    const out: Record<string, number> = {};
    for (const s of parseProm(r.body.toString()).get('bidder_money_keys_lost_total')?.samples ?? []) out[s.labels.what] = s.value;
    return out;
  }
  async function ready(): Promise<{ code: number; status: string; warnings: string[] }> {
    const r = await request(`${app.url}/health/ready`, { method: 'GET' });
    const b = JSON.parse(r.body.toString()) as { status: string; warnings: string[] };
    return { code: r.status, status: b.status, warnings: b.warnings };
  }

  it('nothing lost: ready, counters at 0', async () => {
    await client.set(spendKeys.total('m1'), '4620');
    await client.set(spendKeys.billMarker('m1', 'b1'), '1', 'EX', 3600);
    await sleep(300);
    assert.deepEqual(await lost(), { spend: 0, markers: 0 });
    const r = await ready();
    assert.equal(r.status, 'ready', JSON.stringify(r));
  });

  it('a spend total that goes backwards (4620 → 1000 µUSD): counted, logged, degraded with the campaign named', async () => {
    await client.set(spendKeys.total('m1'), '1000');
    await sleep(300);
    assert.equal((await lost()).spend, 1);
    const r = await ready();
    assert.equal(r.code, 200);
    assert.equal(r.status, 'degraded');
    assert.match(r.warnings.join('\n'), /spend of campaign m1 went back from 4620 to 1000 µUSD/);
    await sleep(300);
    assert.equal((await lost()).spend, 1, 'once, not at every refresh');
  });

  it('FLUSHALL: the spend and the billing markers of every campaign gone, counted, said in readiness', async () => {
    await client.set(spendKeys.total('m2'), '300');
    await sleep(300);
    const before = await lost();
    await client.flushall();
    await sleep(400);
    const after = await lost();
    assert.equal(after.spend - before.spend, 2, 'm1 (1000) and m2 (300) went back to 0');
    assert.equal(after.markers - before.markers, 2, 'the witness of both campaigns vanished');
    const r = await ready();
    assert.equal(r.status, 'degraded');
    assert.match(r.warnings.join('\n'), /billing markers of 2 campaign\(s\) vanished .*count again/);
    await sleep(300);
    assert.equal((await lost()).markers, after.markers, 'rearmed: counted once');
  });
});
