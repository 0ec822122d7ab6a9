/**
 * `POST /debug/explain` (admin port) and `POST /openrtb2/bid` (public port) give the same outcome and
 * the same no-bid reason for every fixture request, over real HTTP, against a real Redis and the real
 * delivery gate (budget leases, frequency caps): the bid path's reason is read from its `response`
 * log record. Besides the fixtures, two requests the gate must stop: a user capped after two
 * impressions (`frequency_cap`) and a campaign whose budget was billed away (`budget`).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { sampleRequests } from '../support/samples';
import { bannerCampaign } from '../support/campaigns';

type Raw = Record<string, unknown>;

interface ExplainImp {
  impid: string;
  reason: string | null;
}
interface ExplainDoc {
  id: string;
  cur: string | null;
  imps: ExplainImp[];
  status?: number;
  reason?: string | null;
}

/** What one route said about one request. */
interface Outcome {
  status: number;
  /** The no-bid reason (204), the error (400), null on a bid. */
  reason: string | null;
  /** The imps that bid (200). */
  impids: string[];
}

const root = path.resolve(__dirname, '..', '..', '..');
const LOG_KEY = 'parity-log';
const CAP_SIZE = { w: 970, h: 250 };
const TINY_SIZE = { w: 468, h: 60 };

function fixtures(): Array<{ name: string; body: Raw }> {
  const out = sampleRequests().map((s) => ({ name: s.name, body: s.request as Raw }));
  for (const group of ['exemplary', 'supplemental']) {
    const dir = path.join(root, 'test', 'fixtures', 'cases', group);
    for (const f of fs.readdirSync(dir).filter((n) => n.endsWith('.json')).sort()) {
      out.push({ name: `cases/${group}/${f}`, body: (JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { request: Raw }).request });
    }
  }
  return out;
}

let t: TestApp;
let dir: string;

before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-parity-'));
  const demo = JSON.parse(fs.readFileSync(path.join(root, 'data', 'campaigns.demo.json'), 'utf8')) as { campaigns: object[] };
  // The demo campaigns, plus one capped at two impressions a day and one with a budget of a few bids, each alone at its size.
  demo.campaigns.push(bannerCampaign('parity-capped', CAP_SIZE, { budget: { total: 1000, daily: 1000 }, frequencyCap: { perDay: 2 } }));
  demo.campaigns.push(bannerCampaign('parity-tiny', TINY_SIZE, { budget: { total: 0.004, daily: 0.004 } }));
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(file, JSON.stringify(demo));
  t = await startTestApp({
    DEBUG_ENDPOINTS: 'true',
    CAMPAIGNS_FILE: file,
    LOG_REDIS_KEY: LOG_KEY,
    LOG_FLUSH_INTERVAL_MS: '50',
    BUDGET_REFRESH_MS: '100',
  });
  // Budgeted campaigns wait for their first lease: bid once it is there.
  await until('budgets read', async () => (await post(t.url, '/openrtb2/bid', banner('warm-up', TINY_SIZE))).status === 200, 5_000);
});

