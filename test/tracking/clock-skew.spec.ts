/**
 * Hosts whose clocks disagree (`node dist/main.js` processes sharing one Redis, two of them with
 * Date.now shifted by a preload): a bid made on one and billed on another is accepted whichever
 * clock is off, since every worker follows Redis's clock; a worker whose own clock is off by more
 * than the stated skew says so in /health/ready (degraded) and in bidder_clock_offset_seconds.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type Bidder, bidRequest, spawnBidder, until } from '../log/support';
import { request } from '../support/app';
import { parseProm, sum } from '../support/prom';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const SHIFT_MS = 15 * 60_000;

interface Host {
  bidder: Bidder;
  admin: string;
}

let redis: TestRedis;
let dir: string;
const hosts: Record<'right' | 'behind' | 'ahead', Host> = {} as Record<'right' | 'behind' | 'ahead', Host>;

before(async () => {
  redis = await startTestRedis();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-skew-'));
  const preload = path.join(dir, 'clock-shift.js');
  fs.writeFileSync(preload, "const shift = Number(process.env.TEST_CLOCK_SHIFT_MS || 0);\nconst now = Date.now;\nDate.now = () => now() + shift;\n");
  for (const [name, shift] of [['right', 0], ['behind', -SHIFT_MS], ['ahead', SHIFT_MS]] as const) {
    const adminPort = await freePort();
    const bidder = await spawnBidder(
      { REDIS_URL: redis.url, LOG_SPILL_DIR: path.join(dir, `spill-${name}`), LOG_REDIS_KEY: 'skew-log', WORKER_ID: name, ADMIN_PORT: String(adminPort), TEST_CLOCK_SHIFT_MS: String(shift) },
      await freePort(),
      preload,
    );
    hosts[name] = { bidder, admin: `http://127.0.0.1:${adminPort}` };
  }
});

after(async () => {
  for (const h of Object.values(hosts)) await h.bidder.stop('SIGTERM');
  await redis?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

interface Bid { price: number; burl: string; nurl: string }
let seq = 0;
async function bidOn(h: Host): Promise<Bid> {
  const send = () => request(`${h.bidder.url}/openrtb2/bid`, { body: bidRequest(`skew-${seq++}`), headers: { 'content-type': 'application/json' } });
  let r = await send();
  // On a loaded machine a request may wait past the shedding budget: sent again, as an exchange would.
  for (let retry = 0; retry < 5 && r.headers['x-bidder-shed'] === '1'; retry++) r = await send();
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

async function notice(h: Host, url: string, price: number): Promise<{ status: number; body: string }> {
  const u = new URL(url.split('${AUCTION_PRICE}').join(String(price)).split('${AUCTION_CURRENCY}').join('USD'));
  const r = await request(`${h.bidder.url}${u.pathname}${u.search}`, { method: 'GET' });
  return { status: r.status, body: r.body.toString() };
}

async function ready(h: Host): Promise<{ status: string; warnings: string[] }> {
  return JSON.parse((await request(`${h.bidder.url}/health/ready`, { method: 'GET' })).body.toString()) as { status: string; warnings: string[] };
}

describe('clocks of hosts that disagree', () => {
  it('every worker measures its clock against Redis', async () => {
    await until('the three workers to measure their offset', async () => {
      for (const [name, h] of Object.entries(hosts)) {
        const m = parseProm((await request(`${h.admin}/metrics`, { method: 'GET' })).body.toString());
        const offset = sum(m, 'bidder_clock_offset_seconds');
        const want = name === 'behind' ? SHIFT_MS / 1000 : name === 'ahead' ? -SHIFT_MS / 1000 : 0;
        if (Math.abs(offset - want) > 2) return false;
      }
      return true;
    });
  });

  it('a bid made on a host with the right clock is billed on a host 15 minutes behind', async () => {
    const b = await bidOn(hosts.right);
    const win = await notice(hosts.behind, b.nurl, b.price);
    assert.equal(win.status, 204, win.body);
    const bill = await notice(hosts.behind, b.burl, b.price);
    assert.equal(bill.status, 204, bill.body);
  });

  it('a bid made on a host 15 minutes ahead is billed on a host with the right clock, and on one behind', async () => {
    const b = await bidOn(hosts.ahead);
    const bill = await notice(hosts.right, b.burl, b.price);
    assert.equal(bill.status, 204, bill.body);
    const c = await bidOn(hosts.ahead);
    const other = await notice(hosts.behind, c.burl, c.price);
    assert.equal(other.status, 204, other.body);
  });

  it('a worker whose clock is off says so in readiness (degraded, still 200); the right one does not', async () => {
    // Readiness also reflects load (budgets unread for 10 s make a worker not ready on a busy machine):
    // each host is asked until it answers what its clock should make it say.
    for (const name of ['behind', 'ahead'] as const) {
      let last: { status: string; warnings: string[] } | null = null;
      await until(`${name} to say its clock is off`, async () => {
        last = await ready(hosts[name]);
        return last.status === 'degraded' && last.warnings.some((w) => /clock/.test(w) && /Redis/.test(w));
      }).catch((e: Error) => assert.fail(`${e.message}: ${JSON.stringify(last)}`));
      assert.equal((await request(`${hosts[name].bidder.url}/health/ready`, { method: 'GET' })).status, 200);
    }
    const right = await ready(hosts.right);
    assert.ok(!right.warnings.some((w) => /clock/.test(w)), JSON.stringify(right));
  });
});
