import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import { Auction, CandidateIndex, FILTER_ORDER, type Explanation } from '../../src/targeting/campaign-store';
import { chooseBidCurrency, STATIC_RATES } from '../../src/currency/rates';
import type { Candidate, CandidateGate, Match, NoBidReason, Rates } from '../../src/targeting/types';
import { bannerImp, bidRequest, candidate, deal, imp, pmp, select, videoImp } from './fixtures';

function isMatch(r: Match | NoBidReason): r is Match {
  return typeof r === 'object';
}
function run(cands: Candidate[], i: Imp, req: BidRequest = bidRequest(), cur = 'USD'): Match | NoBidReason {
  return select(new CandidateIndex(cands), i, req, cur);
}
function explain(index: CandidateIndex, i: Imp, req: BidRequest, cur: string, gate: CandidateGate | null = null): Explanation[] {
  return new Auction(gate).explain(index, i, req, cur, STATIC_RATES, true).candidates;
}
function winner(r: Match | NoBidReason): string {
  return isMatch(r) ? r.candidate.id : `no bid: ${r}`;
}

const banner300 = imp({ banner: bannerImp() });

/**
 * One row per filter: a candidate and a request that the filter accepts, and a change that makes
 * it reject (the reason must then be that filter's).
 */
interface Row {
  filter: NoBidReason;
  name: string;
  cand?: Parameters<typeof candidate>[0];
  imp?: Imp;
  req?: BidRequest;
  accept: { cand?: Parameters<typeof candidate>[0]; imp?: Imp; req?: BidRequest };
}
const rows: Row[] = [
  { filter: 'size', name: 'banner size not in format', imp: imp({ banner: bannerImp([{ w: 728, h: 90 }]) }), accept: { imp: imp({ banner: bannerImp([{ w: 728, h: 90 }, { w: 300, h: 250 }]) }) } },
  { filter: 'media_type', name: 'video imp, banner candidates only', imp: imp({ video: videoImp() }), accept: { imp: imp({ banner: bannerImp([]) }) } },
  { filter: 'inventory', name: 'app-only campaign on a site', cand: { targeting: { inventory: 'app' } }, accept: { req: bidRequest({ inventory: 'app' }) } },
  { filter: 'inventory', name: 'site-only campaign in an app', cand: { targeting: { inventory: 'site' } }, req: bidRequest({ inventory: 'app' }), accept: { req: bidRequest({ inventory: 'site' }) } },
  { filter: 'inventory', name: 'untargeted campaign on DOOH', req: bidRequest({ inventory: 'dooh' }), accept: { req: bidRequest({ inventory: 'site' }) } },
  { filter: 'device', name: 'phone-only campaign on a PC', cand: { targeting: { deviceTypes: [4] } }, req: bidRequest({ deviceType: 2 }), accept: { req: bidRequest({ deviceType: 4 }) } },
  { filter: 'device', name: 'device targeting, device type unknown', cand: { targeting: { deviceTypes: [2] } }, accept: { req: bidRequest({ deviceType: 2 }) } },
  { filter: 'device', name: 'tablet campaign, generic mobile/tablet (1) accepted', cand: { targeting: { deviceTypes: [5] } }, req: bidRequest({ deviceType: 3 }), accept: { req: bidRequest({ deviceType: 1 }) } },
  { filter: 'device', name: 'mobile/tablet (1) campaign, phone accepted', cand: { targeting: { deviceTypes: [1] } }, req: bidRequest({ deviceType: 7 }), accept: { req: bidRequest({ deviceType: 4 }) } },
  { filter: 'os', name: 'iOS campaign on Android', cand: { targeting: { os: ['ios'] } }, req: bidRequest({ os: 'android' }), accept: { req: bidRequest({ os: 'ios' }) } },
  { filter: 'os', name: 'OS targeting, OS unknown', cand: { targeting: { os: ['android'] } }, accept: { req: bidRequest({ os: 'android' }) } },
  { filter: 'country', name: 'US campaign in Germany', cand: { targeting: { countries: ['USA'] } }, req: bidRequest({ country: 'DEU' }), accept: { req: bidRequest({ country: 'USA' }) } },
  { filter: 'secure', name: 'http creative on a secure imp', cand: { secure: false }, imp: imp({ secure: true, banner: bannerImp() }), accept: { imp: imp({ secure: false, banner: bannerImp() }) } },
  { filter: 'secure', name: 'https creative on a secure imp is fine', cand: { secure: false }, imp: imp({ secure: true, banner: bannerImp() }), accept: { cand: { secure: true } } },
  { filter: 'battr', name: 'banner battr hits attr', cand: { attr: [13] }, imp: imp({ banner: bannerImp(undefined, [13, 14]) }), accept: { imp: imp({ banner: bannerImp(undefined, [14]) }) } },
  { filter: 'battr', name: 'battr above 30 (exchange specific)', cand: { attr: [500] }, imp: imp({ banner: bannerImp(undefined, [500]) }), accept: { cand: { attr: [501] } } },
  { filter: 'bcat', name: 'bcat exact subcategory', cand: { cat: ['IAB8-5'] }, req: bidRequest({ bcat: ['IAB8-5'] }), accept: { req: bidRequest({ bcat: ['IAB8-18'] }) } },
  { filter: 'bcat', name: 'bcat top-level blocks its subcategories', cand: { cat: ['IAB1-6'] }, req: bidRequest({ bcat: ['IAB1'] }), accept: { req: bidRequest({ bcat: ['IAB10', 'IAB1-5'] }) } },
  { filter: 'bcat', name: 'bcat subcategory does not block its parent', cand: { cat: ['IAB1'] }, req: bidRequest({ bcat: ['IAB1'] }), accept: { req: bidRequest({ bcat: ['IAB1-6'] }) } },
  { filter: 'badv', name: 'badv exact domain', cand: { adomain: ['apple.com'] }, req: bidRequest({ badv: ['apple.com'] }), accept: { req: bidRequest({ badv: ['pineapple.com'] }) } },
  { filter: 'bcat', name: 'bcat sent lower-case still blocks', cand: { cat: ['IAB25-2'] }, req: bidRequest({ bcat: ['iab25'] }), accept: { req: bidRequest({ bcat: ['iab26'] }) } },
  { filter: 'badv', name: 'badv with www. blocks the bare domain', cand: { adomain: ['apple.com'] }, req: bidRequest({ badv: ['www.apple.com'] }), accept: { req: bidRequest({ badv: ['www.pineapple.com'] }) } },
  { filter: 'badv', name: 'badv blocks subdomains, not look-alikes', cand: { adomain: ['store.apple.com'] }, req: bidRequest({ badv: ['apple.com'] }), accept: { cand: { adomain: ['notapple.com'] } } },
  { filter: 'bapp', name: 'bapp lists the advertised app', cand: { bundle: 'com.spotify.music' }, req: bidRequest({ bapp: ['com.spotify.music'] }), accept: { req: bidRequest({ bapp: ['com.other'] }) } },
  { filter: 'bapp', name: 'bapp ignores ads that advertise no app', cand: { bundle: 'com.x' }, req: bidRequest({ bapp: ['com.x'] }), accept: { cand: { bundle: null } } },
  { filter: 'floor', name: 'price below the floor', cand: { price: 0.5 }, imp: imp({ bidfloor: 0.6, banner: bannerImp() }), accept: { imp: imp({ bidfloor: 0.5, banner: bannerImp() }) } },
  { filter: 'currency', name: 'unknown floor currency', imp: imp({ bidfloor: 0.1, bidfloorcur: 'XYZ', banner: bannerImp() }), accept: { imp: imp({ bidfloor: 0.1, bidfloorcur: 'EUR', banner: bannerImp() }) } },
  { filter: 'deal', name: 'private auction, candidate in none of the deals', cand: { deals: ['D2'] }, imp: imp({ banner: bannerImp(), pmp: pmp([deal('D1')], true) }), accept: { cand: { deals: ['D1'] } } },
  { filter: 'deal', name: 'deals-only campaign in the open market', cand: { deals: ['D1'], dealsOnly: true }, accept: { imp: imp({ banner: bannerImp(), pmp: pmp([deal('D1')]) }) } },
];

