/**
 * Overload: a bid request that waited longer than its budget (min(SHED_MAX_WAIT_MS, tmax −
 * SHED_MARGIN_MS)) before the bidder could look at it gets a fast no-bid (204, x-bidder-shed: 1),
 * counted and logged with reason `shed`, instead of a bid too late to count.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BiddingService } from '../../src/bidding/bidding.service';
import { readRedisLog, spawnBidder, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const site = { domain: 'a.example', publisher: { name: 'A' } };
const body = (id: string, tmax?: number): Buffer =>
  Buffer.from(JSON.stringify({ id, imp: [{ id: '1', banner: { w: 300, h: 250 } }], site, ...(tmax === undefined ? {} : { tmax }) }));

describe('the shedding budget', () => {
  let t: TestApp;
  let off: TestApp;
  before(async () => {
    t = await startTestApp({ SHED_MAX_WAIT_MS: '200', SHED_MARGIN_MS: '30' });
    off = await startTestApp({ SHED_MAX_WAIT_MS: '0' });
  });
  after(async () => {
    await t.close();
    await off.close();
  });
  const cases: Array<{ name: string; tmax?: number; waited: number; shed: boolean }> = [
    { name: 'no tmax: the cap', waited: 150, shed: false },
    { name: 'no tmax, over the cap', waited: 250, shed: true },
    { name: 'tmax 100 leaves 70 ms: 60 is in time', tmax: 100, waited: 60, shed: false },
    { name: 'tmax 100 leaves 70 ms: 80 is late', tmax: 100, waited: 80, shed: true },
    { name: 'tmax 1000: still the cap', tmax: 1000, waited: 250, shed: true },
    { name: 'tmax 20 (under the margin): 10 ms at least', tmax: 20, waited: 5, shed: false },
    { name: 'tmax 20 (under the margin): past 10 ms', tmax: 20, waited: 15, shed: true },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const now = performance.now();
      const a = t.app.get(BiddingService).bid(body(`b-${c.name}`, c.tmax), now, now - c.waited);
      assert.equal(a.status === 204 && a.reason === 'shed', c.shed, `status ${a.status} reason ${a.reason}`);
      if (!c.shed) assert.equal(a.status, 200);
    });
  }
  it('SHED_MAX_WAIT_MS=0 never sheds', () => {
    const now = performance.now();
    assert.equal(off.app.get(BiddingService).bid(body('never', 50), now, now - 5_000).status, 200);
  });
});

/** POSTs bid requests to `url` over `agent`: the status, whether it was shed, and how long it took. */
function poster(url: string, agent: http.Agent) {
  return (id: string, tmax: number) =>
    new Promise<{ status: number; shed: boolean; ms: number }>((resolve, reject) => {
      const t0 = performance.now();
      const r = http.request(url, { method: 'POST', agent }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, shed: res.headers['x-bidder-shed'] === '1', ms: performance.now() - t0 }));
      });
      r.on('error', reject);
      r.end(body(id, tmax));
    });
}

