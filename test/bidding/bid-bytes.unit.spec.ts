import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BidWriter, responseBytes } from '../../src/bidding/response-json';
import { parseBidRequest } from '../../src/openrtb/parse';
import { MType, NativeAssetKind } from '../../src/openrtb/types';
import { CandidateJson } from '../../src/targeting/candidate-json';
import type { Candidate, Match, NativeFill } from '../../src/targeting/types';
import { PayloadCodec } from '../../src/tracking/payload';

const tricky = `q"u'o<t>e&amp; Ünïcödé 日本語 🎬 \u2028 ]]> end \\ \u0001 \ud800`;

function candidate(id: string, odd: boolean): Candidate {
  const s = odd ? tricky : 'plain';
  return {
    id: `cr-${id}-${s}`, campaignId: `cmp-${s}`, kind: 'banner', adomain: [`brand-${s}.example`], cat: ['IAB1'], attr: [3], price: 1.25,
    landingUrl: 'https://brand.example/', secure: true,
    banner: { w: 300, h: 250, imageUrl: `https://cdn.example/a.png?x=1&y=${s}` },
    native: { title: `Title ${s}`, description: '', sponsoredBy: '', cta: '', image: null, icon: null },
    video: { mimes: ['video/mp4', `video/x-${s}`], duration: 30, protocols: [2, 3], w: 640, h: 360, mediaUrl: `https://cdn.example/v.mp4?b=${s}`, bitrate: 800 },
    targeting: { inventory: null, deviceTypes: [], os: [], countries: [] }, deals: [],
    dsa: { behalf: `Brand ${s}`, paid: 'Brand', adrender: 1 },
    personalized: odd,
  } as unknown as Candidate;
}

const nativeRequest = { ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 90 } }, { id: 2, required: 1, img: { type: 3, wmin: 100, hmin: 100 } }, { id: 3, data: { type: 2 } }], eventtrackers: [{ event: 1, methods: [1] }] };

function fills(odd: boolean): NativeFill[] {
  const s = odd ? tricky : 'plain';
  return [
    { assetId: 1, kind: NativeAssetKind.Title, text: `Title ${s}`, img: null },
    { assetId: 2, kind: NativeAssetKind.Img, text: '', img: { url: `https://cdn.example/i.png?${s}`, w: 1200, h: 627 } },
    { assetId: 3, kind: NativeAssetKind.Data, text: `Data ${s}`, img: null },
    { assetId: 4, kind: NativeAssetKind.Img, text: '', img: null },
  ];
}

describe('a bid written as bytes (BidWriter.bid) against its text by concatenation (bidText)', () => {
  const codec = new PayloadCodec({ current: { id: 1, secret: 'test-secret-0123456789abcdef' }, accepted: [{ id: 1, secret: 'test-secret-0123456789abcdef' }], legacy: false });
  const writer = new BidWriter('http://track.example:8080', 'dsa.example', codec);

  it('the same text for every media type, form of markup, deal, size, DSA and string that needs escaping', () => {
    let n = 0;
    for (const odd of [false, true]) {
      for (const secure of [0, 1]) {
        for (const dsa of [undefined, { dsarequired: 1, pubrender: 0, datatopub: 2 }, { dsarequired: 2, pubrender: 1, datatopub: 0 }]) {
          for (const ver of ['1.0', '1.1', '1.2']) {
            const body = {
              id: odd ? `req-${tricky}` : 'req-1',
              imp: [
                { id: odd ? `imp-${tricky}` : '1', secure, banner: { w: 300, h: 250 } },
                { id: '2', secure, video: { mimes: ['video/mp4', `video/x-${odd ? tricky : 'plain'}`], w: 640, h: 360 } },
                { id: '3', secure, native: { ver, request: JSON.stringify({ ...nativeRequest, ver, eventtrackers: ver === '1.0' ? undefined : nativeRequest.eventtrackers }) } },
              ],
              site: { domain: 'a.example', publisher: { name: odd ? tricky : 'pub' } },
              regs: dsa === undefined ? undefined : { ext: { dsa } },
              test: odd ? 1 : 0,
            };
            const req = parseBidRequest(JSON.parse(JSON.stringify(body)));
            const c = candidate(String(n), odd);
            const json = new CandidateJson(c);
            const matches: Array<[number, Match]> = [
              [0, { candidate: c, mtype: MType.Banner, price: 1.2345, dealId: odd ? `deal-${tricky}` : null, size: { w: 300, h: 250 }, native: null, json }],
              [1, { candidate: c, mtype: MType.Video, price: 0.5, dealId: null, size: null, native: null, json }],
              [2, { candidate: c, mtype: MType.Native, price: 3, dealId: 'd1', size: null, native: fills(odd), json }],
              [0, { candidate: c, mtype: MType.Banner, price: 2, dealId: null, size: null, native: null, json: { ...json, banner: null } }],
            ];
            for (const [i, m] of matches) {
              const now = 1700000000123 + n++;
              const text = writer.bid(req, req.imps[i], m, 'USD', now, m.price, odd ? '&sh=1' : '');
              const id = (JSON.parse(text) as { id: string }).id;
              assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
              assert.equal(text, writer.bidText(req, req.imps[i], m, 'USD', now, m.price, odd ? '&sh=1' : '', id));
              // The response around one bid: its bytes written from the bid's, equal to the text's.
              const idJson = JSON.stringify(req.id);
              const env = writer.envelope(idJson, 'USD', text);
              assert.deepEqual(responseBytes(env), Buffer.from(env, 'utf8'));
            }
          }
        }
      }
    }
    assert.ok(n > 100);
  });

  it('several bids: the response bytes equal its text, whichever bids the auction kept', () => {
    const req = parseBidRequest({ id: 'r', imp: [{ id: '1', banner: { w: 300, h: 250 } }, { id: '2', banner: { w: 300, h: 250 } }, { id: '3', banner: { w: 300, h: 250 } }] });
    const c = candidate('x', false);
    const m: Match = { candidate: c, mtype: MType.Banner, price: 1, dealId: null, size: { w: 300, h: 250 }, native: null, json: new CandidateJson(c) };
    for (const keep of [[0, 1, 2], [0, 1], [1, 2], [0, 2], [0], [1], [2]]) {
      // A fresh request object each time, as the auction gets one per request.
      const r = { ...req };
      const texts = [0, 1, 2].map((i) => writer.bid(r, r.imps[i], m, 'EUR', 1, 1, ''));
      const env = writer.envelope('"r"', 'EUR', keep.map((i) => texts[i]).join(','));
      const bytes = responseBytes(env);
      assert.equal(bytes.toString('utf8'), env, `kept ${keep.join(',')}`);
      assert.equal((JSON.parse(env) as { seatbid: Array<{ bid: unknown[] }> }).seatbid[0].bid.length, keep.length);
      // Handed out once: a later text is encoded.
      assert.notEqual(responseBytes(env), bytes);
    }
  });
});