describe('Auction.select: every filter rejects and accepts', () => {
  for (const r of rows) {
    it(`${r.filter}: ${r.name}`, () => {
      const baseImp = r.imp ?? banner300;
      const baseReq = r.req ?? bidRequest();
      const rejected = run([candidate({ id: 'c', ...r.cand })], baseImp, baseReq);
      assert.equal(rejected, r.filter);
      const accepted = run([candidate({ id: 'c', ...r.cand, ...r.accept.cand })], r.accept.imp ?? baseImp, r.accept.req ?? baseReq);
      assert.equal(winner(accepted), 'c');
    });
  }

  it('an empty index → no_candidates; an imp without banner/video/native → media_type', () => {
    assert.equal(run([], banner300), 'no_candidates');
    assert.equal(run([candidate()], imp()), 'media_type');
  });
  it('an unknown bid currency → currency', () => {
    assert.equal(run([candidate()], banner300, bidRequest(), 'XYZ'), 'currency');
  });
  it('a private auction without deals → deal', () => {
    assert.equal(run([candidate()], imp({ banner: bannerImp(), pmp: pmp([], true) })), 'deal');
  });
  it('a zero floor in an unknown currency is no floor at all', () => {
    assert.equal(winner(run([candidate({ id: 'c' })], imp({ bidfloorcur: 'XYZ', banner: bannerImp() }))), 'c');
  });
});

