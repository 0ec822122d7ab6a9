import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { InvalidRequestError, ListSet, NativeRequestCache, parseBidRequest } from '../../src/openrtb/parse';
import { NativeAssetKind } from '../../src/openrtb/types';

const base = () => ({ id: 'r1', imp: [{ id: '1', banner: { w: 300, h: 250 } }] });
const nativeReq = { ver: '1.2', assets: [{ id: 7, required: 1, title: { len: 25 } }, { id: 8, img: { type: 3, wmin: 300, hmin: 200 } }] };

describe('parseBidRequest: lenient reading', () => {
  const cases: Array<{ name: string; body: unknown; check: (r: ReturnType<typeof parseBidRequest>) => void }> = [
    { name: 'minimal banner with defaults', body: base(), check: (r) => {
      assert.equal(r.id, 'r1');
      assert.deepEqual(r.imps[0].banner!.sizes, [{ w: 300, h: 250 }]);
      assert.equal(r.imps[0].bidfloor, 0);
      assert.equal(r.imps[0].bidfloorcur, 'USD');
      assert.equal(r.inventory, 'site');
      assert.deepEqual(r.cur, []);
    } },
    { name: 'numbers as strings', body: { id: 'r', imp: [{ id: 1, bidfloor: '0.75', secure: '1', banner: { w: '728', h: '90' } }], tmax: '120' }, check: (r) => {
      assert.equal(r.imps[0].id, '1');
      assert.equal(r.imps[0].bidfloor, 0.75);
      assert.equal(r.imps[0].secure, true);
      assert.deepEqual(r.imps[0].banner!.sizes, [{ w: 728, h: 90 }]);
      assert.equal(r.tmax, 120);
    } },
    { name: 'numeric request id', body: { id: 12345, imp: [{ id: '1', banner: {} }] }, check: (r) => assert.equal(r.id, '12345') },
    { name: 'format[] wins over w/h', body: { id: 'r', imp: [{ id: '1', banner: { w: 1, h: 1, format: [{ w: 300, h: 250 }, { w: 320, h: 50 }] } }] }, check: (r) => {
      assert.deepEqual(r.imps[0].banner!.sizes, [{ w: 300, h: 250 }, { w: 320, h: 50 }]);
    } },
    { name: 'native request as a string', body: { id: 'r', imp: [{ id: '1', native: { request: JSON.stringify(nativeReq) } }] }, check: (r) => {
      const n = r.imps[0].native!;
      assert.equal(n.assets.length, 2);
      assert.equal(n.assets[0].kind, NativeAssetKind.Title);
      assert.equal(n.assets[0].len, 25);
      assert.equal(n.assets[1].wmin, 300);
      assert.equal(n.eventtrackers, null);
    } },
    { name: 'native request as an object', body: { id: 'r', imp: [{ id: '1', native: { request: nativeReq } }] }, check: (r) => {
      assert.equal(r.imps[0].native!.assets.length, 2);
    } },
    { name: 'native 1.0 wrapper', body: { id: 'r', imp: [{ id: '1', native: { request: JSON.stringify({ native: { ver: '1.0', assets: nativeReq.assets } }) } }] }, check: (r) => {
      assert.equal(r.imps[0].native!.ver, '1.0');
      assert.equal(r.imps[0].native!.assets[0].id, 7);
    } },
    { name: 'unparseable native string: no native, no error', body: { id: 'r', imp: [{ id: '1', native: { request: '...' } }] }, check: (r) => {
      assert.equal(r.imps[0].native, null);
    } },
    { name: 'cur as a lone string, upper-cased', body: { ...base(), cur: 'eur' }, check: (r) => assert.deepEqual(r.cur, ['EUR']) },
    { name: 'badv lower-cased', body: { ...base(), badv: ['Example.COM'] }, check: (r) => assert.deepEqual([...r.badv], ['example.com']) },
    { name: 'app inventory with bundle, device, geo', body: { ...base(), app: { bundle: 'com.x', publisher: { name: 'Pub' } }, device: { devicetype: '4', os: 'iOS', geo: { country: 'usa' }, ifa: 'ifa-1' } }, check: (r) => {
      assert.equal(r.inventory, 'app');
      assert.equal(r.bundle, 'com.x');
      assert.equal(r.publisher, 'Pub');
      assert.equal(r.deviceType, 4);
      assert.equal(r.os, 'ios');
      assert.equal(r.country, 'USA');
      assert.equal(r.userId, 'ifa-1');
    } },
    { name: 'deal floor currency does not inherit the imp currency', body: { id: 'r', imp: [{ id: '1', bidfloorcur: 'EUR', banner: {}, pmp: { private_auction: true, deals: [{ id: 'd1', bidfloor: 2 }] } }] }, check: (r) => {
      const pmp = r.imps[0].pmp!;
      assert.equal(pmp.privateAuction, true);
      assert.deepEqual(pmp.deals, [{ id: 'd1', bidfloor: 2, bidfloorcur: 'USD' }]);
    } },
    { name: 'video with legacy protocol', body: { id: 'r', imp: [{ id: '1', video: { mimes: ['video/MP4'], protocol: 2, protocols: [3], maxduration: '30' } }] }, check: (r) => {
      const v = r.imps[0].video!;
      assert.deepEqual(v.mimes, ['video/mp4']);
      assert.deepEqual(v.protocols, [3, 2]);
      assert.equal(v.maxduration, 30);
    } },
    { name: 'unknown fields are ignored', body: { ...base(), ext: { x: 1 }, source: { schain: {} }, foo: [1, 2] }, check: (r) => assert.equal(r.imps.length, 1) },
  ];
  for (const c of cases) it(c.name, () => c.check(parseBidRequest(c.body)));
});

