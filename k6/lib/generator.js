// Generator of realistic, varied OpenRTB 2.6 bid requests for the load test.
//
// Pure JavaScript with no k6 or Node imports, so k6 (in a SharedArray) and Node (tests, the
// report) use the same code. Requests are built once into a pool of templates; per iteration the
// script only splices in a unique id (string concatenation, k6/lib/lean.js): k6 itself already
// costs a few hundred µs of CPU per request, on the cores it shares with the servers.
//
// The mix: site and app inventory; banners (w/h or format[] lists, common and odd sizes, battr);
// native (Native 1.2 request as a JSON string, as an object, and in the Native 1.0 `{"native":…}`
// wrapper); video (mimes, durations, protocols); one to three imps per request, sometimes mixed;
// floors in USD, EUR and GBP; `cur` absent or listing one or two currencies; bcat, badv, bapp;
// GDPR/US-privacy signals; supply chains; private deals. About 8 % of requests cannot be filled
// by any sensible bidder (absurd floor, audio-only imp, private auction with an unknown deal):
// those must get 204.

/** Small, fast, seedable PRNG (mulberry32). */
export function rng(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SITES = [
  ['news', 'dailyherald-news.com', ['IAB12', 'IAB12-2']],
  ['sports', 'sportscentral.example', ['IAB17', 'IAB17-12']],
  ['cars', 'autoreview.example', ['IAB2', 'IAB2-2']],
  ['food', 'recipes-at-home.example', ['IAB8', 'IAB8-5']],
  ['tech', 'gadgetlab.example', ['IAB19', 'IAB19-6']],
  ['travel', 'wanderguide.example', ['IAB20', 'IAB20-18']],
  ['finance', 'marketwatcher.example', ['IAB13', 'IAB13-7']],
  ['health', 'wellness-today.example', ['IAB7', 'IAB7-1']],
  ['games', 'pixelarcade.example', ['IAB9', 'IAB9-30']],
  ['music', 'tunefinder.example', ['IAB1', 'IAB1-6']],
  ['home', 'homegarden.example', ['IAB10', 'IAB10-2']],
  ['fashion', 'stylefile.example', ['IAB18', 'IAB18-3']],
  ['science', 'sciencedaily-mag.example', ['IAB15', 'IAB15-10']],
  ['weather', 'forecastnow.example', ['IAB15', 'IAB15-10']],
  ['education', 'learnhub.example', ['IAB5', 'IAB5-1']],
  ['pets', 'pawsandclaws.example', ['IAB16', 'IAB16-3']],
];

const APPS = [
  ['Puzzle Blast', 'com.example.puzzleblast', '1442151911', ['IAB9', 'IAB9-30']],
  ['Weather Radar Live', 'com.example.weatherradar', '1290311234', ['IAB15', 'IAB15-10']],
  ['Daily News Reader', 'com.example.newsreader', '1098765432', ['IAB12']],
  ['Run Tracker', 'com.example.runtracker', '1176543210', ['IAB17', 'IAB7-1']],
  ['Recipe Box', 'com.example.recipebox', '1209876543', ['IAB8']],
  ['Stock Ticker Pro', 'com.example.stockticker', '1312345678', ['IAB13']],
  ['Chess Masters', 'com.example.chessmasters', '1423456789', ['IAB9', 'IAB9-7']],
  ['Podcast Player', 'com.example.podcasts', '1534567890', ['IAB1', 'IAB1-6']],
  ['Photo Editor X', 'com.example.photoeditor', '1645678901', ['IAB9', 'IAB9-23']],
  ['Ride Share Go', 'com.example.rideshare', '1756789012', ['IAB20']],
];

const DEVICES = [
  // [ua, os, osv, devicetype, make, model, w, h, app-capable]
  ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36', 'Windows', '10', 2, '', '', 1920, 1080, false],
  ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Safari/605.1.15', 'macOS', '14.4', 2, 'Apple', '', 1440, 900, false],
  ['Mozilla/5.0 (X11; Linux x86_64; rv:125.0) Gecko/20100101 Firefox/125.0', 'Linux', '', 2, '', '', 1920, 1080, false],
  ['Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1', 'iOS', '17.4', 4, 'Apple', 'iPhone', 390, 844, true],
  ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36', 'Android', '14', 4, 'Google', 'Pixel 8', 412, 915, true],
  ['Mozilla/5.0 (Linux; Android 13; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/123.0.0.0 Mobile Safari/537.36', 'Android', '13', 4, 'Samsung', 'SM-S911B', 360, 780, true],
  ['Mozilla/5.0 (iPad; CPU OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1', 'iPadOS', '17.4', 5, 'Apple', 'iPad', 820, 1180, true],
  ['Mozilla/5.0 (Linux; Android 12; BRAVIA 4K VH2) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/108.0.0.0 Safari/537.36', 'Android', '12', 3, 'Sony', 'BRAVIA', 1920, 1080, true],
];

const GEOS = [
  // [country, region, city, lat, lon, europe]
  ['USA', 'CA', 'San Francisco', 37.77, -122.42, false],
  ['USA', 'NY', 'New York', 40.71, -74.0, false],
  ['USA', 'TX', 'Austin', 30.27, -97.74, false],
  ['GBR', 'ENG', 'London', 51.51, -0.13, true],
  ['DEU', 'BE', 'Berlin', 52.52, 13.4, true],
  ['FRA', 'IDF', 'Paris', 48.86, 2.35, true],
  ['ESP', 'MD', 'Madrid', 40.42, -3.7, true],
  ['CAN', 'ON', 'Toronto', 43.65, -79.38, false],
  ['BRA', 'SP', 'Sao Paulo', -23.55, -46.63, false],
  ['IND', 'MH', 'Mumbai', 19.08, 72.88, false],
  ['JPN', '13', 'Tokyo', 35.68, 139.69, false],
  ['AUS', 'NSW', 'Sydney', -33.87, 151.21, false],
];

// Common IAB sizes weighted by how often they are offered, and a few odd ones.
const BANNER_SIZES = [
  [300, 250, 30], [728, 90, 15], [320, 50, 15], [300, 600, 8], [160, 600, 6], [970, 250, 5],
  [320, 100, 5], [336, 280, 4], [468, 60, 2], [300, 50, 3], [320, 480, 4], [970, 90, 2], [250, 250, 1],
];
const BLOCKABLE_CATS = ['IAB25', 'IAB26', 'IAB7-39', 'IAB8-18', 'IAB8-5', 'IAB9-9', 'IAB3', 'IAB11', 'IAB14', 'IAB23', 'IAB24', 'IAB19-3', 'IAB13-5', 'IAB1-7'];
const BLOCKABLE_ADV = ['competitor.example', 'casino-royale.example', 'cheapflights.example', 'megastore.example', 'fastloans.example', 'sodapop.example', 'carbrand.example', 'streamflix.example'];
const BLOCKABLE_APPS = ['com.example.rivalgame', 'com.example.casinoapp', 'com.example.dating'];
const BATTR = [1, 2, 3, 6, 8, 9, 10, 14, 17];
const VIDEO_SIZES = [[640, 360], [640, 480], [1280, 720], [1920, 1080], [320, 480], [400, 300]];
const MIMES = [['video/mp4'], ['video/mp4', 'video/webm'], ['video/mp4', 'application/javascript'], ['video/mp4', 'video/ogg', 'video/webm', 'video/3gpp']];
const PROTOCOLS = [[2, 3, 5, 6], [2, 3, 5, 6, 7, 8], [3, 6], [2, 5, 7]];
const EXCHANGES = ['exchange-a.example', 'ssp-b.example', 'adx-c.example'];

function hex(r, n) {
  let s = '';
  for (let i = 0; i < n; i++) s += '0123456789abcdef'[Math.floor(r() * 16)];
  return s;
}

function pick(r, arr) {
  return arr[Math.floor(r() * arr.length)];
}

function weighted(r, arr) {
  let total = 0;
  for (const e of arr) total += e[e.length - 1];
  let x = r() * total;
  for (const e of arr) {
    x -= e[e.length - 1];
    if (x < 0) return e;
  }
  return arr[arr.length - 1];
}

function some(r, arr, min, max) {
  const n = min + Math.floor(r() * (max - min + 1));
  const copy = arr.slice();
  const out = [];
  while (out.length < n && copy.length) out.push(copy.splice(Math.floor(r() * copy.length), 1)[0]);
  return out;
}

function round2(x) {
  return Math.round(x * 100) / 100;
}

function bannerImp(r, app) {
  const banner = {};
  if (r() < 0.45) {
    const first = weighted(r, BANNER_SIZES);
    const fmts = [first];
    if (r() < 0.6) fmts.push(weighted(r, BANNER_SIZES));
    if (r() < 0.2) fmts.push(weighted(r, BANNER_SIZES));
    banner.format = [];
    for (const f of fmts) if (!banner.format.some((x) => x.w === f[0] && x.h === f[1])) banner.format.push({ w: f[0], h: f[1] });
  } else if (r() < 0.04) {
    banner.w = 1;
    banner.h = 1; // an odd size that few campaigns carry
  } else {
    const s = weighted(r, BANNER_SIZES);
    banner.w = s[0];
    banner.h = s[1];
  }
  banner.pos = pick(r, [0, 1, 3]);
  if (r() < 0.4) banner.battr = some(r, BATTR, 1, 3);
  if (r() < 0.3) banner.btype = [4];
  if (app && r() < 0.5) banner.api = [3, 5];
  return { banner, mt: [1] };
}

function nativeRequest(r) {
  const assets = [];
  const titleLen = pick(r, [25, 50, 90, 140]);
  assets.push({ id: 1, required: 1, title: { len: titleLen } });
  const img = r() < 0.5 ? { type: 3, w: 1200, h: 627 } : { type: 3, wmin: pick(r, [300, 600]), hmin: pick(r, [157, 250, 314]) };
  assets.push({ id: 2, required: r() < 0.7 ? 1 : 0, img });
  if (r() < 0.5) assets.push({ id: 3, required: 0, img: { type: 1, wmin: 50, hmin: 50 } });
  assets.push({ id: 4, required: r() < 0.4 ? 1 : 0, data: { type: 2, len: pick(r, [90, 140, 200]) } });
  if (r() < 0.7) assets.push({ id: 5, required: 0, data: { type: 1, len: 25 } });
  if (r() < 0.3) assets.push({ id: 6, required: 0, data: { type: 12, len: 15 } });
  const req = {
    ver: '1.2',
    context: pick(r, [1, 2]),
    contextsubtype: pick(r, [10, 11, 12]),
    plcmttype: pick(r, [1, 2, 4]),
    plcmtcnt: 1,
    assets,
  };
  if (r() < 0.8) req.eventtrackers = [{ event: 1, methods: r() < 0.7 ? [1, 2] : [1] }];
  if (r() < 0.3) req.privacy = 1;
  return req;
}

function nativeImp(r) {
  const req = nativeRequest(r);
  const form = r();
  // Exchanges send native.request as a JSON string (the spec), as an object, or with the
  // Native 1.0 root wrapper (Native 1.0/1.1 habit: {"native": …}).
  let request;
  if (form < 0.65) request = JSON.stringify(req);
  else if (form < 0.85) request = req;
  else request = JSON.stringify({ native: req });
  const native = { request, ver: '1.2' };
  if (r() < 0.4) native.battr = some(r, BATTR, 1, 2);
  return { native, mt: [4] };
}

function videoImp(r, app) {
  const s = app && r() < 0.5 ? [320, 480] : pick(r, VIDEO_SIZES);
  const maxd = pick(r, [15, 30, 30, 60, 120]);
  const video = {
    mimes: pick(r, MIMES),
    minduration: pick(r, [0, 5, 6]),
    maxduration: maxd,
    protocols: pick(r, PROTOCOLS),
    w: s[0],
    h: s[1],
    startdelay: pick(r, [0, 0, -1, -2]),
    placement: pick(r, [1, 1, 3, 4]),
    plcmt: pick(r, [1, 2, 3]),
    linearity: 1,
    skip: r() < 0.5 ? 1 : 0,
    playbackmethod: [pick(r, [1, 2, 6])],
    api: [2, 7],
  };
  if (r() < 0.3) video.battr = some(r, BATTR, 1, 2);
  if (r() < 0.5) video.maxbitrate = pick(r, [1500, 2500, 4000]);
  return { video, mt: [2] };
}

function floorFor(r) {
  const p = r();
  if (p < 0.35) return null; // no floor
  const cur = r() < 0.72 ? 'USD' : r() < 0.75 ? 'EUR' : 'GBP';
  return { bidfloor: round2(0.05 + r() * r() * 3), bidfloorcur: cur };
}

/**
 * Builds one bid request (without `id`) and what the checks need to know about it.
 * @returns {{ req: object, meta: { imps: {id: string, mt: number[], floor: number, fcur: string}[], cur: string[], nofill: string, inv: string } }}
 */
export function makeRequest(r) {
  const app = r() < 0.4;
  const dev = app ? pick(r, DEVICES.filter((d) => d[8])) : pick(r, DEVICES);
  const geo = pick(r, GEOS);
  const nimps = r() < 0.7 ? 1 : r() < 0.67 ? 2 : 3;
  const imps = [];
  const meta = { imps: [], cur: [], nofill: '', inv: app ? 'app' : 'site' };

  // One in ~12 requests is built to be unfillable.
  const unfill = r() < 0.085 ? pick(r, ['floor', 'audio', 'deal']) : '';
  meta.nofill = unfill;

  for (let i = 0; i < nimps; i++) {
    const imp = { id: String(i + 1) };
    const kind = r();
    let made;
    if (unfill === 'audio') {
      made = { audio: { mimes: ['audio/mp4', 'audio/mpeg'], minduration: 5, maxduration: 30, protocols: [2, 3] }, mt: [3] };
    } else if (kind < 0.5) made = bannerImp(r, app);
    else if (kind < 0.8) made = nativeImp(r);
    else if (kind < 0.93) made = videoImp(r, app);
    else {
      // Both banner and video offered on one imp (outstream-style multi-format).
      const b = bannerImp(r, app);
      const v = videoImp(r, app);
      made = { banner: b.banner, video: v.video, mt: [1, 2] };
    }
    if (made.banner) imp.banner = made.banner;
    if (made.native) imp.native = made.native;
    if (made.video) imp.video = made.video;
    if (made.audio) imp.audio = made.audio;
    imp.tagid = `${app ? 'app' : 'div-gpt-ad'}-${hex(r, 6)}-${i}`;
    imp.secure = r() < 0.85 ? 1 : 0;
    if (app && r() < 0.2) imp.instl = 1;
    let floor = floorFor(r);
    if (unfill === 'floor') floor = { bidfloor: 5000, bidfloorcur: 'USD' };
    if (floor) {
      imp.bidfloor = floor.bidfloor;
      if (floor.bidfloorcur !== 'USD' || r() < 0.6) imp.bidfloorcur = floor.bidfloorcur;
    }
    if (unfill === 'deal') {
      imp.pmp = { private_auction: 1, deals: [{ id: `unknown-deal-${hex(r, 8)}`, bidfloor: 2.5, bidfloorcur: 'USD', at: 1 }] };
    } else if (r() < 0.08) {
      // Open auction with an (unknown to us) preferred deal offered alongside.
      imp.pmp = { private_auction: 0, deals: [{ id: `deal-${hex(r, 6)}`, bidfloor: round2(1 + r() * 4), bidfloorcur: 'USD', at: 1 }] };
    }
    if (r() < 0.3) imp.exp = 300;
    imps.push(imp);
    meta.imps.push({ id: imp.id, mt: made.mt, floor: floor ? floor.bidfloor : 0, fcur: floor ? floor.bidfloorcur : 'USD' });
  }

  const req = { imp: imps };
  if (app) {
    const a = pick(r, APPS);
    req.app = {
      id: `app-${a[2]}`,
      name: a[0],
      bundle: dev[1] === 'iOS' || dev[1] === 'iPadOS' ? a[2] : a[1],
      storeurl: dev[1] === 'iOS' || dev[1] === 'iPadOS' ? `https://apps.apple.com/app/id${a[2]}` : `https://play.google.com/store/apps/details?id=${a[1]}`,
      cat: a[3],
      ver: `${1 + Math.floor(r() * 5)}.${Math.floor(r() * 10)}.${Math.floor(r() * 10)}`,
      publisher: { id: `pub-${hex(r, 6)}`, name: `${a[0]} Studios` },
    };
  } else {
    const s = pick(r, SITES);
    const path = `${s[0]}/${hex(r, 4)}/${pick(r, ['story', 'article', 'gallery', 'index', 'review'])}-${hex(r, 6)}.html`;
    req.site = {
      id: `site-${s[1].length}${hex(r, 3)}`,
      name: s[1],
      domain: s[1],
      cat: s[2],
      page: `https://www.${s[1]}/${path}`,
      ref: r() < 0.5 ? `https://www.google.com/search?q=${s[0]}` : `https://www.${s[1]}/`,
      publisher: { id: `pub-${hex(r, 6)}`, name: s[1].split('.')[0] },
      mobile: dev[3] === 4 ? 1 : 0,
    };
    if (r() < 0.5) req.site.keywords = `${s[0]},${pick(r, ['today', 'latest', 'top', 'best'])}`;
  }
  req.device = {
    ua: dev[0],
    ip: `${Math.floor(r() * 223) + 1}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}.${Math.floor(r() * 256)}`,
    geo: { country: geo[0], region: geo[1], city: geo[2], lat: geo[3], lon: geo[4], type: 2 },
    devicetype: dev[3],
    os: dev[1],
    js: 1,
    language: pick(r, ['en', 'en', 'de', 'fr', 'es', 'pt', 'ja']),
    connectiontype: pick(r, [2, 2, 6, 7]),
    w: dev[6],
    h: dev[7],
  };
  if (dev[2]) req.device.osv = dev[2];
  if (dev[4]) req.device.make = dev[4];
  if (dev[5]) req.device.model = dev[5];
  if (app) {
    req.device.ifa = `${hex(r, 8)}-${hex(r, 4)}-4${hex(r, 3)}-a${hex(r, 3)}-${hex(r, 12)}`;
    req.device.lmt = r() < 0.2 ? 1 : 0;
  }
  req.user = { id: hex(r, 32) };
  if (r() < 0.6) req.user.buyeruid = hex(r, 24);
  if (r() < 0.25) req.user.yob = 1950 + Math.floor(r() * 55);

  req.at = r() < 0.85 ? 1 : 2;
  req.tmax = pick(r, [100, 120, 150, 200, 250, 300, 500]);
  const c = r();
  if (c < 0.3) {
    /* no cur: USD (OpenRTB 2.6 §3.2.1) */
  } else if (c < 0.8) req.cur = ['USD'];
  else if (c < 0.95) req.cur = ['EUR', 'USD'];
  else req.cur = ['EUR'];
  meta.cur = req.cur ? req.cur : ['USD'];
  if (r() < 0.55) req.bcat = some(r, BLOCKABLE_CATS, 2, 6);
  if (r() < 0.4) req.badv = some(r, BLOCKABLE_ADV, 1, 3);
  if (app && r() < 0.25) req.bapp = some(r, BLOCKABLE_APPS, 1, 2);
  req.source = { tid: `${hex(r, 8)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 4)}-${hex(r, 12)}` };
  if (r() < 0.5) {
    req.source.schain = {
      complete: 1,
      ver: '1.0',
      nodes: [{ asi: pick(r, EXCHANGES), sid: hex(r, 8), hp: 1 }],
    };
    if (r() < 0.4) req.source.schain.nodes.push({ asi: pick(r, EXCHANGES), sid: hex(r, 6), hp: 1 });
  }
  req.regs = {};
  if (geo[5]) {
    req.regs.gdpr = 1;
    req.user.consent = `CP${hex(r, 40)}AAAA.YAAAAAAAAAA`;
  } else if (geo[0] === 'USA' && r() < 0.6) {
    req.regs.us_privacy = pick(r, ['1YNN', '1YNY', '1---']);
  }
  if (r() < 0.02) req.regs.coppa = 0;
  if (r() < 0.3) req.ext = { prebid: { channel: { name: app ? 'app' : 'web' } } };
  return { req, meta };
}

/**
 * A pool of request templates. Each entry holds the request serialized without its `id`
 * (`rest`, the JSON text after `{"id":"<id>",`) and the meta the checks need.
 */
export function buildPool(size, seed) {
  const r = rng(seed);
  const pool = [];
  for (let i = 0; i < size; i++) {
    const { req, meta } = makeRequest(r);
    pool.push({ rest: JSON.stringify(req).slice(1), meta });
  }
  return pool;
}

/** The request body for one pool entry and a unique id: the id comes first, as exchanges send it. */
export function bodyFor(entry, id) {
  return `{"id":"${id}",${entry.rest}`;
}