describe('a worker whose event loop is held', () => {
  let redis: TestRedis;
  let dir: string;
  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shed-'));
  });
  after(async () => {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers the requests that waited through it with the fast no-bid, logged with reason shed, and bids again after', async () => {
    // Test-only: SIGUSR2 holds the event loop for 400 ms, as a long GC pause or a burst past capacity would.
    const preload = path.join(dir, 'hold.js');
    fs.writeFileSync(preload, "process.on('SIGUSR2', () => { const end = Date.now() + 400; while (Date.now() < end); });\n");
    const bidder = await spawnBidder(
      { REDIS_URL: redis.url, LOG_REDIS_KEY: 'shed-log', LOG_FLUSH_INTERVAL_MS: '100', LOG_SPILL_DIR: path.join(dir, 'spill') },
      await freePort(),
      preload,
    );
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
      const post = poster(`${bidder.url}/openrtb2/bid`, agent);
      // Rounds of 10 until one is bid on whole; on a loaded machine a round may wait past the
      // shedding budget (shed: a 204 said apart), or come before the worker is ready to bid (a 204).
      // Returns how many were shed.
      let round = 0;
      const untilBids = async (what: string): Promise<number> => {
        let shed = 0;
        await until(what, async () => {
          const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`${what}-${round}-${i}`, 100)));
          round++;
          for (const a of answers) assert.ok(a.status === 200 || a.status === 204, `a bid or a no-bid, not ${a.status}`);
          shed += answers.filter((a) => a.shed).length;
          return answers.every((a) => a.status === 200);
        }, 10_000);
        return shed;
      };
      // Warm connections, then hold the loop and send while it is held.
      const shedWarm = await untilBids('warm');
      bidder.proc.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 30));
      const held = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`held-${i}`, 100)));
      for (const a of held) {
        assert.equal(a.status, 204);
        assert.ok(a.shed, 'said apart from a no-bid');
      }
      // Then it bids again.
      const shedAfter = await untilBids('after');
      agent.destroy();
      const records: Array<{ type: string; id: string; reason?: string }> = [];
      await until('logged', async () => {
        records.splice(0, records.length, ...((await readRedisLog(redis.url, 'shed-log')).records as typeof records));
        return records.filter((r) => r.type === 'response').length >= 30;
      });
      for (let i = 0; i < 10; i++) {
        assert.equal(records.filter((r) => r.type === 'request' && r.id === `held-${i}`).length, 1);
        const res = records.filter((r) => r.type === 'response' && r.id === `held-${i}`);
        assert.deepEqual(
          res.map((r) => r.reason),
          ['shed'],
        );
      }
      const admin = /"admin":"([^"]+)"/.exec(bidder.output())?.[1];
      assert.ok(admin, 'the listening line names the admin port');
      const m = await request(`${admin}/metrics`, { method: 'GET' });
      assert.match(m.body.toString(), new RegExp(`bidder_bid_requests_total\\{[^}]*outcome="shed"[^}]*\\} ${10 + shedWarm + shedAfter}\\n`));
    } finally {
      await bidder.stop('SIGTERM');
    }
  });

  // A turn after an idle loop starts when the thread gets a CPU: here a real-time process holds the
  // worker's only core for 400 ms while requests arrive. The loop saw no stall (it was idle in
  // epoll_wait, then waited in the run queue), so before the turn clock read the run queue these
  // requests were answered with bids 400 ms late.
  it('counts the wait for a CPU after an idle loop: requests that came while another process held its core are shed', async (t) => {
    // chrt must be allowed to make a real-time process (root, or CAP_SYS_NICE).
    const tools = process.platform === 'linux' && spawnSync('taskset', ['-c', '0', 'chrt', '-f', '1', 'true']).status === 0;
    // This process's own CPU mask, to put back after (the runner may itself be pinned); CPUs 0 and 1 must be in it.
    const own = tools ? /mask:\s*([0-9a-f]+)/.exec(spawnSync('taskset', ['-p', String(process.pid)], { encoding: 'utf8' }).stdout)?.[1] : undefined;
    if (own === undefined || (parseInt(own, 16) & 3) !== 3) {
      t.skip('needs Linux, CPUs 0 and 1, taskset and a permitted chrt -f');
      return;
    }
    const bidder = await spawnBidder({ REDIS_URL: redis.url, LOG_REDIS_KEY: 'shed-rq-log', LOG_FLUSH_INTERVAL_MS: '100', LOG_SPILL_DIR: path.join(dir, 'spill-rq') }, await freePort());
    const pin = (pid: number, mask: string) => assert.equal(spawnSync('taskset', ['-a', '-p', mask, String(pid)]).status, 0, `taskset ${mask} ${pid}`);
    try {
      pin(bidder.proc.pid!, '2'); // the worker on CPU 1
      pin(process.pid, '1'); // this test (the client) on CPU 0
      const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
      const post = poster(`${bidder.url}/openrtb2/bid`, agent);
      for (const a of await Promise.all(Array.from({ length: 10 }, (_, i) => post(`warm-${i}`, 100)))) assert.equal(a.status, 200, `warm-up: ${a.status}${a.shed ? ' (shed)' : ''} after ${a.ms.toFixed(0)} ms`);
      await new Promise((r) => setTimeout(r, 50)); // the worker's loop goes idle
      const hog = spawn('chrt', ['-f', '50', 'taskset', '-c', '1', process.execPath, '-e', "process.stdout.write('go\\n'); const end = Date.now() + 400; while (Date.now() < end);"], { stdio: ['ignore', 'pipe', 'inherit'] });
      const hogDone = new Promise((r) => hog.once('exit', r));
      await new Promise<void>((resolve, reject) => {
        hog.stdout.once('data', () => resolve());
        hog.once('error', reject);
        hog.once('exit', (code) => reject(new Error(`the real-time process exited (${code}) before it began`)));
      });
      await new Promise((r) => setTimeout(r, 30));
      const held = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`rq-${i}`, 100)));
      await hogDone;
      for (const a of held) {
        assert.ok(a.ms > 200, `waited ${a.ms.toFixed(0)} ms: the core was held`);
        assert.equal(a.status, 204, `answered ${a.status} after ${a.ms.toFixed(0)} ms`);
        assert.ok(a.shed, 'shed, not a no-bid');
      }
      const afterwards = await Promise.all(Array.from({ length: 10 }, (_, i) => post(`rq-after-${i}`, 100)));
      for (const a of afterwards) assert.equal(a.status, 200, `afterwards: ${a.status}${a.shed ? ' (shed)' : ''} after ${a.ms.toFixed(0)} ms`);
      agent.destroy();
    } finally {
      pin(process.pid, own);
      await bidder.stop('SIGTERM');
    }
  });
});