describe('parseBidRequest: rejects what cannot be bid on', () => {
  const cases: Array<{ name: string; body: unknown; reason: RegExp }> = [
    { name: 'array body', body: [], reason: /JSON object/ },
    { name: 'string body', body: 'x', reason: /JSON object/ },
    { name: 'null body', body: null, reason: /JSON object/ },
    { name: 'no id', body: { imp: [{ id: '1' }] }, reason: /^id is required/ },
    { name: 'empty id', body: { id: '', imp: [{ id: '1' }] }, reason: /^id is required/ },
    { name: 'object id', body: { id: {}, imp: [{ id: '1' }] }, reason: /id must be a string/ },
    { name: 'no imp', body: { id: 'r' }, reason: /imp is required/ },
    { name: 'imp not an array', body: { id: 'r', imp: {} }, reason: /imp must be an array/ },
    { name: 'empty imp', body: { id: 'r', imp: [] }, reason: /imp must not be empty/ },
    { name: 'imp without id', body: { id: 'r', imp: [{ banner: {} }] }, reason: /imp\[0\]\.id is required/ },
    { name: 'imp not an object', body: { id: 'r', imp: [3] }, reason: /imp\[0\] must be an object/ },
    { name: 'bidfloor not a number', body: { id: 'r', imp: [{ id: '1', bidfloor: 'cheap' }] }, reason: /imp\[0\]\.bidfloor must be a number/ },
    { name: 'negative bidfloor', body: { id: 'r', imp: [{ id: '1', bidfloor: -1 }] }, reason: /must not be negative/ },
    { name: 'banner not an object', body: { id: 'r', imp: [{ id: '1', banner: 'big' }] }, reason: /imp\[0\]\.banner must be an object/ },
    { name: 'format not an array', body: { id: 'r', imp: [{ id: '1', banner: { format: 5 } }] }, reason: /format must be an array/ },
    { name: 'bcat of objects', body: { id: 'r', imp: [{ id: '1' }], bcat: [{}] }, reason: /bcat\[0\] must be a string/ },
    { name: 'site not an object', body: { id: 'r', imp: [{ id: '1' }], site: 'x' }, reason: /site must be an object/ },
    { name: 'secure neither 0 nor 1', body: { id: 'r', imp: [{ id: '1', secure: 'maybe' }] }, reason: /secure must be 0 or 1/ },
    { name: 'a format entry not an object', body: { id: 'r', imp: [{ id: '1', banner: { format: [{ w: 1, h: 1 }, 7] } }] }, reason: /^imp\[0\]\.banner\.format\[1\] must be an object$/ },
    { name: 'a format width not a number', body: { id: 'r', imp: [{ id: '1' }, { id: '2', banner: { format: [{ w: 'x', h: 1 }] } }] }, reason: /^imp\[1\]\.banner\.format\[0\]\.w must be a number$/ },
    { name: 'a deal not an object', body: { id: 'r', imp: [{ id: '1', pmp: { deals: [{ id: 'd' }, 'x'] } }] }, reason: /^imp\[0\]\.pmp\.deals\[1\] must be an object$/ },
    { name: 'video mimes not strings', body: { id: 'r', imp: [{ id: '1', video: { mimes: [{}] } }] }, reason: /^imp\[0\]\.video\.mimes\[0\] must be a string$/ },
    // Paths past the first 16 imps and entries (made when needed, not kept).
    {
      name: 'the 21st imp, its 18th format',
      body: { id: 'r', imp: [...Array.from({ length: 20 }, (_, i) => ({ id: String(i) })), { id: 'x', banner: { format: [...Array.from({ length: 17 }, () => ({ w: 1, h: 1 })), { w: 1, h: -1 }] } }] },
      reason: /^imp\[20\]\.banner\.format\[17\]\.h must not be negative$/,
    },
    { name: 'the 18th deal of the 3rd imp', body: { id: 'r', imp: [{ id: '1' }, { id: '2' }, { id: '3', pmp: { deals: [...Array.from({ length: 17 }, (_, i) => ({ id: `d${i}` })), { id: 'd', bidfloor: 'x' }] } }] }, reason: /^imp\[2\]\.pmp\.deals\[17\]\.bidfloor must be a number$/ },
  ];
  for (const c of cases) {
    it(c.name, () => {
      assert.throws(() => parseBidRequest(c.body), (e: unknown) => e instanceof InvalidRequestError && c.reason.test(e.reason));
    });
  }
});