after(async () => {
  await t?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

let seq = 0;
function banner(id: string, size: { w: number; h: number }, user = ''): Raw {
  return { id, imp: [{ id: '1', banner: size }], site: { domain: 'parity.example', publisher: { name: 'P' } }, ...(user ? { user: { id: user } } : {}) };
}

function post(base: string, route: string, body: unknown) {
  return request(`${base}${route}`, { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
}

/** The explain document as an outcome: a bid when an imp has an eligible candidate, else the first imp's reason (the bid path's rule). */
async function explain(body: Raw): Promise<{ outcome: Outcome; doc: ExplainDoc | null }> {
  const r = await post(t.adminUrl, '/debug/explain', body);
  const text = r.body.toString();
  if (r.status !== 200) return { outcome: { status: r.status, reason: (JSON.parse(text) as { error: string }).error, impids: [] }, doc: null };
  const doc = JSON.parse(text) as ExplainDoc;
  const bidding = doc.imps.filter((i) => i.reason === null).map((i) => i.impid);
  const first = doc.imps.find((i) => i.reason !== null);
  const outcome: Outcome = bidding.length > 0 ? { status: 200, reason: null, impids: bidding } : { status: 204, reason: first?.reason ?? 'no_candidates', impids: [] };
  return { outcome, doc };
}

/** The id the log records carry, or '' when the request gets none. */
function logId(body: Raw): string {
  const id = body.id;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : '';
}

/** Every `response` record of the log so far, in order. */
async function responses(): Promise<Array<Record<string, unknown>>> {
  return (await readRedisLog(t.redis.url, LOG_KEY)).records.filter((r) => r.type === 'response');
}

let logged = 0;
/** The bid path's outcome: status and bids from HTTP, the no-bid reason from the request's `response` record. */
async function bid(body: Raw): Promise<Outcome> {
  const r = await post(t.url, '/openrtb2/bid', body);
  const text = r.body.toString();
  if (r.status === 400) {
    if (logId(body) !== '') logged++;
    return { status: 400, reason: (JSON.parse(text) as { error: string }).error, impids: [] };
  }
  assert.ok(r.status === 200 || r.status === 204, `status ${r.status}: ${text}`);
  const mine = logged++;
  let recs: Array<Record<string, unknown>> = [];
  await until('the response record', async () => (recs = await responses()).length > mine, 5_000);
  assert.equal(recs[mine].id, logId(body), 'the log records in request order');
  const impids = r.status === 200 ? (JSON.parse(text) as { seatbid: Array<{ bid: Array<{ impid: string }> }> }).seatbid.flatMap((s) => s.bid.map((b) => b.impid)) : [];
  return { status: r.status, reason: r.status === 200 ? null : (recs[mine].reason as string), impids };
}

/** Explain first (it takes no budget), then the bid; both must say the same. */
async function same(body: Raw): Promise<Outcome> {
  const ex = await explain(body);
  const b = await bid(body);
  assert.deepEqual({ status: ex.outcome.status, reason: ex.outcome.reason }, { status: b.status, reason: b.reason }, 'explain and the bid path disagree');
  if (b.status === 200) assert.deepEqual([...ex.outcome.impids].sort(), [...b.impids].sort(), 'the imps that bid');
  if (ex.doc?.status !== undefined) assert.deepEqual({ status: ex.doc.status, reason: ex.doc.reason }, { status: b.status, reason: b.reason }, "explain's own outcome");
  return b;
}

describe('explain and the bid path agree', { timeout: 120_000 }, () => {
  before(async () => {
    // The warm-up's records.
    await until('warm-up logged', async () => (await responses()).length >= 1, 5_000);
    logged = (await responses()).length;
  });

  const seen = new Map<string, number>();
  for (const f of fixtures()) {
    it(f.name, async () => {
      const o = await same(f.body);
      const k = o.status === 204 ? `204 ${o.reason}` : String(o.status);
      seen.set(k, (seen.get(k) ?? 0) + 1);
    });
  }
  it('the fixtures reach bids, no-bids and refusals', () => {
    assert.ok((seen.get('200') ?? 0) > 10 && (seen.get('400') ?? 0) > 0, JSON.stringify([...seen]));
    assert.ok([...seen.keys()].filter((k) => k.startsWith('204')).length >= 3, JSON.stringify([...seen]));
  });

  it('frequency_cap: a user capped after two impressions', async () => {
    const user = 'parity-cap-user';
    for (let i = 0; i < 2; i++) {
      const body = banner(`cap-${seq++}`, CAP_SIZE, user);
      assert.equal((await same(body)).status, 200, 'under the cap');
      const r = await post(t.url, '/openrtb2/bid', body);
      logged++;
      const adm = (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Array<{ adm: string }> }> }).seatbid[0].bid[0].adm;
      const imp = new URL(/<img src='([^']+\/t\/imp\?[^']+)'/.exec(adm)![1].replace(/&amp;/g, '&'));
      assert.equal((await request(`${t.url}${imp.pathname}${imp.search}`, { method: 'GET' })).status, 200);
    }
    // Impressions are counted in 50 ms batches, then the capped pair is published to the worker.
    await until('capped', async () => {
      const r = await post(t.url, '/openrtb2/bid', banner(`cap-${seq++}`, CAP_SIZE, user));
      logged++;
      return r.status === 204;
    }, 5_000);
    const o = await same(banner(`cap-${seq++}`, CAP_SIZE, user));
    assert.deepEqual({ status: o.status, reason: o.reason }, { status: 204, reason: 'frequency_cap' });
    // Another user still gets the campaign.
    assert.equal((await same(banner(`cap-${seq++}`, CAP_SIZE, 'parity-other-user'))).status, 200);
  });

  it('budget: a campaign billed up to its budget', async () => {
    let stopped = false;
    for (let i = 0; i < 50 && !stopped; i++) {
      const r = await post(t.url, '/openrtb2/bid', banner(`tiny-${seq++}`, TINY_SIZE));
      logged++;
      if (r.status === 204) {
        stopped = true;
        break;
      }
      const b = (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Array<{ burl: string; price: number }> }> }).seatbid[0].bid[0];
      const u = new URL(b.burl.replace('${AUCTION_PRICE}', String(b.price)).replace('${AUCTION_CURRENCY}', 'USD'));
      assert.equal((await request(`${t.url}${u.pathname}${u.search}`, { method: 'GET' })).status, 204);
      await new Promise((res) => setTimeout(res, 120)); // the next lease refresh sees the spend
    }
    assert.ok(stopped, 'the tiny budget never ran out');
    const o = await same(banner(`tiny-${seq++}`, TINY_SIZE));
    assert.deepEqual({ status: o.status, reason: o.reason }, { status: 204, reason: 'budget' });
  });
});
