/**
 * What shading refuses to learn (unit test of ShadingService, no Redis: its sync is not called):
 * notices that cannot be true (a loss whose price to win is below our bid, a win whose price to win
 * is above it) are counted and teach nothing; one publisher or one exchange cannot move what other
 * publishers' segments bid from (the shared levels) beyond a bound; and each source (exchange) is
 * learned from at most SHADING_LEARN_PER_S notices a second, the rest counted.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import type { Rates } from '../../src/currency/rates';
import { Clock } from '../../src/delivery/clock';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { ShadingService } from '../../src/delivery/shading.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate, Match } from '../../src/targeting/types';
import { MemoryShadingRepository } from '../support/fake-stores';

const NOW = Date.UTC(2026, 10, 28, 9, 30);
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;

function service(env: Record<string, unknown> = {}): { s: ShadingService; clock: Clock } {
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: '1', shadingSyncMs: 1000, shadingLearnPerS: 100_000, shadingHalfLifeMs: 600_000, ...env } as unknown as Config;
  const store = { current: () => ({ get: (crid: string) => (crid === 'cr-banner' ? banner : undefined) }) } as unknown as CampaignStore;
  const random = new Random();
  random.next = () => 0.5;
  const clock = new Clock();
  clock.now = () => NOW;
  return { s: new ShadingService(config, new MemoryShadingRepository(), store, random, clock), clock };
}

const rates = { convert: (v: number) => v } as unknown as Rates;
const imp = { bidfloor: 0.1, bidfloorcur: 'USD' } as unknown as Imp;
const req = (publisher: string, source = 0): BidRequest => ({ at: 1, publisher, deviceType: 4, source }) as unknown as BidRequest;
const match: Match = { dealId: null, price: 2, candidate: banner } as unknown as Match;
let seq = 0;
const noticed = (publisher: string, source = 0): NoticedBid => ({ bidId: `b-${seq++}`, cid: 'c1', crid: 'cr-banner', price: 1.36, cur: 'USD', ts: NOW, publisher, source });
const price = (s: ShadingService, publisher: string, source = 0): number => s.price(req(publisher, source), imp, match, 'USD', rates, NOW);
const stats = (s: ShadingService): ShadingService['stats'] => s.stats;

describe('shading: what it refuses to learn', () => {
  it('a loss whose price to win is below our bid, or a win whose price to win is above it, is impossible: counted, not learned', () => {
    const { s } = service();
    const before = price(s, 'pub-x');
    for (let i = 0; i < 478; i++) s.learn('loss', noticed('pub-x'), 1.36, 0.011, 4, 102);
    for (let i = 0; i < 100; i++) s.learn('win', noticed('pub-x'), 1.36, 1.9, 4, null);
    s.tick();
    assert.equal(stats(s).impossible, 578);
    assert.equal(stats(s).learned, 0);
    assert.equal(price(s, 'pub-x'), before, 'the bids did not move');
    assert.equal(price(s, 'pub-y'), before, 'nor anyone else\'s');
    // Within a cent of our bid, a price to win is rounding, not impossible: learned.
    s.learn('loss', noticed('pub-x'), 1.36, 1.355, 4, 102);
    s.learn('win', noticed('pub-x'), 1.36, 1.365, 4, null);
    assert.equal(stats(s).learned, 2);
    assert.equal(stats(s).impossible, 578);
  });

  it('one publisher moves its own bids, not those of publishers without data beyond a bound', () => {
    const { s } = service();
    const before = price(s, 'pub-good');
    for (let i = 0; i < 3000; i++) s.learn('win', noticed('pub-evil'), 1.36, 0.02, 4, null);
    s.tick();
    assert.ok(price(s, 'pub-evil') < 0.2, `the publisher's own segment learned: ${price(s, 'pub-evil')}`);
    const after = price(s, 'pub-good');
    assert.ok(after >= 0.6 * before, `another publisher's bid ${after}, ${before} before`);
  });

  it('one exchange does not move what another exchange\'s new publishers bid from beyond a bound', () => {
    const { s } = service();
    const before = price(s, 'pub-new', 1);
    // Many publishers of exchange 2, each within its own bound.
    for (let i = 0; i < 6000; i++) s.learn('win', noticed(`pub-${i % 300}`, 2), 1.36, 0.02, 4, null);
    s.tick();
    const after = price(s, 'pub-new', 1);
    assert.ok(after >= 0.6 * before, `a new publisher of exchange 1 bids ${after}, ${before} before`);
  });

  it('each source is learned from at most SHADING_LEARN_PER_S notices a second; the rest are counted', () => {
    const { s, clock } = service({ shadingLearnPerS: 100 });
    for (let i = 0; i < 1000; i++) s.learn('loss', noticed(`pub-${i % 7}`, 2), 1.36, 1.5, 4, 102);
    assert.equal(stats(s).learned, 100);
    assert.equal(stats(s).limited, 900);
    // Another source has its own allowance.
    for (let i = 0; i < 50; i++) s.learn('loss', noticed('pub-z', 3), 1.36, 1.5, 4, 102);
    assert.equal(stats(s).learned, 150);
    // A second later, the source may teach again.
    clock.now = () => NOW + 1000;
    for (let i = 0; i < 1000; i++) s.learn('loss', noticed('pub-a', 2), 1.36, 1.5, 4, 102);
    assert.equal(stats(s).learned, 250);
    assert.equal(stats(s).limited, 1800);
  });
});