describe('parseBidRequest: native requests read once per text (NativeRequestCache)', () => {
  const natives = new NativeRequestCache();
  const text = JSON.stringify({ ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 40 } }], eventtrackers: [{ event: 1, methods: [1] }] });
  const body = (battr?: number[], ver?: string) => ({ id: 'r', imp: [{ id: '1', native: { request: text, ...(battr ? { battr } : {}), ...(ver ? { ver } : {}) } }] });
  it('gives the same reading for the same text, with each imp keeping its own battr', () => {
    const a = parseBidRequest(body([1]), natives).imps[0].native!;
    const b = parseBidRequest(body([2, 3]), natives).imps[0].native!;
    assert.deepEqual(a.assets, b.assets);
    assert.deepEqual(a.battr, [1]);
    assert.deepEqual(b.battr, [2, 3]);
    assert.equal(a.ver, '1.2');
    assert.equal(a.assets, b.assets, 'one reading, kept');
    assert.equal(natives.size, 1);
  });
  it('reads the same without a cache (nothing kept between requests)', () => {
    const a = parseBidRequest(body([1])).imps[0].native!;
    const b = parseBidRequest(body([1])).imps[0].native!;
    assert.deepEqual(a, b);
    assert.notEqual(a.assets, b.assets);
  });
  it('shares a frozen reading: one request cannot change what the next one reads', () => {
    const a = parseBidRequest(body(), natives).imps[0].native!;
    assert.ok(Object.isFrozen(a.assets) && Object.isFrozen(a.assets[0]));
    assert.throws(() => (a.assets as Array<unknown>).push({}));
    assert.equal(parseBidRequest(body(), natives).imps[0].native!.assets.length, 1);
  });
  it('rejects an invalid text every time (errors are not kept)', () => {
    const bad = JSON.stringify({ ver: '1.2', assets: [{ id: 'one', required: 1, title: { len: 40 } }] });
    for (let i = 0; i < 2; i++) {
      assert.throws(
        () => parseBidRequest({ id: 'r', imp: [{ id: '1', native: { request: bad } }] }, natives),
        (e: unknown) => e instanceof InvalidRequestError && e.reason.includes('imp[0].native.request.assets[0].id'),
      );
    }
  });
  it('reads long texts (past what the cache keeps) all the same', () => {
    const long = JSON.stringify({ ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 40 } }], ext: { pad: 'x'.repeat(10_000) } });
    for (let i = 0; i < 2; i++) {
      const n = parseBidRequest({ id: 'r', imp: [{ id: '1', native: { request: long, battr: [i] } }] }, natives).imps[0].native!;
      assert.equal(n.assets.length, 1);
      assert.deepEqual(n.battr, [i]);
    }
  });
  it('keeps more texts than one rotation of a large publisher sends: 1000 distinct texts read twice are read once', () => {
    const cache = new NativeRequestCache();
    const texts = Array.from({ length: 1000 }, (_, i) => JSON.stringify({ ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 25 + i } }] }));
    const read = (t: string) => parseBidRequest({ id: 'r', imp: [{ id: '1', native: { request: t } }] }, cache).imps[0].native!.assets;
    const first = texts.map(read);
    const second = texts.map(read);
    assert.equal(second.filter((a, i) => a === first[i]).length, 1000, 'every second reading is the kept one');
    assert.equal(cache.size, 1000);
  });
  it('stays within its character bound, oldest out', () => {
    const cache = new NativeRequestCache();
    const text = (i: number) => JSON.stringify({ ver: '1.2', assets: [{ id: 1, required: 1, title: { len: 40 } }], ext: { i, pad: 'x'.repeat(7_000) } });
    const read = (i: number) => parseBidRequest({ id: 'r', imp: [{ id: '1', native: { request: text(i) } }] }, cache).imps[0].native!.assets;
    for (let i = 0; i < 400; i++) read(i);
    assert.ok(cache.chars <= 2 * 1024 * 1024, `${cache.chars} characters kept`);
    assert.ok(cache.size < 400 && cache.size > 250, `${cache.size} texts kept`);
    assert.equal(read(399), read(399), 'the newest is kept');
    const n = cache.size;
    read(0);
    assert.equal(cache.size, n, 'the oldest went: reading it again put it back and pushed another out');
  });
  it('reads the text again when the outer native version differs', () => {
    const plain = JSON.stringify({ assets: [{ id: 1, required: 1, title: { len: 40 } }] });
    const v = (ver: string) => parseBidRequest({ id: 'r', imp: [{ id: '1', native: { request: plain, ver } }] }, natives).imps[0].native!.ver;
    assert.equal(v('1.1'), '1.1');
    assert.equal(v('1.2'), '1.2');
  });
});