describe('Auction.select: video filter', () => {
  const v = (dur: number, over: Parameters<typeof candidate>[0] = {}): Candidate =>
    candidate({ id: 'v', kind: 'video', video: { mimes: ['video/mp4'], duration: dur, protocols: [2, 3], w: 640, h: 360, mediaUrl: 'https://cdn.example/v.mp4', bitrate: 800 }, ...over });
  const cases: { name: string; c: Candidate; vi: Parameters<typeof videoImp>[0]; ok: boolean }[] = [
    { name: 'duration inside min/max', c: v(15), vi: { minduration: 5, maxduration: 30 }, ok: true },
    { name: 'duration equal to max', c: v(30), vi: { maxduration: 30 }, ok: true },
    { name: 'duration above max', c: v(30), vi: { maxduration: 15 }, ok: false },
    { name: 'duration below min', c: v(15), vi: { minduration: 30, maxduration: 60 }, ok: false },
    { name: 'no max given', c: v(60), vi: { minduration: 0, maxduration: 0 }, ok: true },
    { name: 'mime not accepted', c: v(15), vi: { mimes: ['video/webm'] }, ok: false },
    { name: 'mime compared case-insensitively', c: v(15), vi: { mimes: ['Video/MP4'] }, ok: true },
    { name: 'no mimes listed: any', c: v(15), vi: { mimes: [] }, ok: true },
    { name: 'protocol not shared', c: v(15), vi: { protocols: [7, 8] }, ok: false },
    { name: 'protocol shared', c: v(15), vi: { protocols: [3, 7] }, ok: true },
    { name: 'no protocols listed: any', c: v(15), vi: { protocols: [] }, ok: true },
  ];
  for (const c of cases) {
    it(`${c.name} → ${c.ok ? 'bid' : 'video'}`, () => {
      const r = run([c.c], imp({ video: videoImp(c.vi) }));
      if (c.ok) {
        assert.ok(isMatch(r), JSON.stringify(r));
        assert.equal(r.mtype, 2);
        assert.equal(r.size, null);
        assert.equal(r.native, null);
      } else {
        assert.equal(r, 'video');
      }
    });
  }
  it('video battr applies to video candidates', () => {
    assert.equal(run([v(15, { attr: [16] })], imp({ video: videoImp({ battr: [16] }) })), 'battr');
  });
});

