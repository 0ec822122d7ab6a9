/**
 * Which segments a shaded bid and a notice reach (unit test of ShadingService, no Redis: its sync is
 * not called). A bid is priced from the finest segment (exchange, publisher, ad size, device type,
 * floor bucket) with enough data, else its parents (publisher at the floor, publisher, exchange,
 * pool); a notice teaches its bid's segment and the parents. Bids find their finest segment through
 * an index by publisher and a number, filled from the segments by key: a segment made by key (as
 * the sync makes the other workers' segments) is the one bids use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import type { Rates } from '../../src/currency/rates';
import { Clock } from '../../src/delivery/clock';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { floorBucket, MIN_WEIGHT, segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate, Match } from '../../src/targeting/types';
import { MemoryShadingRepository } from '../support/fake-stores';

const NOW = Date.UTC(2026, 10, 28, 9, 30);

const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;
const video = { id: 'cr-video', campaignId: 'c1', price: 2, banner: null, video: { w: 640, h: 480 } } as unknown as Candidate;

function service(): ShadingService {
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 100_000, shadingHalfLifeMs: 600_000 } as unknown as Config;
  const byId = new Map([banner, video].map((c) => [(c as unknown as { id: string }).id, c]));
  const store = { current: () => ({ get: (crid: string) => byId.get(crid) }) } as unknown as CampaignStore;
  const random = new Random();
  random.next = () => 0.5;
  return new ShadingService(config, new MemoryShadingRepository(), store, random, new Clock());
}

const rates = { convert: (v: number) => v } as unknown as Rates;
const imp = { bidfloor: 0.1, bidfloorcur: 'USD' } as unknown as Imp;
const impAt = (floor: number): Imp => ({ bidfloor: floor, bidfloorcur: 'USD' }) as unknown as Imp;
const req = (publisher: string, deviceType: number, source = 0): BidRequest => ({ at: 1, publisher, deviceType, source }) as unknown as BidRequest;
const match = (c: Candidate): Match => ({ dealId: null, price: 2, candidate: c }) as unknown as Match;
const noticed = (publisher: string, crid: string, i: number): NoticedBid => ({ bidId: `b-${crid}-${i}`, cid: 'c1', crid, price: 1, cur: 'USD', ts: NOW, publisher });

interface SegmentState {
  weight: number;
  readonly own: { readonly exact: Float32Array };
  readonly cdf: Float32Array;
}
/** The segments ShadingService keeps by key (a private field: what the sync reads and writes). */
const segments = (s: ShadingService): Map<string, SegmentState> => (s as unknown as { segments: Map<string, SegmentState> }).segments;
/** The segment of `key`, made when missing, as the sync gets the other workers' segments (a private method). */
const segmentByKey = (s: ShadingService, key: string): SegmentState => (s as unknown as { segment(k: string): SegmentState }).segment(key);
const FB = floorBucket(0.1);

/** Makes a segment bid the floor: an estimate of its own in which every price wins. */
function winsAtAnyPrice(seg: SegmentState): void {
  seg.weight = MIN_WEIGHT;
  seg.cdf.fill(1);
}