describe('block lists as read (ListSet)', () => {
  it('answer has, size, forEach and iteration as a Set of the entries, short or long', () => {
    for (const n of [1, 2, 4, 5, 40]) {
      const list = Array.from({ length: n }, (_, i) => `iab${i}`);
      const req = parseBidRequest({ id: 'r', imp: [{ id: '1' }], bcat: list.map((c) => c.toUpperCase()), badv: list.map((c) => `www.${c}.example`), bapp: list });
      assert.ok(req.bcat instanceof ListSet);
      const want = new Set(list);
      assert.equal(req.bcat.size, n);
      for (const c of list) assert.ok(req.bcat.has(c) && req.bapp.has(c) && req.badv.has(`${c}.example`));
      assert.ok(!req.bcat.has('iab') && !req.bcat.has(`iab${n}`) && !req.badv.has(`www.iab0.example`));
      assert.deepEqual(new Set(req.bcat), want);
      assert.deepEqual([...req.bcat.keys()], list);
      const seen: string[] = [];
      req.bcat.forEach((v) => seen.push(v));
      assert.deepEqual(seen, list);
    }
    assert.equal(parseBidRequest({ id: 'r', imp: [{ id: '1' }] }).bcat.size, 0);
  });

  it('currencies are upper-cased, the list kept as read when it already is', () => {
    assert.deepEqual(parseBidRequest({ id: 'r', imp: [{ id: '1' }], cur: ['usd', 'EUR'] }).cur, ['USD', 'EUR']);
    assert.deepEqual(parseBidRequest({ id: 'r', imp: [{ id: '1' }], cur: ['USD'] }).cur, ['USD']);
  });
});
