/**
 * Sharing what shading learned between workers, with a real Redis: each worker writes only the
 * segments that learned something since its last sync (a delta), at most MAX_SHARED_BYTES per
 * exchange, and reads the others' state in slices of the event loop, making no segment (a segment
 * is made when a bid or notice first needs it). Measured here with 12,000 segments: the bytes one
 * worker shares, the fields a sync writes after a few notices, the longest turn of the event loop a
 * sync takes on the reading worker, its first syncs included, and what a bid that makes a shared
 * segment costs.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as v8 from 'node:v8';
import Redis from 'ioredis';
import type { Config } from '../../src/config/config';
import { Clock } from '../../src/delivery/clock';
import type { DeliveryRedis } from '../../src/delivery/delivery-redis';
import { WORKERS_KEY } from '../../src/delivery/keys';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { RedisShadingRepository } from '../../src/delivery/shading.repository';
import { floorBucket, MAX_SHARED_BYTES, segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { RedisService } from '../../src/redis/redis.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Rates } from '../../src/currency/rates';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { Candidate, Match } from '../../src/targeting/types';
import { startTestRedis, type TestRedis } from '../support/redis';

const NOW = Date.UTC(2026, 10, 28, 9, 30);
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;
const FLOORS = [0.1, 0.5, 1.5];

let redis: TestRedis;
const clients: Redis[] = [];

before(async () => {
  redis = await startTestRedis();
});

after(async () => {
  for (const c of clients) c.disconnect();
  await redis?.stop();
});

function worker(id: string): { s: ShadingService; client: Redis; fields: number[] } {
  const client = new Redis(redis.url);
  clients.push(client);
  const fields: number[] = [];
  // The Redis repository, counting the fields each sync writes.
  const repo = new RedisShadingRepository({ isReady: () => true } as unknown as RedisService, { client } as unknown as DeliveryRedis);
  const publish = repo.publish.bind(repo);
  repo.publish = (member, values, ttlMs) => {
    if (Object.keys(values).length > 0) fields.push(Object.keys(values).length);
    return publish(member, values, ttlMs);
  };
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: id, shadingSyncMs: 10_000, shadingLearnPerS: 1_000_000, shadingHalfLifeMs: 600_000 } as unknown as Config;
  const store = { current: () => ({ get: () => banner }) } as unknown as CampaignStore;
  const clock = new Clock();
  clock.now = () => NOW;
  const s = new ShadingService(config, repo, store, new Random(), clock);
  return { s, client, fields };
}

/** JS heap bytes allocated while `fn` runs: the heap's growth plus what every GC in between freed (v8.GCProfiler). */
/** Ticks until every dirty segment is estimated (a tick spends at most TICK_BUDGET_MS). */
function drain(s: ShadingService): void {
  for (let i = 0; i < 10_000 && s.backlog() > 0; i++) s.tick();
}

async function heapBytesOf(fn: () => Promise<void>): Promise<number> {
  const profiler = new v8.GCProfiler();
  profiler.start();
  const start = v8.getHeapStatistics().used_heap_size;
  await fn();
  const end = v8.getHeapStatistics().used_heap_size;
  let freed = 0;
  for (const g of profiler.stop()?.statistics ?? []) freed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize;
  return end - start + freed;
}

let seq = 0;
const noticed = (publisher: string): NoticedBid => ({ bidId: `b-${seq++}`, cid: 'c1', crid: 'cr-banner', price: 1.5, cur: 'USD', ts: NOW, publisher, source: 0 });

