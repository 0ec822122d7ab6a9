// Every request sample in test/fixtures/samples (normalized by a small local helper)
// against the demo campaigns: the imps we expect to bid get a match that respects the request,
// the others get the no-bid reason we expect.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseBidRequest } from '../../src/openrtb/parse';
import { NativeAssetKind, type BidRequest } from '../../src/openrtb/types';
import { loadCampaignFile } from '../../src/targeting/campaign-store';
import { STATIC_RATES } from '../../src/currency/rates';
import type { Match, NativeFill, NoBidReason } from '../../src/targeting/types';
import { normalizeSample, select } from './fixtures';

const root = path.resolve(__dirname, '..', '..', '..');
const SAMPLES = path.join(root, 'test', 'fixtures', 'samples');
const index = loadCampaignFile(path.join(root, 'data', 'campaigns.demo.json'));

type Expect = { bid: true; mtype: 1 | 2 | 4; dealId?: string } | { bid: false; reason: NoBidReason };
const bid = (mtype: 1 | 2 | 4, dealId?: string): Expect => ({ bid: true, mtype, dealId });
const none = (reason: NoBidReason): Expect => ({ bid: false, reason });

/** File → expected outcome per imp (in imp order). */
const EXPECTED: Record<string, Expect[]> = {
  'iab-openrtb2.x/bid-request_6.2.1_simple-banner.json': [bid(1)],
  'iab-openrtb2.x/bid-request_6.2.2_expandable-creative.json': [bid(1)],
  'iab-openrtb2.x/bid-request_6.2.3_mobile.json': [bid(1)],
  'iab-openrtb2.x/bid-request_6.2.4_video.json': [bid(2)],
  'iab-openrtb2.x/bid-request_6.2.5_pmp-with-direct-deal.json': [bid(1, 'AB-Agency1-0001')],
  // native.request is a placeholder ("assets":[ ... ]): nothing to bid on.
  'mxmCherry-openrtb/openrtb2__testdata__bid-request__2.5__native-ad.json': [none('media_type')],
  'bsm-openrtb/breq.banner.json': [bid(1)],
  'bsm-openrtb/breq.exp.json': [bid(1)],
  // imp 1: private deal with a 5.30 floor, above every demo CPM (max 5); imp 2: the deal at 3.50;
  // imp 3: open market, 2.00 floor, 30–60 s.
  'bsm-openrtb/breq.video.json': [none('floor'), bid(2, '1452f.eadb4.7aaa'), bid(2)],
  'bsm-openrtb/breq.native.json': [none('media_type')],
  'derived/iab-native-ad_with-native1.2-request.json': [bid(4)],
  'prebid-server/ezoic-exemplary-simple-banner.json': [bid(1)],
  'prebid-server/ezoic-exemplary-simple-banner.to-bidder.request.json': [bid(1)],
  'prebid-server/ezoic-exemplary-simple-native.json': [bid(4)],
  'prebid-server/ezoic-exemplary-simple-native.to-bidder.request.json': [bid(4)],
  'prebid-server/ezoic-exemplary-simple-video.json': [bid(2)],
  'prebid-server/ezoic-exemplary-simple-video.to-bidder.request.json': [bid(2)],
  'prebid-server/auction-input__app-ios140-no-ifa.json': [bid(1)],
  'prebid-server/auction-input__device-sua.json': [bid(1)],
  // 1920x1080 DOOH screen: no creative of that size (and DOOH is not targeted by any campaign).
  'prebid-server/auction-input__dooh.json': [none('size')],
  'prebid-server/auction-input__eventtracker-exchange-specific.json': [bid(4)],
  'prebid-server/auction-input__source-schain.json': [bid(1)],
};