describe('Auction.select: picking the winner', () => {
  it('picks the highest price among eligible candidates, and prices it in the bid currency', () => {
    const r = run([candidate({ id: 'a', price: 1 }), candidate({ id: 'b', price: 2.5 }), candidate({ id: 'c', price: 2, cat: ['IAB8'] })], banner300, bidRequest(), 'EUR');
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'b');
    assert.equal(r.mtype, 1);
    assert.deepEqual(r.size, { w: 300, h: 250 });
    assert.equal(r.dealId, null);
    assert.equal(r.price, STATIC_RATES.convert(2.5, 'USD', 'EUR'));
  });
  it('skips a blocked higher-priced candidate for the next one', () => {
    const r = run([candidate({ id: 'top', price: 4, adomain: ['apple.com'] }), candidate({ id: 'next', price: 3 })], banner300, bidRequest({ badv: ['apple.com'] }));
    assert.equal(winner(r), 'next');
  });
  it('searches every banner size of the imp; empty sizes mean any size', () => {
    const cands = [candidate({ id: 'small', price: 1 }), candidate({ id: 'leader', price: 2, banner: { w: 728, h: 90, imageUrl: 'https://cdn.example/l.png' } })];
    assert.equal(winner(run(cands, imp({ banner: bannerImp([{ w: 300, h: 250 }, { w: 728, h: 90 }]) }))), 'leader');
    assert.equal(winner(run(cands, imp({ banner: bannerImp([{ w: 300, h: 250 }, { w: 160, h: 600 }]) }))), 'small');
    const any = run(cands, imp({ banner: bannerImp([]) }));
    assert.ok(isMatch(any));
    assert.equal(any.candidate.id, 'leader');
    assert.deepEqual(any.size, { w: 728, h: 90 });
  });
  it('banner + video in one imp: the higher price wins whatever its media type', () => {
    const b = candidate({ id: 'b', price: 1.5 });
    const v = candidate({ id: 'v', kind: 'video', price: 2 });
    const both = imp({ banner: bannerImp(), video: videoImp() });
    const r = run([b, v], both);
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'v');
    assert.equal(r.mtype, 2);
    const r2 = run([candidate({ id: 'b', price: 3 }), v], both);
    assert.ok(isMatch(r2));
    assert.equal(r2.mtype, 1);
    assert.equal(r2.candidate.id, 'b');
  });
  it('floor compared in the bid currency: a EUR floor against a USD price', () => {
    // 1 USD ≈ 0.97 EUR: a 1.00 EUR floor is above a 1.00 USD price, a 0.90 EUR one below.
    const c = candidate({ id: 'c', price: 1 });
    assert.equal(run([c], imp({ bidfloor: 1, bidfloorcur: 'EUR', banner: bannerImp() })), 'floor');
    assert.equal(winner(run([c], imp({ bidfloor: 0.9, bidfloorcur: 'EUR', banner: bannerImp() }))), 'c');
    assert.equal(winner(run([c], imp({ bidfloor: 0.9, bidfloorcur: 'EUR', banner: bannerImp() }), bidRequest(), 'GBP')), 'c');
  });
  it('uses the rates it is given, for prices, imp floors and deal floors, and for the bid currency', () => {
    // A made-up market: 2 EUR per USD, and a currency the static table does not have.
    const table = new Map([
      ['USD', 1],
      ['EUR', 2],
      ['XTS', 10],
    ]);
    const rates: Rates = {
      unitsPerUsd: (cur) => table.get(cur) ?? null,
      convert: (amount, from, to) => {
        const f = table.get(from);
        const t = table.get(to);
        return f === undefined || t === undefined ? null : (amount / f) * t;
      },
    };
    const idx = new CandidateIndex([candidate({ id: 'c', price: 1, deals: ['D'] })]);
    const a = new Auction();
    const m = a.select(idx, banner300, bidRequest(), 'EUR', rates, true);
    assert.ok(isMatch(m));
    assert.equal(m.price, 2);
    assert.equal(a.select(idx, imp({ bidfloor: 2.01, bidfloorcur: 'EUR', banner: bannerImp() }), bidRequest(), 'EUR', rates, true), 'floor');
    assert.equal(winner(a.select(idx, imp({ bidfloor: 9.9, bidfloorcur: 'XTS', banner: bannerImp() }), bidRequest(), 'USD', rates, true)), 'c');
    assert.equal(a.select(idx, imp({ banner: bannerImp(), pmp: pmp([deal('D', 10.1, 'XTS')], true) }), bidRequest(), 'USD', rates, true), 'floor');
    assert.equal(chooseBidCurrency(['XTS'], rates), 'XTS');
    assert.equal(STATIC_RATES.chooseBidCurrency(['XTS']), null);
  });
  it('ties are broken by creative id, whatever the file order', () => {
    assert.equal(winner(run([candidate({ id: 'z', price: 1 }), candidate({ id: 'a', price: 1 })], banner300)), 'a');
    assert.equal(winner(run([candidate({ id: 'a', price: 1 }), candidate({ id: 'z', price: 1 })], banner300)), 'a');
  });
});