describe('shading segments', () => {
  it('a notice teaches the segment its bid was priced in and its parents, and no other', () => {
    const s = service();
    const bids: Array<[string, Candidate, number, number, number]> = [
      ['pub-a', banner, 4, 0, 0.1],
      ['pub-a', video, 4, 0, 0.1],
      ['pub-a', banner, 5, 0, 0.1],
      ['pub-a', banner, 4, 0, 1.5],
      ['pub-a', banner, 4, 3, 0.1],
      ['pub-b', banner, 4, 0, 0.1],
    ];
    for (const [publisher, c, deviceType, source, floor] of bids) s.price(req(publisher, deviceType, source), impAt(floor), match(c), 'USD', rates, NOW);
    const made = segments(s).size;
    for (let i = 0; i < 300; i++) s.learn('win', noticed('pub-a', 'cr-banner', i), 1, 0.35, 4 + 16 * FB, null);
    s.tick();
    assert.equal(segments(s).size, made, 'the notices reached segments that the bids had made');
    const taught = [...segments(s)].filter(([, seg]) => seg.own.exact.some((x) => x > 0)).map(([key]) => key);
    assert.deepEqual(taught.sort(), [segmentKey(0, 'pub-a', '300x250', 4, FB), `pf|0|pub-a|${FB}`, 'p|0|pub-a', 's|0'].sort());
  });

  it('the floor is a feature: one publisher bids apart at low and high floors', () => {
    const s = service();
    let n = 0;
    for (let i = 0; i < 400; i++) {
      // At floors near 0.2 the price to beat is 0.25; near 1.0 it is 1.1.
      for (const [floor, mtw] of [[0.2, 0.25], [1.0, 1.1]]) {
        s.price(req('pub-f', 4), impAt(floor), match(banner), 'USD', rates, NOW);
        s.learn('win', noticed('pub-f', 'cr-banner', n++), 1.5, mtw, 4 + 16 * floorBucket(floor), null);
      }
    }
    s.tick();
    const low = s.price(req('pub-f', 4), impAt(0.2), match(banner), 'USD', rates, NOW);
    const high = s.price(req('pub-f', 4), impAt(1.0), match(banner), 'USD', rates, NOW);
    assert.ok(low >= 0.25 && low < 0.3, `bid at floor 0.2: ${low}`);
    assert.ok(high >= 1.1 && high < 1.25, `bid at floor 1.0: ${high}`);
    // Another size and device type of the publisher, at a floor near 1.0, bids from the publisher's segment at that floor.
    const other = s.price(req('pub-f', 2), impAt(1.0), match(video), 'USD', rates, NOW);
    assert.ok(other >= 1.1 && other < 1.25, `another size at floor 1.0: ${other}`);
  });

  it('a segment made by its key first (as the sync makes the other workers\' segments) is the one bids use', () => {
    const prior = service().price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW);
    assert.ok(prior > 0.5, `the prior's bid ${prior}`);
    const s = service();
    winsAtAnyPrice(segmentByKey(s, segmentKey(0, 'pub-c', '300x250', 2, FB)));
    assert.equal(s.price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW), 0.1);
    // Again, now through the index the first bid filled; the other sizes, device types and exchanges are not it.
    assert.equal(s.price(req('pub-c', 2), imp, match(banner), 'USD', rates, NOW), 0.1);
    assert.equal(s.price(req('pub-c', 2), imp, match(video), 'USD', rates, NOW), prior);
    assert.equal(s.price(req('pub-c', 3), imp, match(banner), 'USD', rates, NOW), prior);
    assert.equal(s.price(req('pub-c', 2, 1), imp, match(banner), 'USD', rates, NOW), prior);
  });

  it('ad sizes given a small integer are bounded (40,000); further sizes go by key', () => {
    const s = service();
    for (let i = 0; i < 40_010; i++) {
      const c = { id: `cr-${i}`, campaignId: 'c1', price: 2, banner: { w: 1 + (i % 1000), h: 1 + Math.floor(i / 1000) }, video: null } as unknown as Candidate;
      s.price(req('pub-e', 2), imp, match(c), 'USD', rates, NOW);
    }
    assert.equal((s as unknown as { sizeIds: Map<string, number> }).sizeIds.size, 40_000);
    // Segments stay bounded too (MAX_SEGMENTS): the later sizes bid from their publisher's segment at the floor.
    assert.equal(segments(s).size, 20_000);
  });

  it('a device type outside 0-14 or not an integer is device type 15 in segments', () => {
    const s = service();
    const prior = s.price(req('pub-d', 2.5), imp, match(banner), 'USD', rates, NOW);
    const odd = segments(s).get(segmentKey(0, 'pub-d', '300x250', 15, FB));
    assert.ok(odd !== undefined, 'the bid made its segment');
    winsAtAnyPrice(odd);
    assert.equal(s.price(req('pub-d', 2.5), imp, match(banner), 'USD', rates, NOW), 0.1);
    assert.equal(s.price(req('pub-d', 5000), imp, match(banner), 'USD', rates, NOW), 0.1);
    assert.equal(s.price(req('pub-d', 2), imp, match(banner), 'USD', rates, NOW), prior);
  });
});