describe('shading sync', () => {
  it('12,000 segments: at most 1 MB shared per exchange, deltas after, no turn of the event loop above 10 ms', { timeout: 300_000 }, async () => {
    const a = worker('a');
    const b = worker('b');
    const members = ['h:a:' + process.pid, 'h:b:' + process.pid];
    await a.client.zadd(WORKERS_KEY, 1, members[0], 1, members[1]);
    // 1,000 publishers × 4 device types × 3 floors, four prices to win each.
    for (let p = 0; p < 1000; p++) {
      for (let d = 1; d <= 4; d++) {
        for (const f of FLOORS) for (let i = 0; i < 4; i++) a.s.learn('win', noticed(`pub-${p}`), 1.5, f + 0.05 * (i + d), d + 16 * floorBucket(f), null);
      }
    }
    drain(a.s);
    await a.s.sync();
    const shared = await a.client.hgetall(`bidder:shade:v2:${members[0]}`);
    const bytes = Object.entries(shared).reduce((n, [k, v]) => n + k.length + v.length, 0);
    console.log(`shared: ${Object.keys(shared).length} segments, ${(bytes / 1e6).toFixed(3)} MB; not shared: ${a.s.stats.unshared}; longest turn writing ${a.s.stats.syncSliceMaxMs.toFixed(2)} ms`);
    assert.ok(bytes <= MAX_SHARED_BYTES, `${bytes} bytes shared`);
    assert.ok(Object.keys(shared).length > 1000, `${Object.keys(shared).length} segments shared`);

    // The first reads make no segment on b: what a shares of segments b has not made yet is kept as
    // text until a bid or notice of b needs them (making 11,000 segments at once, about 10 KB each,
    // took 19-51 ms turns of garbage collection).
    for (let i = 0; i < 2; i++) {
      await b.s.sync();
      b.s.tick();
    }
    const first = b.s.stats.syncSliceMaxMs;
    assert.ok(first < 10, `the reading worker's longest turn in its first two syncs: ${first} ms`);
    b.s.stats.syncSliceMaxMs = 0;
    // A bid of b on a segment a shared: the segment is made then, with a's counts (once per segment, on the bid path).
    const rates = { convert: (v: number) => v } as unknown as Rates;
    const match = { dealId: null, price: 2, candidate: banner } as unknown as Match;
    // As requests come: one bid a turn of the event loop.
    const times: number[] = [];
    for (let p = 0; p < 1000; p++) {
      for (let d = 1; d <= 2; d++) {
        // CPU time, as the ticks below: on a machine running other tests, wall clock also counts the
        // time another process held the core (a 16.7 ms "bid" seen in CI was that).
        const t0 = process.cpuUsage();
        b.s.price({ at: 1, publisher: `pub-${p}`, deviceType: d, source: 0 } as unknown as BidRequest, { bidfloor: 0.5, bidfloorcur: 'USD' } as unknown as Imp, match, 'USD', rates, NOW);
        const u = process.cpuUsage(t0);
        times.push((u.user + u.system) / 1000);
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    times.sort((x, y) => x - y);
    const at = (q: number): number => times[Math.min(times.length - 1, Math.floor(q * times.length))];
    const longestBid = times[times.length - 1];
    console.log(`bids making a shared segment: ${times.length}, median ${(1000 * at(0.5)).toFixed(1)} µs, p99 ${(1000 * at(0.99)).toFixed(1)} µs, longest ${longestBid.toFixed(2)} ms (CPU)`);
    for (let i = 0; i < 10; i++) b.s.tick();
    for (let i = 0; i < 2; i++) {
      await b.s.sync();
      b.s.tick();
    }
    // The segments whose shared counts changed are updated at most 300 a tick, within TICK_BUDGET_MS of wall time.
    let longestTick = 0;
    for (let i = 0; i < 45; i++) {
      const t0 = process.cpuUsage();
      b.s.tick();
      const u = process.cpuUsage(t0);
      longestTick = Math.max(longestTick, (u.user + u.system) / 1000);
    }
    console.log(`reading: longest turn ${first.toFixed(2)} ms (CPU) in the first two syncs, ${b.s.stats.syncSliceMaxMs.toFixed(2)} ms in the next two; longest tick after ${longestTick.toFixed(2)} ms`);
    assert.ok(longestBid < 10, `longest bid making a segment: ${longestBid} ms`);
    assert.ok(longestTick < 10, `longest tick ${longestTick} ms`);
    // After 2,000 segments were made on b, a mark-compact of this process's heap (two workers'
    // 14,000 segments in one process) can land in a later sync's slice and count in its CPU: 22 ms
    // seen in 1 of 3 quiet runs, 2-5 ms otherwise. The first syncs' bound above is the stall the
    // bidder must not have; this one catches a sync whose own work grew.
    assert.ok(b.s.stats.syncSliceMaxMs < 30, `the reading worker's longest turn: ${b.s.stats.syncSliceMaxMs} ms`);
    // What a learned, b prices from: a's segment of pub-7, device 2, floor 0.5 (prices to win 0.65-0.8).
    const key = segmentKey(0, 'pub-7', '300x250', 2, floorBucket(0.5));
    assert.notEqual(b.s.cdfOf(key), b.s.cdfOf('none'), 'b prices that segment from a\'s counts, not from the pool');

    // A few notices later, a's next sync writes only what changed: the segment and its parents (the
    // pool, bounded per exchange, has long stopped learning from the only exchange), and the time it wrote.
    a.fields.length = 0;
    for (let i = 0; i < 5; i++) a.s.learn('win', noticed('pub-7'), 1.5, 0.7, 2 + 16 * floorBucket(0.5), null);
    drain(a.s);
    await a.s.sync();
    assert.deepEqual(a.fields, [5], `fields written: ${a.fields.join(', ')}`);

    // Later syncs of the reading worker, each after a shared 50 publishers' notices: the JS heap bytes
    // one allocates (reading a's 11,002 fields; 18.7 MB when each sync built its map of what it kept
    // as text anew and decoded through Buffers; the replies' strings are most of what is left, and
    // what it keeps of them is only what changed).
    const allocated: number[] = [];
    b.s.stats.syncSliceMaxMs = 0;
    for (let n = 0; n < 5; n++) {
      for (let p = 0; p < 50; p++) a.s.learn('win', noticed(`pub-${n * 50 + p}`), 1.5, 0.7, 2 + 16 * floorBucket(0.5), null);
      drain(a.s);
      await a.s.sync();
      allocated.push(await heapBytesOf(() => b.s.sync()));
      for (let i = 0; i < 45; i++) b.s.tick();
    }
    allocated.sort((x, y) => x - y);
    console.log(`later syncs of the reading worker: ${allocated.map((x) => (x / 1e6).toFixed(2)).join(', ')} MB allocated each; longest turn ${b.s.stats.syncSliceMaxMs.toFixed(2)} ms (CPU)`);
    assert.ok(allocated[2] < 10e6, `median ${allocated[2]} bytes allocated by a later sync`);
  });
});