describe('Auction.select: deals', () => {
  const inDeal = (id: string, price: number, deals: string[], dealsOnly = false): Candidate => candidate({ id, price, deals, dealsOnly });
  it('private auction: only deal bids; the deal floor applies, not the imp floor', () => {
    const i = imp({ bidfloor: 4, banner: bannerImp(), pmp: pmp([deal('D1', 2)], true) });
    const r = run([inDeal('open', 4.5, []), inDeal('d', 2.5, ['D1'])], i);
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'd');
    assert.equal(r.dealId, 'D1');
    assert.equal(r.price, 2.5);
  });
  it('private auction: deal floor not met → floor', () => {
    assert.equal(run([inDeal('d', 1.5, ['D1'])], imp({ banner: bannerImp(), pmp: pmp([deal('D1', 2)], true) })), 'floor');
  });
  it('deal.bidfloorcur defaults to USD and does not inherit the imp currency', () => {
    // A deal floor of 1.00 in EUR would be below a 1.00 USD price... but the deal says USD.
    const d = deal('D1', 1.02); // USD
    const i = imp({ bidfloorcur: 'EUR', banner: bannerImp(), pmp: pmp([d], true) });
    assert.equal(run([inDeal('d', 1, ['D1'])], i), 'floor');
    const i2 = imp({ bidfloorcur: 'EUR', banner: bannerImp(), pmp: pmp([deal('D1', 1.02, 'JPY')], true) });
    assert.equal(winner(run([inDeal('d', 1, ['D1'])], i2)), 'd');
  });
  it('a deal floor in an unknown currency makes that deal unusable → currency', () => {
    assert.equal(run([inDeal('d', 3, ['D1'])], imp({ banner: bannerImp(), pmp: pmp([deal('D1', 1, 'XYZ')], true) })), 'currency');
  });
  it('the first of the imp deals the candidate may take is the one bid on', () => {
    const i = imp({ banner: bannerImp(), pmp: pmp([deal('D1', 5), deal('D2', 1), deal('D3', 0.5)], true) });
    const r = run([inDeal('d', 3, ['D3', 'D2', 'D1'])], i);
    assert.ok(isMatch(r));
    assert.equal(r.dealId, 'D2');
  });
  it('not private: an eligible deal bid is preferred over a higher open-market bid', () => {
    const i = imp({ banner: bannerImp(), pmp: pmp([deal('D1', 1)]) });
    const r = run([inDeal('open', 4, []), inDeal('d', 2, ['D1'])], i);
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'd');
    assert.equal(r.dealId, 'D1');
  });
  it('not private: without an eligible deal the open market wins, and a deals-only campaign stays out', () => {
    const i = imp({ bidfloor: 0.5, banner: bannerImp(), pmp: pmp([deal('D1', 3)]) });
    const r = run([inDeal('open', 1, []), inDeal('dealonly', 2, ['D1'], true), inDeal('flex', 0.8, ['D1'])], i);
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'open');
    assert.equal(r.dealId, null);
  });
  it('not private: a candidate in a deal whose floor it misses can still bid open market', () => {
    const i = imp({ bidfloor: 0.5, banner: bannerImp(), pmp: pmp([deal('D1', 3)]) });
    const r = run([inDeal('flex', 2, ['D1'])], i);
    assert.ok(isMatch(r));
    assert.equal(r.dealId, null);
  });
  it('private auction: a candidate without deals that passes the filters stops at "deal", as explain() says', () => {
    // The deal's only campaign targets sites; the request is an app.
    const cands = [candidate({ id: 'd', price: 3, deals: ['D1'], targeting: { inventory: 'site' } }), inDeal('open', 2, [])];
    const i = imp({ banner: bannerImp(), pmp: pmp([deal('D1')], true) });
    const req = bidRequest({ inventory: 'app' });
    assert.equal(run(cands, i, req), 'deal');
    assert.deepEqual(
      explain(new CandidateIndex(cands), i, req, 'USD').map((e) => e.reason),
      ['inventory', 'deal'],
    );
  });
  it('deals-only campaign whose deal floor is missed: floor (it got further than "deal")', () => {
    assert.equal(run([inDeal('d', 1, ['D1'], true)], imp({ banner: bannerImp(), pmp: pmp([deal('D1', 3)]) })), 'floor');
  });
});

