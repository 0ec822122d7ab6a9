/**
 * CapsService above an in-memory caps store shared by two workers (test/support/fake-stores.ts):
 * an impression counted once per bid, the cap reached on one worker known to the other through the
 * news, today's capped pairs loaded at a subscription, a store that is away. On a real Redis:
 * test/tracking/replay.spec.ts and the frequency-cap cases of test/bidding/e2e.spec.ts.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, it } from 'node:test';
import { CapsService } from '../../src/delivery/caps.service';
import { Clock } from '../../src/delivery/clock';
import { utcDay } from '../../src/delivery/utc-day';
import type { RedisBatch } from '../../src/redis/batch';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate } from '../../src/targeting/types';
import { MemoryCapsRepository } from '../support/fake-stores';

const NOW = Date.UTC(2026, 10, 28, 9, 30);
const capped = { id: 'cr1', campaignId: 'c1', price: 1, frequencyCap: { perDay: 2 } } as unknown as Candidate;
const store = { current: () => ({ get: (crid: string) => (crid === 'cr1' ? capped : undefined) }) } as unknown as CampaignStore;
/** The batch sends at the end of the turn. */
const batch = { later: (send: () => Promise<unknown>) => queueMicrotask(() => void send()), drain: () => Promise.resolve() } as unknown as RedisBatch;

const started: CapsService[] = [];

async function worker(db: MemoryCapsRepository): Promise<CapsService> {
  const clock = new Clock();
  clock.now = () => NOW;
  const caps = new CapsService(db, store, clock, batch);
  await caps.onApplicationBootstrap();
  started.push(caps);
  return caps;
}

afterEach(() => {
  for (const c of started.splice(0)) c.onApplicationShutdown();
});

describe('CapsService over an in-memory store', () => {
  it("counts a bid's impression once, and a replay not at all", async () => {
    const caps = await worker(new MemoryCapsRepository());
    assert.equal(await caps.recordImpression('b1', 'u1', 'c1', 'cr1'), true);
    assert.equal(await caps.recordImpression('b1', 'u1', 'c1', 'cr1'), false);
    assert.equal(await caps.recordImpression('b2', '', 'c1', 'cr1'), true, 'no user: counted once all the same');
    assert.equal(await caps.recordImpression('b2', '', 'c1', 'cr1'), false);
    assert.deepEqual([caps.stats.impressions, caps.stats.repeated], [2, 2]);
  });

  it('stops the user on every worker once the cap is reached on one', async () => {
    const db = new MemoryCapsRepository();
    const a = await worker(db);
    const b = await worker(db);
    assert.equal(await a.recordImpression('b1', 'u1', 'c1', 'cr1'), true);
    assert.equal(b.allows('u1', capped), true, 'one of two');
    assert.equal(await a.recordImpression('b2', 'u1', 'c1', 'cr1'), true);
    assert.deepEqual(db.published, [`${utcDay(NOW)}|c1\u0000u1`]);
    assert.equal(a.allows('u1', capped), false);
    assert.equal(b.allows('u1', capped), false, 'told by the news');
    assert.equal(b.allows('u2', capped), true, 'another user');
    assert.equal(b.stats.blockedBids, 1);
  });

  it("loads the day's capped pairs when it subscribes", async () => {
    const db = new MemoryCapsRepository();
    db.capped.set(utcDay(NOW), new Set(['c1\u0000u9']));
    const caps = await worker(db);
    await new Promise((r) => setImmediate(r));
    assert.equal(caps.allows('u9', capped), false);
    assert.equal(caps.stats.reloads, 1);
  });

  it('rejects the impressions of a batch while the store is away, and counts the error', async () => {
    const db = new MemoryCapsRepository();
    const caps = await worker(db);
    db.outage.down = true;
    await assert.rejects(caps.recordImpression('b1', 'u1', 'c1', 'cr1'), /store unavailable/);
    assert.ok(caps.stats.errors >= 1);
    db.outage.down = false;
    assert.equal(await caps.recordImpression('b1', 'u1', 'c1', 'cr1'), true, 'not marked by the failed try');
  });
});
