/**
 * Which segment a shaded bid and a notice reach (unit test of ShadingService, no Redis: its sync is
 * not called). Bids find their segment through an index by publisher and a small integer, filled
 * from the segments by key; these tests hold the two ways to the same segment: a segment made by key
 * (as the sync makes the other workers' segments) is the one bids use, a notice teaches the segment
 * its bid came from, and what has no small integer (an odd device type) still reaches its segment by key.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import type { Rates } from '../../src/currency/rates';
import { Clock } from '../../src/delivery/clock';
import type { DeliveryRedis } from '../../src/delivery/delivery-redis';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { RedisService } from '../../src/redis/redis.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate, Match } from '../../src/targeting/types';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 28, 9, 30);

const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;
const video = { id: 'cr-video', campaignId: 'c1', price: 2, banner: null, video: { w: 640, h: 480 } } as unknown as Candidate;

function service(): ShadingService {
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 100_000, shadingHalfLifeMs: 600_000 } as unknown as Config;
  const byId = new Map([banner, video].map((c) => [(c as unknown as { id: string }).id, c]));
  const store = { current: () => ({ get: (crid: string) => byId.get(crid) }) } as unknown as CampaignStore;
  const random = new Random();
  random.next = () => 0.5;
  return new ShadingService(config, null as unknown as RedisService, null as unknown as DeliveryRedis, store, random, new Clock());
}

const rates = { convert: (v: number) => v } as unknown as Rates;
const imp = { bidfloor: 0.1, bidfloorcur: 'USD' } as unknown as Imp;
const req = (publisher: string, deviceType: number): BidRequest => ({ at: 1, publisher, deviceType }) as unknown as BidRequest;
const match = (c: Candidate): Match => ({ dealId: null, price: 2, candidate: c }) as unknown as Match;
const noticed = (publisher: string, crid: string, i: number): NoticedBid => ({ bidId: `b-${crid}-${i}`, cid: 'c1', crid, price: 1, cur: 'USD', ts: NOW, publisher });

interface SegmentState {
  weight: number;
  readonly cdf: Float64Array;
}
/** The segments ShadingService keeps by key (a private field: what the sync reads and writes). */
const segments = (s: ShadingService): Map<string, SegmentState> => (s as unknown as { segments: Map<string, SegmentState> }).segments;
/** The segment of `key`, made when missing, as the sync gets the other workers' segments (a private method). */
const segmentByKey = (s: ShadingService, key: string): SegmentState => (s as unknown as { segment(k: string): SegmentState }).segment(key);
const hourOf = (ms: number): number => new Date(ms).getUTCHours();

/** Makes a segment bid the floor: an estimate of its own in which every price wins. */
function winsAtAnyPrice(seg: SegmentState): void {
  seg.weight = 1;
  seg.cdf.fill(1);
}

describe('shading segments', () => {
  it('a notice teaches the segment its bid was priced in, and no other', () => {
    const s = service();
    const bids: Array<[string, Candidate, number, number]> = [
      ['pub-a', banner, 4, NOW],
      ['pub-a', video, 4, NOW],
      ['pub-a', banner, 5, NOW],
      ['pub-a', banner, 4, NOW + HOUR],
      ['pub-b', banner, 4, NOW],
    ];
    for (const [publisher, c, deviceType, at] of bids) s.price(req(publisher, deviceType), imp, match(c), 'USD', rates, at);
    assert.equal(segments(s).size, 5);
    for (let i = 0; i < 300; i++) s.learn('win', noticed('pub-a', 'cr-banner', i), 1, 0.35, 4, null);
    s.tick();
    assert.equal(segments(s).size, 5, 'the notices reached a segment that the bids had made');
    const taught = [...segments(s)].filter(([, seg]) => seg.weight > 0).map(([key]) => key);
    assert.deepEqual(taught, [segmentKey('pub-a', '300x250', 4, hourOf(NOW))]);
  });

  it('a segment made by its key first (as the sync makes the other workers\' segments) is the one bids use', () => {
    const prior = service().price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW);
    assert.ok(prior > 0.5, `the prior's bid ${prior}`);
    const s = service();
    winsAtAnyPrice(segmentByKey(s, segmentKey('pub-c', '300x250', 2, hourOf(NOW))));
    assert.equal(s.price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW), 0.1);
    // Again, now through the index the first bid filled; the other sizes and device types are not it.
    assert.equal(s.price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW), 0.1);
    assert.equal(s.price(req('pub-c', 2), imp, match(video), 'USD', rates, NOW), prior);
    assert.equal(s.price(req('pub-c', 3), imp, match(banner), 'USD', rates, NOW), prior);
  });

  it('ad sizes given a small integer are bounded (40,000); further sizes go by key', () => {
    const s = service();
    for (let i = 0; i < 40_010; i++) {
      const c = { id: `cr-${i}`, campaignId: 'c1', price: 2, banner: { w: 1 + (i % 1000), h: 1 + Math.floor(i / 1000) }, video: null } as unknown as Candidate;
      s.price(req('pub-e', 2), imp, match(c), 'USD', rates, NOW);
    }
    assert.equal((s as unknown as { sizeIds: Map<string, number> }).sizeIds.size, 40_000);
    // Segments stay bounded too (MAX_SEGMENTS): the later sizes bid from the pool.
    assert.equal(segments(s).size, 20_000);
  });

  it('a device type outside 0-1023 or not an integer is a segment of its own, reached by key', () => {
    const s = service();
    const prior = s.price(req('pub-d', 2.5), imp, match(banner), 'USD', rates, NOW);
    const odd = segments(s).get(segmentKey('pub-d', '300x250', 2.5, hourOf(NOW)));
    assert.ok(odd !== undefined, 'the bid made its segment by key');
    winsAtAnyPrice(odd);
    assert.equal(s.price(req('pub-d', 2.5), imp, match(banner), 'USD', rates, NOW), 0.1);
    assert.equal(s.price(req('pub-d', 5000), imp, match(banner), 'USD', rates, NOW), prior);
    assert.equal(s.price(req('pub-d', 2), imp, match(banner), 'USD', rates, NOW), prior);
    winsAtAnyPrice(segmentByKey(s, segmentKey('pub-d', '300x250', 5000, hourOf(NOW))));
    assert.equal(s.price(req('pub-d', 5000), imp, match(banner), 'USD', rates, NOW), 0.1);
  });
});
