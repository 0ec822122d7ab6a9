import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { NativeAssetKind, type NativeAssetReq } from '../../src/openrtb/types';
import { CandidateIndex } from '../../src/targeting/campaign-store';
import type { Candidate, Match, NoBidReason } from '../../src/targeting/types';
import { bidRequest, candidate, data, img, imp, nativeImp, select, title, videoAsset } from './fixtures';

type NativeParts = NonNullable<Candidate['native']>;
function nat(id: string, over: Partial<NativeParts> = {}, price = 1): Candidate {
  const base = candidate({ id, kind: 'native', price });
  return { ...base, native: { ...(base.native as NativeParts), ...over } };
}
function plan(cands: Candidate[], assets: NativeAssetReq[]): Match | NoBidReason {
  return select(new CandidateIndex(cands), imp({ native: nativeImp(assets) }), bidRequest(), 'USD');
}
function fills(r: Match | NoBidReason): string[] {
  assert.ok(typeof r === 'object', `expected a match, got ${JSON.stringify(r)}`);
  assert.equal(r.mtype, 4);
  assert.ok(r.native);
  return r.native.map((f) => `${f.assetId}:${f.kind === NativeAssetKind.Img ? `img ${f.img?.w}x${f.img?.h}` : f.text}`);
}

// The fixture native: title "A title of 20 chars." (20), description "A description." (14),
// sponsoredBy "Brand" (5), cta "Shop now" (8), main image 1200x627, icon 80x80.
describe('native asset planning', () => {
  const cases: { name: string; assets: NativeAssetReq[]; cand?: Partial<NativeParts>; want: string[] | NoBidReason }[] = [
    { name: 'title within len', assets: [title(1, 20)], want: ['1:A title of 20 chars.'] },
    { name: 'title len 0 means no limit', assets: [title(1, 0)], want: ['1:A title of 20 chars.'] },
    { name: 'required title too long → reject', assets: [title(1, 19)], want: 'native_assets' },
    { name: 'optional title too long → omitted', assets: [title(1, 19, false), data(2, 2, 0)], want: ['2:A description.'] },
    { name: 'main image by minimum size', assets: [img(3, 3, { wmin: 836, hmin: 627 })], want: ['3:img 1200x627'] },
    { name: 'main image below minimum → reject', assets: [img(3, 3, { wmin: 1300, hmin: 627 })], want: 'native_assets' },
    { name: 'main image exact size', assets: [img(3, 3, { w: 1200, h: 627 })], want: ['3:img 1200x627'] },
    { name: 'main image exact size differs → reject', assets: [img(3, 3, { w: 1200, h: 628 })], want: 'native_assets' },
    { name: 'icon (type 1) by minimum', assets: [img(4, 1, { wmin: 50, hmin: 50 })], want: ['4:img 80x80'] },
    { name: 'icon too small → reject', assets: [img(4, 1, { wmin: 100, hmin: 100 })], want: 'native_assets' },
    { name: 'required icon, creative has none → reject', assets: [img(4, 1, {})], cand: { icon: null }, want: 'native_assets' },
    { name: 'required main image, text-only creative → reject', assets: [title(1, 90), img(3, 3, {})], cand: { image: null, icon: null }, want: 'native_assets' },
    { name: 'optional main image, text-only creative → omitted', assets: [title(1, 90), img(3, 3, {}, false)], cand: { image: null, icon: null }, want: ['1:A title of 20 chars.'] },
    { name: 'img without type: main image if it fits', assets: [img(5, 0, { wmin: 20, hmin: 30 })], want: ['5:img 1200x627'] },
    { name: 'img without type: else the icon', assets: [img(5, 0, { w: 80, h: 80 })], want: ['5:img 80x80'] },
    { name: 'data sponsored / desc / ctatext', assets: [data(6, 1, 25), data(7, 2, 140), data(8, 12, 15)], want: ['6:Brand', '7:A description.', '8:Shop now'] },
    { name: 'required sponsored too long → reject', assets: [data(6, 1, 4)], want: 'native_assets' },
    { name: 'required desc, creative has none → reject', assets: [data(7, 2, 0)], cand: { description: '' }, want: 'native_assets' },
    { name: 'unsupported data type (rating) required → reject', assets: [title(1, 90), data(9, 3, 0)], want: 'native_assets' },
    { name: 'unsupported data type optional → omitted', assets: [title(1, 90), data(9, 3, 0, false)], want: ['1:A title of 20 chars.'] },
    { name: 'native video asset required → reject', assets: [title(1, 90), videoAsset(10)], want: 'native_assets' },
    { name: 'native video asset optional → omitted', assets: [videoAsset(10, false), title(1, 90)], want: ['1:A title of 20 chars.'] },
    { name: 'unsupported img type required → reject', assets: [img(11, 500, {})], want: 'native_assets' },
    { name: 'all assets optional and none fillable → reject', assets: [videoAsset(10, false), data(9, 3, 0, false)], want: 'native_assets' },
    { name: 'no assets at all → reject', assets: [], want: 'native_assets' },
    {
      name: 'fills follow request order, ids echoed',
      assets: [data(127, 2, 140), img(124, 1, { wmin: 50, hmin: 50 }), title(123, 140), img(128, 3, { wmin: 836, hmin: 627 }, false), data(126, 1, 25)],
      want: ['127:A description.', '124:img 80x80', '123:A title of 20 chars.', '128:img 1200x627', '126:Brand'],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = plan([nat('n', c.cand)], c.assets);
      if (typeof c.want === 'string') assert.equal(r, c.want);
      else assert.deepEqual(fills(r), c.want);
    });
  }

  it('image fills carry the creative image itself (url, w, h)', () => {
    const r = plan([nat('n')], [img(3, 3, {})]);
    assert.ok(typeof r === 'object' && r.native);
    assert.deepEqual(r.native[0], { assetId: 3, kind: NativeAssetKind.Img, text: '', img: { url: 'https://cdn.example/n-main.jpg', w: 1200, h: 627 } });
  });

  it('the best candidate that can fill the required assets wins over a pricier one that cannot', () => {
    const r = plan([nat('textonly', { image: null, icon: null }, 3), nat('full', {}, 1)], [title(1, 90), img(2, 3, { w: 1200, h: 627 })]);
    assert.ok(typeof r === 'object');
    assert.equal(r.candidate.id, 'full');
  });

  it('a pricier candidate whose sponsoredBy is too long loses to one that fits', () => {
    const r = plan([nat('long', { sponsoredBy: 'The International Wool Company Ltd.' }, 3), nat('short', {}, 1)], [title(1, 90), data(2, 1, 25)]);
    assert.ok(typeof r === 'object');
    assert.equal(r.candidate.id, 'short');
  });

  it('native battr applies to native candidates', () => {
    const base = nat('n');
    const r = select(new CandidateIndex([{ ...base, attr: [14] }]), imp({ native: nativeImp([title(1, 90)], [14]) }), bidRequest(), 'USD');
    assert.equal(r, 'battr');
  });
});
