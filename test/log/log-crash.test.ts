// A worker SIGKILLed under load (~650 bid requests/s) at a random point of its flush interval, five
// times in a row: every request whose answer reached the client has its request and response
// records in Redis once the next worker has started (it recovers the dead one's journal), and no
// record is there twice. Each worker of the chain recovers the one before it, then is killed itself.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';
import { bidRequest, type Bidder, readRedisLog, ROOT, sleep, spawnBidder, until } from './support';

const RATE = 650;
const FLUSH_MS = 2_000;
const ROUNDS = 5;

/** POSTs one bid request; resolves true once the whole answer arrived, false when the connection failed. */
function answered(agent: http.Agent, url: string, id: string): Promise<boolean> {
  const body = bidRequest(id);
  return new Promise((resolve) => {
    const r = http.request(
      `${url}/openrtb2/bid`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.on('data', () => undefined);
        res.on('end', () => resolve(res.statusCode === 200 || res.statusCode === 204));
        res.on('error', () => resolve(false));
        res.on('aborted', () => resolve(false));
      },
    );
    r.setTimeout(5_000, () => r.destroy(new Error('no answer')));
    r.on('error', () => resolve(false));
    r.end(body);
  });
}

/** Sends RATE requests/s to `url` until `stop()` resolves; returns the ids answered and how many were sent. */
async function load(url: string, prefix: string, stopAt: Promise<void>): Promise<{ answered: string[]; sent: number; seconds: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const ok: string[] = [];
  const inFlight = new Set<Promise<void>>();
  let stopped = false;
  void stopAt.then(() => (stopped = true));
  const t0 = performance.now();
  let sent = 0;
  while (!stopped) {
    const due = Math.floor(((performance.now() - t0) / 1000) * RATE);
    while (sent < due && inFlight.size < 256 && !stopped) {
      const id = `${prefix}-${sent++}`;
      const p: Promise<void> = answered(agent, url, id).then((yes) => {
        if (yes) ok.push(id);
        inFlight.delete(p);
      });
      inFlight.add(p);
    }
    await sleep(5);
  }
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all(inFlight);
  agent.destroy();
  return { answered: ok, sent, seconds };
}

describe('a worker killed under load loses no answered request (SIGKILL, node dist/main.js)', () => {
  let redis: TestRedis;
  let dir: string;
  const live: Bidder[] = [];

  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidlog-crash-'));
  });
  after(async () => {
    for (const b of live) await b.stop('SIGKILL');
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`${ROUNDS} kills at ~${RATE} req/s: every answered request has both records, none twice`, { timeout: 120_000 }, async (t) => {
    const key = 'crash';
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
    const all: string[] = [];
    let victim = await start(0);
    for (let round = 0; round < ROUNDS; round++) {
      // Past a first flush, then a random point of the interval.
      const killAfter = FLUSH_MS + Math.floor(Math.random() * FLUSH_MS);
      const v = victim;
      const killed = sleep(killAfter).then(() => {
        v.proc.kill('SIGKILL');
      });
      const r = await load(v.url, `r${round}`, killed);
      await v.exited;
      live.splice(live.indexOf(v), 1);
      t.diagnostic(`round ${round}: killed after ${killAfter} ms; ${r.sent} sent (${(r.sent / r.seconds).toFixed(0)}/s), ${r.answered.length} answered`);
      assert.ok(r.answered.length >= 100, `round ${round}: only ${r.answered.length} answered of ${r.sent} in ${r.seconds.toFixed(1)} s`);
      all.push(...r.answered);

      // The next worker starts and recovers what the dead one answered.
      victim = await start(round + 1);
      const want = new Set(r.answered);
      let missing = want.size;
      try {
        await until(
          `round ${round}: the records of ${want.size} answered requests in Redis`,
          async () => {
            const { records } = await readRedisLog(redis.url, key);
            const seen = new Map<string, number>();
            for (const x of records) if (want.has(x.id) && (x.type === 'request' || x.type === 'response')) seen.set(x.id, (seen.get(x.id) ?? 0) + 1);
            missing = [...want].filter((id) => seen.get(id) !== 2).length;
            return missing === 0;
          },
          15_000,
        );
      } catch {
        assert.fail(`round ${round} (killed ${killAfter} ms after its start, ${r.answered.length} answered): ${missing} answered requests lack a record in Redis`);
      }
    }
    assert.equal(await victim.stop('SIGTERM'), 0, victim.output());
    live.splice(live.indexOf(victim), 1);
    // Recovered segments are gone, and a graceful stop leaves no journal behind.
    assert.deepEqual(fs.readdirSync(path.join(dir, 'journal')), []);

    // Exactly once: no record of the whole run is in the log twice.
    const { records } = await readRedisLog(redis.url, key);
    const count = new Map<string, number>();
    for (const x of records) count.set(`${x.type} ${x.id}`, (count.get(`${x.type} ${x.id}`) ?? 0) + 1);
    const twice = [...count].filter(([, n]) => n > 1);
    assert.deepEqual(twice.slice(0, 5), [], `${twice.length} records logged more than once`);
    for (const id of all) assert.ok(count.get(`request ${id}`) === 1 && count.get(`response ${id}`) === 1, id);
  });
});