describe('Auction.select: the no-bid reason is the furthest-progressing rejection', () => {
  it('FILTER_ORDER documents the stages: floor after the targeting filters, the gate last', () => {
    assert.deepEqual(FILTER_ORDER.slice(-3), ['floor', 'budget', 'frequency_cap']);
    assert.ok(FILTER_ORDER.indexOf('inventory') < FILTER_ORDER.indexOf('bcat'));
    assert.ok(FILTER_ORDER.indexOf('bcat') < FILTER_ORDER.indexOf('native_assets'));
  });
  it('one candidate stopped at bcat, a cheaper one at the floor → floor', () => {
    const r = run([candidate({ price: 3, cat: ['IAB25'] }), candidate({ price: 0.2 })], imp({ bidfloor: 1, banner: bannerImp() }), bidRequest({ bcat: ['IAB25'] }));
    assert.equal(r, 'floor');
  });
  it('one at inventory, one at badv → badv, whatever the order of prices', () => {
    const req = bidRequest({ badv: ['x.example'] });
    assert.equal(run([candidate({ price: 3, targeting: { inventory: 'app' } }), candidate({ price: 1, adomain: ['x.example'] })], banner300, req), 'badv');
    assert.equal(run([candidate({ price: 1, targeting: { inventory: 'app' } }), candidate({ price: 3, adomain: ['x.example'] })], banner300, req), 'badv');
  });
  it('a missing banner size ranks below any candidate-level rejection', () => {
    const r = run([candidate({ price: 1, targeting: { inventory: 'app' } })], imp({ banner: bannerImp([{ w: 1, h: 1 }, { w: 300, h: 250 }]) }));
    assert.equal(r, 'inventory');
  });
});

describe('Auction.explain', () => {
  it('lists every candidate of the imp media types with its first failing filter, null when eligible', () => {
    const cands = [
      candidate({ id: 'ok', price: 2 }),
      candidate({ id: 'cheap', price: 0.1 }),
      candidate({ id: 'cat', cat: ['IAB25-3'] }),
      candidate({ id: 'size', banner: { w: 728, h: 90, imageUrl: 'https://cdn.example/x.png' } }),
      candidate({ id: 'vid', kind: 'video' }),
      candidate({ id: 'app', targeting: { inventory: 'app' }, cat: ['IAB25'] }),
    ];
    const out = explain(new CandidateIndex(cands), imp({ bidfloor: 0.5, banner: bannerImp() }), bidRequest({ bcat: ['IAB25'] }), 'USD');
    assert.deepEqual(out, [
      { crid: 'ok', reason: null, deal: null },
      { crid: 'cheap', reason: 'floor', deal: null },
      { crid: 'cat', reason: 'bcat', deal: null },
      { crid: 'size', reason: 'size', deal: null },
      { crid: 'app', reason: 'inventory', deal: null },
    ]);
  });
  it('reports deal outcomes and imp-level reasons', () => {
    const cands = [candidate({ id: 'd', price: 2, deals: ['D1'] }), candidate({ id: 'o', price: 2 }), candidate({ id: 'low', price: 1, deals: ['D1'] })];
    const idx = new CandidateIndex(cands);
    const priv = imp({ banner: bannerImp(), pmp: pmp([deal('D1', 1.5)], true) });
    assert.deepEqual(explain(idx, priv, bidRequest(), 'USD'), [
      { crid: 'd', reason: null, deal: 'D1' },
      { crid: 'o', reason: 'deal', deal: null },
      { crid: 'low', reason: 'floor', deal: null },
    ]);
    const unknownCur = imp({ bidfloor: 1, bidfloorcur: 'XYZ', banner: bannerImp() });
    assert.deepEqual(
      explain(idx, unknownCur, bidRequest(), 'USD').map((e) => e.reason),
      ['currency', 'currency', 'currency'],
    );
  });
  it('agrees with selectForImp: the winner is eligible and nothing eligible is priced above it', () => {
    const cands = [candidate({ id: 'a', price: 3, attr: [14] }), candidate({ id: 'b', price: 2 }), candidate({ id: 'c', price: 1 })];
    const i = imp({ banner: bannerImp(undefined, [14]) });
    const r = run(cands, i);
    assert.ok(isMatch(r));
    const ex = explain(new CandidateIndex(cands), i, bidRequest(), 'USD');
    assert.equal(ex.find((e) => e.crid === r.candidate.id)?.reason, null);
    assert.equal(ex.find((e) => e.crid === 'a')?.reason, 'battr');
  });
});

