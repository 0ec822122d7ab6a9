import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bannerAdm, escapeHtml, trackingUrls, vastAdm } from '../../src/bidding/markup';
import { nativeAdm } from '../../src/bidding/response-json';
import { NativeAssetKind, type NativeImp } from '../../src/openrtb/types';
import type { Candidate, NativeFill } from '../../src/targeting/types';

const urls = trackingUrls('https://t.example/t/click?p=a+b$c&s=x', 'https://t.example/t/imp?p=a+b$c&s=x');

const candidate: Candidate = {
  id: 'cr-1', campaignId: 'c-1', kind: 'video', adomain: ['brand.example'], cat: ['IAB1'], attr: [], price: 1,
  landingUrl: 'https://brand.example/', secure: true, banner: { w: 300, h: 250, imageUrl: 'https://cdn.example/a.png?x=1&y=2' },
  native: null,
  video: { mimes: ['video/mp4'], duration: 30, protocols: [2, 3], w: 640, h: 360, mediaUrl: 'https://cdn.example/v.mp4', bitrate: 800 },
  targeting: { inventory: null, deviceTypes: [], os: [], countries: [] }, deals: [],
};

const fills: NativeFill[] = [
  { assetId: 123, kind: NativeAssetKind.Title, text: 'Hello', img: null },
  { assetId: 128, kind: NativeAssetKind.Img, text: '', img: { url: 'https://cdn.example/m.jpg', w: 1200, h: 627 } },
  { assetId: 126, kind: NativeAssetKind.Data, text: 'Brand', img: null },
];

function nativeImp(over: Partial<NativeImp>): NativeImp {
  return { ver: '1.2', assets: [], eventtrackers: null, battr: [], ...over };
}

describe('native assembly', () => {
  const cases: Array<{ name: string; imp: NativeImp; check: (o: Record<string, any>) => void }> = [  
    { name: 'assets echo the request ids, link is the click URL', imp: nativeImp({}), check: (o) => {
      assert.equal(o.ver, '1.2');
      assert.deepEqual(o.assets.map((a: { id: number }) => a.id), [123, 128, 126]);
      assert.deepEqual(o.assets[0], { id: 123, title: { text: 'Hello' } });
      assert.deepEqual(o.assets[1], { id: 128, img: { url: 'https://cdn.example/m.jpg', w: 1200, h: 627 } });
      assert.deepEqual(o.assets[2], { id: 126, data: { value: 'Brand' } });
      assert.equal(o.link.url, urls.click);
    } },
    { name: 'no eventtrackers in the request: legacy imptrackers', imp: nativeImp({ eventtrackers: null }), check: (o) => {
      assert.deepEqual(o.imptrackers, [urls.imp]);
      assert.equal(o.eventtrackers, undefined);
    } },
    { name: 'img impression offered: one eventtracker event 1 method 1', imp: nativeImp({ eventtrackers: [{ event: 1, methods: [1, 2] }] }), check: (o) => {
      assert.deepEqual(o.eventtrackers, [{ event: 1, method: 1, url: urls.imp }]);
      assert.equal(o.imptrackers, undefined);
    } },
    { name: 'only JS impression offered: no img tracker', imp: nativeImp({ eventtrackers: [{ event: 1, methods: [2] }, { event: 2, methods: [1] }] }), check: (o) => {
      assert.equal(o.eventtrackers, undefined);
      assert.equal(o.imptrackers, undefined);
    } },
    { name: 'Native 1.0 gets the root wrapper', imp: nativeImp({ ver: '1.0' }), check: (o) => {
      assert.equal(o.native.ver, '1.0');
      assert.equal(o.native.assets.length, 3);
      assert.equal(o.assets, undefined);
    } },
  ];
  for (const c of cases) it(c.name, () => c.check(JSON.parse(nativeAdm(c.imp, fills, urls))));
});

describe('banner and video markup', () => {
  it('banner escapes URLs in attributes and carries an impression pixel', () => {
    const adm = bannerAdm(candidate, urls);
    assert.ok(adm.includes("href='https://t.example/t/click?p=a+b$c&amp;s=x'"));
    assert.ok(adm.includes("src='https://cdn.example/a.png?x=1&amp;y=2'"));
    assert.ok(adm.includes("src='https://t.example/t/imp?p=a+b$c&amp;s=x'"));
    assert.ok(adm.includes("width='300' height='250'"));
    // Single-quoted attributes: nothing for the JSON response to escape.
    assert.ok(!adm.includes('"'));
  });
  it('VAST 4.1 inline with impression, click-through, media file and duration', () => {
    const adm = vastAdm(candidate, urls, 'bid-1', 'video/mp4');
    assert.match(adm, /^<VAST version='4\.1'><Ad id='cr-1'><InLine>/);
    assert.ok(adm.includes(`<Impression id='imp'><![CDATA[${urls.imp}]]></Impression>`));
    assert.ok(adm.includes(`<ClickThrough id='click'><![CDATA[${urls.click}]]></ClickThrough>`));
    assert.ok(adm.includes('<Duration>00:00:30.000</Duration>'));
    assert.ok(adm.includes("type='video/mp4' width='640' height='360'"));
    assert.ok(adm.includes('<AdServingId>bid-1</AdServingId>'));
  });
  it('escapeHtml covers the five specials', () => {
    assert.equal(escapeHtml(`<a href="x">'&'</a>`), '&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });
});
