// A worker SIGKILLed while it answers notices (~300 a second: win, bill, loss, impression and click,
// each about a bid of its own), three times in a row: every notice whose answer reached the caller
// has its record in Redis once the next worker has started and recovered the dead one's crash
// journal, as every answered bid request has (test/log/log-crash.test.ts).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bidRequest, type Bidder, readRedisLog, ROOT, sleep, spawnBidder, until } from '../log/support';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const RATE = 300;
const FLUSH_MS = 2_000;
const ROUNDS = 3;
const EVENTS = ['win', 'bill', 'loss', 'imp', 'click'] as const;

interface Notice {
  event: (typeof EVENTS)[number];
  bid: string;
  /** Path and query, to be sent to whichever worker is up. */
  url: string;
}

function get(agent: http.Agent, url: string, body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const r = http.request(url, { method: body === undefined ? 'GET' : 'POST', agent, headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', () => resolve({ status: 0, body: '' }));
      res.on('aborted', () => resolve({ status: 0, body: '' }));
    });
    r.setTimeout(5_000, () => r.destroy(new Error('no answer')));
    r.on('error', () => resolve({ status: 0, body: '' }));
    r.end(body);
  });
}

const local = (url: string): string => {
  const u = new URL(url.split('${AUCTION_PRICE}').join('0.01').split('${AUCTION_CURRENCY}').join('USD').split('${AUCTION_LOSS}').join('102'));
  return `${u.pathname}${u.search}`;
};

/** `n` bids from `b`, each turned into the notice of one event (in turn: win, bill, loss, imp, click). */
async function notices(b: Bidder, prefix: string, n: number): Promise<Notice[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const out: Notice[] = [];
  for (let i = 0; out.length < n && i < 3 * n; i++) {
    const r = await get(agent, `${b.url}/openrtb2/bid`, bidRequest(`${prefix}-${i}`));
    if (r.status !== 200) continue;
    const bid = (JSON.parse(r.body) as { seatbid: Array<{ bid: Array<{ id: string; adm: string; nurl: string; burl: string; lurl: string }> }> }).seatbid[0].bid[0];
    const event = EVENTS[out.length % EVENTS.length];
    let url: string | undefined;
    if (event === 'win') url = bid.nurl;
    else if (event === 'bill') url = bid.burl;
    else if (event === 'loss') url = bid.lurl;
    else if (event === 'imp') url = /<img src='([^']+\/t\/imp\?[^']+)'/.exec(bid.adm)?.[1]?.replace(/&amp;/g, '&');
    else url = /<a href='([^']+\/t\/click\?[^']+)'/.exec(bid.adm)?.[1]?.replace(/&amp;/g, '&');
    if (url === undefined) continue;
    out.push({ event, bid: bid.id, url: local(url) });
  }
  agent.destroy();
  assert.equal(out.length, n, `only ${out.length} notices made of ${n}`);
  return out;
}

/** Sends the notices to `url` at RATE a second until `stopAt` resolves; returns those answered. */
async function load(url: string, list: Notice[], stopAt: Promise<void>): Promise<{ answered: Notice[]; sent: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const ok: Notice[] = [];
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  void stopAt.then(() => (stopped = true));
  const t0 = performance.now();
  let sent = 0;
  while (!stopped && sent < list.length) {
    const due = Math.floor(((performance.now() - t0) / 1000) * RATE);
    while (sent < due && sent < list.length && !stopped) {
      const n = list[sent++];
      const p: Promise<void> = get(agent, `${url}${n.url}`).then((r) => {
        if (r.status === 204 || r.status === 200 || r.status === 302) ok.push(n);
        inFlight.delete(p);
      });
      inFlight.add(p);
    }
    await sleep(5);
  }
  await Promise.all(inFlight);
  agent.destroy();
  return { answered: ok, sent };
}

describe('a worker killed while answering notices loses no answered notice (SIGKILL, node dist/main.js)', () => {
  let redis: TestRedis;
  let dir: string;
  const live: Bidder[] = [];

  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'notice-crash-'));
  });
  after(async () => {
    for (const b of live) await b.stop('SIGKILL');
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`${ROUNDS} kills at ~${RATE} notices/s: every answered notice has its record`, { timeout: 180_000 }, async (t) => {
    const key = 'notice-crash';
    const env = {
      REDIS_URL: redis.url,
      LOG_REDIS_KEY: key,
      LOG_SPILL_DIR: dir,
      LOG_FLUSH_INTERVAL_MS: String(FLUSH_MS),
      CAMPAIGNS_FILE: path.join(ROOT, 'data', 'campaigns.demo.json'),
    };
    const start = async (n: number): Promise<Bidder> => {
      const b = await spawnBidder({ ...env, WORKER_ID: `w${n}` }, await freePort());
      live.push(b);
      return b;
    };
    let victim = await start(0);
    for (let round = 0; round < ROUNDS; round++) {
      const list = await notices(victim, `r${round}`, 2 * RATE);
      // Past a first flush of the notices, at a random point of the flush interval.
      const killAfter = 300 + Math.floor(Math.random() * FLUSH_MS);
      const v = victim;
      const killed = sleep(killAfter).then(() => {
        v.proc.kill('SIGKILL');
      });
      const r = await load(v.url, list, killed);
      await v.exited;
      live.splice(live.indexOf(v), 1);
      t.diagnostic(`round ${round}: killed after ${killAfter} ms; ${r.sent} notices sent, ${r.answered.length} answered`);
      assert.ok(r.answered.length >= 50, `round ${round}: only ${r.answered.length} answered of ${r.sent}`);

      victim = await start(round + 1);
      let missing: Notice[] = [];
      try {
        await until(
          `round ${round}: the records of ${r.answered.length} answered notices in Redis`,
          async () => {
            const { records } = await readRedisLog(redis.url, key);
            const seen = new Set<string>();
            for (const x of records) if (typeof x.bid === 'string') seen.add(`${x.type} ${x.bid}`);
            missing = r.answered.filter((n) => !seen.has(`${n.event} ${n.bid}`));
            return missing.length === 0;
          },
          15_000,
        );
      } catch {
        const by = new Map<string, number>();
        for (const n of missing) by.set(n.event, (by.get(n.event) ?? 0) + 1);
        assert.fail(`round ${round} (killed ${killAfter} ms after its start, ${r.answered.length} answered): ${missing.length} answered notices lack a record in Redis (${[...by].map(([e, k]) => `${e} ${k}`).join(', ')})`);
      }
    }
    assert.equal(await victim.stop('SIGTERM'), 0, victim.output());
    live.splice(live.indexOf(victim), 1);
  });
});