/** A gate that blocks the listed campaigns and counts the questions it gets. */
class TestGate implements CandidateGate {
  asked: string[] = [];
  constructor(private readonly blocked: Record<string, 'budget' | 'frequency_cap'>) {}
  check(c: Candidate): 'budget' | 'frequency_cap' | null {
    this.asked.push(c.id);
    return this.blocked[c.campaignId] ?? null;
  }
}

describe('Auction.select: the candidate gate (budget, frequency caps)', () => {
  const cands = [
    candidate({ id: 'a', campaignId: 'broke', price: 3 }),
    candidate({ id: 'b', campaignId: 'capped', price: 2 }),
    candidate({ id: 'c', campaignId: 'fine', price: 1 }),
    candidate({ id: 'x', campaignId: 'fine', price: 5, cat: ['IAB25'] }),
  ];
  const idx = new CandidateIndex(cands);
  const req = bidRequest({ bcat: ['IAB25'] });

  it('a gated winner gives way to the next best, and only would-be winners are asked', () => {
    const gate = new TestGate({ broke: 'budget', capped: 'frequency_cap' });
    const r = select(idx, banner300, req, 'USD', gate);
    assert.equal(winner(r), 'c');
    assert.deepEqual(gate.asked, ['a', 'b', 'c']);
  });
  it('a gate that allows is asked once', () => {
    const gate = new TestGate({});
    assert.equal(winner(select(idx, banner300, req, 'USD', gate)), 'a');
    assert.deepEqual(gate.asked, ['a']);
  });
  it('everything gated → the furthest gate reason; the gate ranks after floor', () => {
    assert.equal(select(idx, banner300, req, 'USD', new TestGate({ broke: 'budget', capped: 'budget', fine: 'budget' })), 'budget');
    assert.equal(select(idx, banner300, req, 'USD', new TestGate({ broke: 'budget', capped: 'frequency_cap', fine: 'budget' })), 'frequency_cap');
    // a (3.00) gated, b and c under the 2.50 floor: budget, not floor
    assert.equal(select(idx, imp({ bidfloor: 2.5, banner: bannerImp() }), req, 'USD', new TestGate({ broke: 'budget' })), 'budget');
  });
  it('deal bids are gated too', () => {
    const d = new CandidateIndex([candidate({ id: 'd1', campaignId: 'broke', price: 3, deals: ['D'] }), candidate({ id: 'd2', campaignId: 'fine', price: 2, deals: ['D'] })]);
    const r = select(d, imp({ banner: bannerImp(), pmp: pmp([deal('D', 1)], true) }), bidRequest(), 'USD', new TestGate({ broke: 'budget' }));
    assert.ok(isMatch(r));
    assert.equal(r.candidate.id, 'd2');
    assert.equal(r.dealId, 'D');
  });
  it('without a gate nothing is gated (the previous call\'s gate is not kept)', () => {
    select(idx, banner300, req, 'USD', new TestGate({ broke: 'budget' }));
    assert.equal(winner(select(idx, banner300, req, 'USD')), 'a');
  });
  it('explain reports the gate verdict of otherwise eligible candidates', () => {
    const out = explain(idx, banner300, req, 'USD', new TestGate({ broke: 'budget', capped: 'frequency_cap' }));
    assert.deepEqual(
      out.map((e) => [e.crid, e.reason]),
      [
        ['a', 'budget'],
        ['b', 'frequency_cap'],
        ['c', null],
        ['x', 'bcat'],
      ],
    );
  });
});
