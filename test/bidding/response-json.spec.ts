/**
 * The bid response is built by concatenation, skipping JSON escaping for parts known to need none
 * (src/bidding/response-json.ts). These tests feed it the parts that do need escaping, from the
 * campaigns and from the configuration, and check the answers are still exact JSON.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trackingUrls } from '../../src/bidding/markup';
import { isJsonSafe, nativeAdm, nativeAdmLiteral } from '../../src/bidding/response-json';
import { NativeAssetKind, type NativeImp } from '../../src/openrtb/types';
import type { NativeFill } from '../../src/targeting/types';
import { startTestApp, type TestApp } from '../support/app';
import { postBid } from '../support/bid';
import { referenceNativeAdm } from '../support/reference-bid';

describe('isJsonSafe', () => {
  const cases: Array<[string, boolean]> = [
    ['https://cdn.example/a.png?x=1&amp;y=2', true],
    ["<a href='x'>ü ✓ 新</a>", true],
    ['say "hi"', false],
    ['back\\slash', false],
    ['tab\there', false],
    ['\u0000', false],
    ['lone \ud800 surrogate', false],
    ['', true],
  ];
  for (const [s, safe] of cases) {
    it(`${JSON.stringify(s)} → ${safe}`, () => {
      assert.equal(isJsonSafe(s), safe);
      assert.equal(JSON.stringify(s) === `"${s}"`, safe);
    });
  }
});

describe('nativeAdmLiteral: the native markup written in its escaped form', () => {
  const safeUrls = trackingUrls('https://t.example/t/click?p=AbC-_9&s=xY', 'https://t.example/t/imp?p=AbC-_9&s=xY');
  const quotedUrls = trackingUrls('https://t.example/"q"/t/click?p=A&s=x', 'https://t.example/"q"/t/imp?p=A&s=x');
  const imps: NativeImp[] = [];
  for (const ver of ['1.0', '1.1', '1.2', '1.2.1', '1.3', ''])
    for (const eventtrackers of [null, [{ event: 1, methods: [1] }], [{ event: 1, methods: [2] }, { event: 2, methods: [1] }]])
      imps.push({ ver, assets: [], eventtrackers, battr: [] });
  // Deterministic pseudo-random strings over an alphabet that has every kind of character JSON cares about.
  const ALPHABET = ['a', 'Z', '0', ' ', '/', '&', "'", '<', '"', '\\', '\n', '\t', '\u0000', '\u001f', '\u2028', '✓', '新', '\ud83d\ude00', '\ud800', '\udfff'];
  let seed = 42;
  const rnd = (n: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const text = (safe: boolean): string => {
    let out = '';
    const len = rnd(12);
    for (let i = 0; i < len; i++) out += ALPHABET[rnd(safe ? 8 : ALPHABET.length)];
    return out;
  };
  const fillSet = (safe: boolean): NativeFill[] => [
    { assetId: 1 + rnd(300), kind: NativeAssetKind.Title, text: text(safe), img: null },
    { assetId: 2, kind: NativeAssetKind.Img, text: '', img: { url: `https://cdn.example/${text(safe)}.jpg`, w: 1200, h: 627 } },
    { assetId: 3, kind: NativeAssetKind.Img, text: '', img: null },
    { assetId: 4, kind: NativeAssetKind.Video, text: '', img: null },
    { assetId: 5, kind: NativeAssetKind.Data, text: text(safe), img: null },
  ];

  it('both forms equal an object serialized by JSON.stringify, for every version, tracker choice and kind of string', () => {
    let direct = 0;
    for (let round = 0; round < 400; round++) {
      const safe = round % 2 === 0;
      const fills = fillSet(safe);
      const some = fills.filter(() => rnd(3) > 0);
      for (const imp of imps) {
        for (const [urls, urlsSafe] of [[safeUrls, true], [safeUrls, false], [quotedUrls, false]] as const) {
          for (const f of [fills, some, []]) {
            const plain = referenceNativeAdm(imp, f, urls);
            assert.equal(nativeAdm(imp, f, urls), plain);
            assert.equal(nativeAdmLiteral(imp, f, urls, urlsSafe), JSON.stringify(plain), `${imp.ver} ${JSON.stringify(imp.eventtrackers)} ${JSON.stringify(f)}`);
            if (urlsSafe && f.every((x) => isJsonSafe(x.text) && (x.img === null || isJsonSafe(x.img.url)))) direct++;
          }
        }
      }
    }
    // The direct form, not the fallback, was what most of the safe cases compared.
    assert.ok(direct > 5000, `direct ${direct}`);
  });
});

const AWKWARD = 'Say "hi" \\ to\ttabs </script> \u2028 ✓';
const campaigns = {
  version: 1,
  currency: 'USD',
  campaigns: [
    {
      id: 'cmp-"q"',
      name: 'awkward strings',
      adomain: ['awkward.example'],
      cat: ['IAB1'],
      landingUrl: 'https://awkward.example/?q="x"',
      budget: { total: 1000, daily: 100 },
      targeting: { inventory: null, deviceTypes: [], os: [], countries: [] },
      creatives: [
        { id: 'cr-banner-"1"', type: 'banner', price: 2, attr: [], banner: { w: 300, h: 250, imageUrl: 'https://cdn.awkward.example/a"c.png?k=b\\c' } },
        {
          id: 'cr-video-"2"',
          type: 'video',
          price: 2,
          attr: [],
          video: { mimes: ['video/mp4'], duration: 15, protocols: [2, 3, 7], w: 640, h: 360, mediaUrl: 'https://cdn.awkward.example/v"1".mp4?t=a\\b', bitrate: 800 },
        },
        {
          id: 'cr-native-3',
          type: 'native',
          price: 2,
          attr: [],
          native: { title: AWKWARD, description: AWKWARD, sponsoredBy: 'A "sponsor"', cta: 'Go', image: { url: 'https://cdn.awkward.example/i.png', w: 1200, h: 627 } },
        },
      ],
    },
  ],
};

describe('bid responses with strings that need JSON escaping', () => {
  let t: TestApp;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-json-'));
    const file = path.join(dir, 'campaigns.json');
    fs.writeFileSync(file, JSON.stringify(campaigns));
    // TRACKING_BASE_URL is scheme, host and port only (a path is refused, issue 23): it holds no
    // character that needs escaping; the campaigns' strings do.
    t = await startTestApp({ CAMPAIGNS_FILE: file, TRACKING_BASE_URL: 'http://127.0.0.1:9' });
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function bid(imp: object): Promise<{ adm: string; crid: string; cid: string; nurl: string }> {
    const r = await postBid<{ adm: string; crid: string; cid: string; nurl: string }>(t.url, { id: 'j-1', imp: [{ id: '1', ...imp }], site: { domain: 'a.example' } }, 200);
    // Exactly what JSON.stringify would have written.
    assert.equal(r.text, JSON.stringify(JSON.parse(r.text)));
    return r.bids[0];
  }

  it('banner', async () => {
    const b = await bid({ banner: { w: 300, h: 250 } });
    assert.equal(b.crid, 'cr-banner-"1"');
    assert.equal(b.cid, 'cmp-"q"');
    // Campaign URLs are stored normalized (the quote percent-encoded); a backslash in a query stays.
    assert.ok(b.adm.includes('a%22c.png?k=b\\c'), b.adm);
    assert.ok(b.nurl.startsWith('http://127.0.0.1:9/t/win?p='));
    assert.ok(b.adm.includes("href='http://127.0.0.1:9/t/click?p="), b.adm);
    assert.ok(b.adm.includes("src='http://127.0.0.1:9/t/imp?p="), b.adm);
  });
  it('video', async () => {
    const b = await bid({ video: { mimes: ['video/mp4'], protocols: [2, 3], w: 640, h: 360, minduration: 5, maxduration: 30 } });
    assert.ok(b.adm.includes(`<![CDATA[https://cdn.awkward.example/v%221%22.mp4?t=a\\b]]>`), b.adm);
    assert.ok(b.adm.includes(`<Ad id='cr-video-&quot;2&quot;'>`), b.adm);
  });
  it('native', async () => {
    const request = JSON.stringify({ ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 90 } }, { id: 2, required: 0, data: { type: 1 } }] });
    const b = await bid({ native: { ver: '1.2', request } });
    const adm = JSON.parse(b.adm) as { assets: Array<{ id: number; title?: { text: string }; data?: { value: string } }> };
    assert.equal(adm.assets.find((a) => a.id === 1)?.title?.text.slice(0, 10), AWKWARD.slice(0, 10));
  });
});
