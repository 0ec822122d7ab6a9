/**
 * Shedding charges a request only with time it really waited: an event-loop stall that happened
 * while the bidder was idle is not charged to a request that arrives after it (issue 23, finding 3).
 * A stall while requests wait is still charged (test/bidding/shed.spec.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm } from '../support/prom';

let t: TestApp;
before(async () => {
  t = await startTestApp({ SHED_MAX_WAIT_MS: '200', SHED_MARGIN_MS: '30' });
});
after(async () => {
  await t.close();
});

const bid = (id: string): Buffer =>
  Buffer.from(JSON.stringify({ id, tmax: 150, imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' } }));

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Holds this process's event loop (the app runs in it), as a long GC pause or a slow callback would. */
function hold(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end);
}

async function shedCount(): Promise<number> {
  const m = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  const s = parseProm(m.body.toString()).get('bidder_bid_requests_total')?.samples ?? [];
  return s.filter((x) => x.labels.outcome === 'shed').reduce((a, x) => a + x.value, 0);
}

describe('a stall while idle', () => {
  it('is not charged to the request that comes after a quiet spell', async () => {
    // Warm: the connection open, the route compiled. The first requests after start may wait past
    // the shed budget on a busy machine (start-up's own work): warm until one bids.
    let warm = 0;
    for (let i = 0; i < 20 && warm !== 200; i++) warm = (await request(`${t.url}/openrtb2/bid`, { body: bid(`warm-${i}`) })).status;
    assert.equal(warm, 200);
    const shedBefore = await shedCount();
    for (const gap of [100, 400, 1_000]) {
      await sleep(50);
      hold(400);
      await sleep(gap);
      const a = await request(`${t.url}/openrtb2/bid`, { body: bid(`after-${gap}`) });
      assert.equal(a.headers['x-bidder-shed'], undefined, `shed after a ${gap} ms quiet spell`);
      assert.equal(a.status, 200);
    }
    assert.equal(await shedCount(), shedBefore);
  });
});
