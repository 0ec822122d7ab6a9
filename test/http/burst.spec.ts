/**
 * A burst read in one event-loop turn (the requests that came while the loop was held): each answer
 * leaves soon after it is ready, not when the whole burst is done. Answers wait for the crash
 * journal's commit, made once per turn; in a long turn the outbox commits and sends every
 * HOLD_MAX_MS (src/http/outbox.ts). Before, the first answers of a burst waited for the last one's.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { spawnBidder } from '../log/support';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const N = 30;
const BID_MS = 3;
const body = (id: string): Buffer =>
  Buffer.from(JSON.stringify({ id, tmax: 1000, imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example', publisher: { name: 'A' } } }));

describe('a burst of bid requests read in one turn', () => {
  let redis: TestRedis;
  let dir: string;
  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'burst-'));
  });
  after(async () => {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers each request as it is done, not all at the end of the turn', async () => {
    // Test-only: SIGUSR2 holds the event loop for 300 ms, and every bid takes at least BID_MS, so
    // that the N requests sent meanwhile are read in one turn that lasts at least N × BID_MS.
    const preload = path.join(dir, 'slow.js');
    fs.writeFileSync(
      preload,
      `const { BiddingService } = require(${JSON.stringify(path.join(ROOT, 'dist', 'bidding', 'bidding.service.js'))});
const bid = BiddingService.prototype.bid;
BiddingService.prototype.bid = function (...args) { const end = performance.now() + ${BID_MS}; while (performance.now() < end); return bid.apply(this, args); };
process.on('SIGUSR2', () => { const end = Date.now() + 300; while (Date.now() < end); });
`,
    );
    const bidder = await spawnBidder(
      { REDIS_URL: redis.url, LOG_REDIS_KEY: 'burst-log', LOG_FLUSH_INTERVAL_MS: '100', LOG_SPILL_DIR: path.join(dir, 'spill'), SHED_MAX_WAIT_MS: '0' },
      await freePort(),
      preload,
    );
    try {
      const agent = new http.Agent({ keepAlive: true, maxSockets: N });
      const post = (id: string) =>
        new Promise<{ status: number; at: number }>((resolve, reject) => {
          const r = http.request(`${bidder.url}/openrtb2/bid`, { method: 'POST', agent }, (res) => {
            const at = performance.now();
            res.resume();
            res.on('end', () => resolve({ status: res.statusCode ?? 0, at }));
          });
          r.on('error', reject);
          r.end(body(id));
        });
      // N connections open and warm, then the loop held while a request comes on each.
      for (const a of await Promise.all(Array.from({ length: N }, (_, i) => post(`warm-${i}`)))) assert.equal(a.status, 200);
      bidder.proc.kill('SIGUSR2');
      await new Promise((r) => setTimeout(r, 50));
      const burst = await Promise.all(Array.from({ length: N }, (_, i) => post(`burst-${i}`)));
      agent.destroy();
      for (const a of burst) assert.equal(a.status, 200);
      const times = burst.map((a) => a.at).sort((x, y) => x - y);
      const spread = times[times.length - 1] - times[0];
      // The turn lasted at least N × BID_MS = 90 ms. Held to its end, every answer would come
      // within a few ms of the others; sent as they are done, the first ones come that much sooner.
      assert.ok(spread >= (N * BID_MS) / 3, `the answers of the burst came within ${spread.toFixed(1)} ms of each other`);
    } finally {
      await bidder.stop('SIGTERM');
    }
  });
});
