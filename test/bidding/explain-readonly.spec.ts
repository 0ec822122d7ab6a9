/**
 * `POST /debug/explain` changes nothing: over real HTTP against a real Redis, explaining requests
 * that reach the pacing gate (a budgeted campaign that bids, one whose budget is used up) leaves
 * every Redis key and value, the pacing counters of `/metrics` and the pacing state (the eligible
 * requests each budgeted campaign counts for its traffic curve) as they were; a real bid changes
 * them, so the comparison can fail.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { SpendService } from '../../src/delivery/spend.service';
import { request, startTestApp, type TestApp } from '../support/app';
import { bannerCampaign } from '../support/campaigns';
import { until } from '../log/support';

const OPEN = { w: 300, h: 250 };
const TINY = { w: 468, h: 60 };

let t: TestApp;
let dir: string;
let redis: Redis;

function banner(id: string, size: { w: number; h: number }): Record<string, unknown> {
  return { id, imp: [{ id: '1', banner: size }], site: { domain: 'ro.example', publisher: { name: 'P' } }, user: { id: 'ro-user' } };
}

function post(base: string, route: string, body: unknown) {
  return request(`${base}${route}`, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

/**
 * Every Redis key with its type and serialized value, but the cluster metrics snapshot's
 * (`bidder:metrics:*`): each worker writes it on its own timer, at a random phase of every 5 s,
 * whatever the requests do.
 */
async function redisState(): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) if (!k.startsWith('bidder:metrics:')) out.set(k, `${await redis.type(k)}:${(await redis.dumpBuffer(k))?.toString('base64') ?? ''}`);
  } while (cursor !== '0');
  return out;
}

/** The pacing lines of `/metrics` (blocked, throttled). */
async function pacingMetrics(): Promise<string[]> {
  const r = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  assert.equal(r.status, 200);
  return r.body
    .toString()
    .split('\n')
    .filter((l) => l.startsWith('bidder_pacing_'));
}

/** The eligible requests each budgeted campaign's gate counted since the last refresh (its traffic curve's `seen`). */
function seen(): Record<string, number> {
  const budgets = t.app.get(SpendService)['budgets'];
  const out: Record<string, number> = {};
  for (const [id, b] of budgets) out[id] = b.seen;
  return out;
}

async function snapshot(): Promise<{ redis: Map<string, string>; metrics: string[]; seen: Record<string, number> }> {
  return { redis: await redisState(), metrics: await pacingMetrics(), seen: seen() };
}

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-explain-ro-'));
  const campaigns = [
    bannerCampaign('ro-open', OPEN, { budget: { total: 1000, daily: 1000 }, frequencyCap: { perDay: 100 } }),
    // A budget of a few bids: used up by the bids below, then held back at the gate ("budget").
    bannerCampaign('ro-tiny', TINY, { budget: { total: 0.003, daily: 0.003 } }),
  ];
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(file, JSON.stringify({ version: 1, campaigns }));
  t = await startTestApp({ DEBUG_ENDPOINTS: 'true', CAMPAIGNS_FILE: file, LOG_FLUSH_INTERVAL_MS: '50', BUDGET_REFRESH_MS: '100' });
  redis = new Redis(t.redis.url);
  // Budgeted campaigns wait for their first lease.
  await until('budgets read', async () => (await post(t.url, '/openrtb2/bid', banner('lease', OPEN))).status === 200, 5_000);
  // Spend the tiny budget until its gate says no.
  await until('tiny budget used up', async () => (await post(t.url, '/openrtb2/bid', banner('spend', TINY))).status === 204, 5_000);
  // From here no refresh runs: Redis, the counters and `seen` move only by what a request does.
  t.app.get(SpendService).stopTimer();
  // Let the log's last flush land.
  await new Promise((r) => setTimeout(r, 300));
});

after(async () => {
  redis?.disconnect();
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('/debug/explain is read-only', () => {
  it('leaves Redis, the pacing metrics and the pacing state as they were, where a bid changes them', async () => {
    const before = await snapshot();
    const seenBefore = before.seen;
    assert.ok('ro-open' in seenBefore && 'ro-tiny' in seenBefore, 'both campaigns have a budget state');
    for (let i = 0; i < 5; i++) {
      for (const size of [OPEN, TINY]) {
        const r = await post(t.adminUrl, '/debug/explain', banner(`explain-${i}`, size));
        assert.equal(r.status, 200, r.body.toString());
        const doc = JSON.parse(r.body.toString()) as { status: number; reason: string | null };
        // The explanation still reaches the gate: the open campaign bids, the tiny one is out of budget.
        assert.deepEqual({ status: doc.status, reason: doc.reason }, size === OPEN ? { status: 200, reason: null } : { status: 204, reason: 'budget' });
      }
    }
    const afterExplain = await snapshot();
    assert.deepEqual(afterExplain.seen, seenBefore, 'pacing state (seen) unchanged by explain');
    assert.deepEqual(afterExplain.metrics, before.metrics, 'pacing metrics unchanged by explain');
    assert.deepEqual([...afterExplain.redis.entries()].sort(), [...before.redis.entries()].sort(), 'Redis unchanged by explain');

    // The same requests on the bid path do change them: the comparison above can fail.
    assert.equal((await post(t.url, '/openrtb2/bid', banner('real-open', OPEN))).status, 200);
    assert.equal((await post(t.url, '/openrtb2/bid', banner('real-tiny', TINY))).status, 204);
    const afterBid = await snapshot();
    assert.equal(afterBid.seen['ro-open'], seenBefore['ro-open'] + 1, 'a bid counts the open campaign as seen');
    assert.equal(afterBid.seen['ro-tiny'], seenBefore['ro-tiny'] + 1, 'a bid counts the tiny campaign as seen');
    assert.notDeepEqual(afterBid.metrics, before.metrics, 'a bid held back by its budget counts as blocked');
    await until('the bid log reaches Redis', async () => (await redisState()).size !== before.redis.size || [...(await redisState())].some(([k, v]) => before.redis.get(k) !== v), 5_000);
  });
});
