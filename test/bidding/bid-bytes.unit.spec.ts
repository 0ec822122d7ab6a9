import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BidWriter } from '../../src/bidding/response-json';
import { parseBidRequest } from '../../src/openrtb/parse';
import { MType, NativeAssetKind } from '../../src/openrtb/types';
import { CandidateJson } from '../../src/targeting/candidate-json';
import type { Candidate, Match, NativeFill } from '../../src/targeting/types';
import { PayloadCodec } from '../../src/tracking/payload';
import { type ReferenceBid, ReferenceBids } from '../support/reference-bid';

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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** Tracking base URLs: a usual one, one with UTF-8, one that needs JSON, HTML and CDATA escaping wherever it goes. */
const BASES = ['http://track.example:8080', 'http://träck.example', `http://tr"a<c>k&'\\]]>\ud800.example:8080`];

/** The bid ids of a response, in order. */
function bidIds(response: Buffer): string[] {
  return (JSON.parse(response.toString('utf8')) as { seatbid: Array<{ bid: Array<{ id: string }> }> }).seatbid[0].bid.map((b) => b.id);
}

/** `writer`'s response and records equal the reference's, byte for byte. */
function assertSame(writer: BidWriter, ref: ReferenceBids, id: string, cur: string, bids: readonly ReferenceBid[], what: string): void {
  const response = writer.response();
  const want = ref.response(id, cur, bids);
  assert.equal(response.toString('utf8'), want, what);
  assert.ok(response.equals(Buffer.from(want, 'utf8')), what);
  const records = writer.records();
  assert.equal(Buffer.from(records.buf.subarray(0, records.length)).toString('utf8'), ref.records(bids), what);
  assert.equal(writer.bids, bids.length);
}

describe('the bid response written as bytes (BidWriter) against a reference made by JSON.stringify (test/support/reference-bid.ts)', () => {
  const codec = new PayloadCodec({ current: { id: 1, secret: 'test-secret-0123456789abcdef' }, accepted: [{ id: 1, secret: 'test-secret-0123456789abcdef' }], legacy: false });

  for (const base of BASES) {
    it(`the same bytes for every media type, form of markup, deal, size, DSA and string that needs escaping; base ${JSON.stringify(base)}`, () => {
      const writer = new BidWriter(base, 'dsa.example', codec);
      const ref = new ReferenceBids(base, 'dsa.example', codec);
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
                // The markups' text paths (no compiled template).
                [0, { candidate: c, mtype: MType.Banner, price: 2, dealId: null, size: null, native: null, json: { ...json, banner: null } }],
                [1, { candidate: c, mtype: MType.Video, price: 0.75, dealId: 'd2', size: null, native: null, json: { ...json, vast: null } }],
              ];
              for (const [i, m] of matches) {
                const now = 1700000000123 + n++;
                const notice = odd ? '&sh=1' : '';
                const fixed = writer.begin(req.id, 'USD');
                const size = writer.bid(req, req.imps[i], m, 'USD', now, m.price, notice);
                // What the auction counts against ANSWER_MAX_BYTES is the response's exact size.
                assert.equal(writer.response().length, fixed + size);
                const [id] = bidIds(writer.response());
                assert.match(id, UUID);
                assertSame(writer, ref, req.id, 'USD', [ref.bid(req, req.imps[i], m, 'USD', now, m.price, notice, id)], `${n}`);
              }
            }
          }
        }
      }
      assert.ok(n > 100);
    });
  }

  it('several bids, the last one taken back whenever it does not fit: the bytes of those kept, their sizes the response\'s', () => {
    const base = BASES[2];
    const writer = new BidWriter(base, '', codec);
    const ref = new ReferenceBids(base, '', codec);
    const req = parseBidRequest({ id: 'r', imp: [{ id: '1', banner: { w: 300, h: 250 } }, { id: '2', banner: { w: 300, h: 250 } }, { id: 'drei', banner: { w: 300, h: 250 } }] });
    const c = candidate('x', true);
    const m: Match = { candidate: c, mtype: MType.Banner, price: 1, dealId: null, size: { w: 300, h: 250 }, native: null, json: new CandidateJson(c) };
    let previous: [Buffer, string] | null = null;
    for (let drop = 0; drop < 8; drop++) {
      let length = writer.begin(req.id, 'EUR');
      const kept: number[] = [];
      for (let i = 0; i < 3; i++) {
        const size = writer.bid(req, req.imps[i], m, 'EUR', i, 1 + i, '');
        if ((drop >> i) & 1) {
          writer.drop();
        } else {
          kept.push(i);
          length += size;
        }
      }
      const response = writer.response();
      assert.equal(response.length, length, `dropped ${drop}`);
      const ids = kept.length === 0 ? [] : bidIds(response);
      assert.equal(ids.length, kept.length);
      assertSame(writer, ref, 'r', 'EUR', kept.map((i, k) => ref.bid(req, req.imps[i], m, 'EUR', i, 1 + i, '', ids[k])), `dropped ${drop}`);
      // A response is the caller's: the next request's writing leaves it as it was (an answer may wait
      // for the journal's commit while others are written, and the socket holds it until sent).
      if (previous !== null) assert.equal(previous[0].toString('utf8'), previous[1]);
      previous = [response, response.toString('utf8')];
    }
  });
});