/** Checks a match against the request the way an exchange would. */
function checkMatch(req: BidRequest, impIdx: number, m: Match, bidCur: string): void {
  const imp = req.imps[impIdx];
  const c = m.candidate;
  assert.ok(m.price > 0);
  if (m.dealId === null) {
    if (imp.pmp) assert.equal(imp.pmp.privateAuction, false, 'open bid in a private auction');
    const floor = STATIC_RATES.convert(imp.bidfloor, imp.bidfloorcur, bidCur) as number;
    assert.ok(m.price >= floor, `price ${m.price} < floor ${floor}`);
  } else {
    const d = imp.pmp?.deals.find((x) => x.id === m.dealId);
    assert.ok(d, `deal ${m.dealId} not in the imp`);
    assert.ok(c.deals.includes(d.id));
    assert.ok(m.price >= (STATIC_RATES.convert(d.bidfloor, d.bidfloorcur, bidCur) as number));
  }
  for (const b of req.bcat) for (const cat of c.cat.map((x) => x.toLowerCase())) assert.ok(cat !== b && !cat.startsWith(`${b}-`), `${c.id} ${cat} blocked by ${b}`);
  for (const b of req.badv) assert.ok(!c.adomain.includes(b), `${c.id} adomain blocked`);
  if (imp.secure) assert.ok(c.secure);
  if (c.targeting.inventory !== null) assert.equal(c.targeting.inventory, req.inventory);
  if (m.mtype === 1) {
    assert.ok(imp.banner && m.size);
    if (imp.banner.sizes.length > 0) assert.ok(imp.banner.sizes.some((s) => s.w === m.size?.w && s.h === m.size?.h));
    for (const a of imp.banner.battr) assert.ok(!c.attr.includes(a));
  } else if (m.mtype === 2) {
    const v = imp.video;
    assert.ok(v && c.video);
    if (v.maxduration > 0) assert.ok(c.video.duration <= v.maxduration);
    assert.ok(c.video.duration >= v.minduration);
    assert.ok(c.video.mimes.some((x) => v.mimes.includes(x)));
    if (v.protocols.length) assert.ok(c.video.protocols.some((p) => v.protocols.includes(p)));
    for (const a of v.battr) assert.ok(!c.attr.includes(a));
  } else {
    const n = imp.native;
    assert.ok(n && m.native);
    for (const a of n.assets) {
      const f: NativeFill | undefined = m.native.find((x) => x.assetId === a.id);
      if (a.required) assert.ok(f, `required asset ${a.id} missing`);
      if (f && a.len > 0) assert.ok(f.text.length <= a.len, `asset ${a.id} longer than ${a.len}`);
      if (f && a.kind === NativeAssetKind.Img) {
        assert.ok(f.img);
        assert.ok(f.img.w >= a.wmin && f.img.h >= a.hmin);
        if (a.wmin === 0 && a.w > 0) assert.equal(f.img.w, a.w);
      }
    }
    assert.deepEqual(
      m.native.map((f) => f.assetId),
      n.assets.filter((a) => m.native?.some((f) => f.assetId === a.id)).map((a) => a.id),
      'fills in request order',
    );
    for (const a of n.battr) assert.ok(!c.attr.includes(a));
  }
}

describe('openrtb-samples against the demo campaigns', () => {
  it('every request sample of the list (LICENSES.md) is covered here', () => {
    const listed = fs
      .readFileSync(path.join(SAMPLES, 'LICENSES.md'), 'utf8')
      .split('\n')
      .map((l) => /^\| ((?:[\w.-]+\/)[\w.-]+\.json) \|/.exec(l)?.[1])
      .filter((f): f is string => f !== undefined)
      .filter((f) => /request|breq|auction-input|ezoic-exemplary-simple-(banner|native|video)\.json|native-ad/.test(f))
      .filter((f) => !f.includes('native1__request')); // a native payload, not a bid request
    assert.ok(listed.length >= 20, `found ${listed.length}`);
    assert.deepEqual(listed.filter((f) => !(f in EXPECTED)), []);
  });

  for (const [file, expected] of Object.entries(EXPECTED)) {
    it(file, () => {
      const req = normalizeSample(JSON.parse(fs.readFileSync(path.join(SAMPLES, file), 'utf8')));
      assert.equal(req.imps.length, expected.length, 'imp count');
      const bidCur = STATIC_RATES.chooseBidCurrency(req.cur);
      assert.equal(bidCur, 'USD');
      req.imps.forEach((imp, i) => {
        const r = select(index, imp, req, bidCur);
        const e = expected[i];
        if (!e.bid) {
          assert.equal(r, e.reason, `imp ${imp.id}`);
          return;
        }
        assert.ok(typeof r === 'object', `imp ${imp.id}: expected a bid, got ${JSON.stringify(r)}`);
        assert.equal(r.mtype, e.mtype, `imp ${imp.id} mtype`);
        if (e.dealId !== undefined) assert.equal(r.dealId, e.dealId, `imp ${imp.id} deal`);
        checkMatch(req, i, r, bidCur);
      });
    });
  }

  it('the bid path\'s own parser (src/openrtb/parse.ts) leads to the same outcomes as the local normalizer', () => {
    const show = (r: Match | NoBidReason): string => (typeof r === 'string' ? r : `${r.candidate.id} ${r.price} ${r.dealId} ${(r.native ?? []).map((f) => f.assetId).join(',')}`);
    for (const file of Object.keys(EXPECTED)) {
      const raw = JSON.parse(fs.readFileSync(path.join(SAMPLES, file), 'utf8')) as { mockBidRequest?: unknown };
      const mine = normalizeSample(raw);
      const theirs = parseBidRequest(raw.mockBidRequest ?? raw);
      assert.deepEqual(
        theirs.imps.map((i) => show(select(index, i, theirs, 'USD'))),
        mine.imps.map((i) => show(select(index, i, mine, 'USD'))),
        file,
      );
    }
  });

  it('2.6 §6.2.3 mobile: apple.com (the top 728x90 bid) is blocked by badv, the next one wins', () => {
    const req = normalizeSample(JSON.parse(fs.readFileSync(path.join(SAMPLES, 'iab-openrtb2.x/bid-request_6.2.3_mobile.json'), 'utf8')));
    const r = select(index, req.imps[0], req, 'USD');
    assert.ok(typeof r === 'object');
    assert.notDeepEqual(r.candidate.adomain, ['apple.com']);
    const top = index.candidates.filter((c) => c.banner?.w === 728 && c.banner.h === 90).sort((a, b) => b.price - a.price)[0];
    assert.deepEqual(top.adomain, ['apple.com'], 'the demo set puts apple.com on top of 728x90');
  });
});
