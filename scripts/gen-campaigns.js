#!/usr/bin/env node
'use strict';
// Generates data/campaigns.demo.json: ~200 candidate creatives over ~40 campaigns, deterministic
// (seeded PRNG, no clock, no dependencies). Run: `node scripts/gen-campaigns.js [out-file]`.
// The format is described in data/README.md and validated by src/targeting/loader.ts.
//
// A few "anchor" campaigns are written by hand so that the sample requests in
// openrtb-samples/ get bids (deal ids, floors, sizes, native shapes, video durations); the rest
// are drawn from the PRNG for variety (sizes, prices, targeting, attributes).
const fs = require('node:fs');
const path = require('node:path');
const { readCommandLine } = require('./lib/cli');

const { positionals } = readCommandLine({
  name: 'gen-campaigns',
  usage: 'usage: node scripts/gen-campaigns.js [out-file]   (default: data/campaigns.demo.json)',
  allowPositionals: true,
  maxPositionals: 1,
});

const SEED = 20250102;

/** mulberry32: small, fast, good enough for demo data. */
function prng(seed) {
  let a = seed >>> 0;
  return function next() {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = prng(SEED);
const pick = (arr) => arr[Math.floor(rnd() * arr.length)];
const chance = (p) => rnd() < p;
const intIn = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
/** CPM in USD with 2 decimals, inside [lo, hi]. */
const cpm = (lo, hi) => Math.round((lo + rnd() * (hi - lo)) * 100) / 100;

const CDN = 'https://cdn.demo-dsp.example';
const BANNER_SIZES = [
  [300, 250],
  [728, 90],
  [320, 50],
  [300, 600],
  [160, 600],
  [320, 480],
];

// Advertisers: real-world-looking brands with IAB 2.x content categories; `bundle` marks an
// advertised app (checked against bcat's sibling `bapp`).
const ADVERTISERS = [
  { brand: 'Nike', domain: 'nike.com', cat: ['IAB17', 'IAB18-5'], path: 'running' },
  { brand: 'Adidas', domain: 'adidas.com', cat: ['IAB17', 'IAB18-5'], path: 'originals' },
  { brand: 'Booking.com', domain: 'booking.com', cat: ['IAB20-13'], path: 'deals', bundle: 'com.booking' },
  { brand: 'Expedia', domain: 'expedia.com', cat: ['IAB20'], path: 'vacation-packages', bundle: 'com.expedia.bookings' },
  { brand: 'Spotify', domain: 'spotify.com', cat: ['IAB1-6'], path: 'premium', bundle: 'com.spotify.music' },
  { brand: 'Netflix', domain: 'netflix.com', cat: ['IAB1-5'], path: 'browse' },
  { brand: 'Duolingo', domain: 'duolingo.com', cat: ['IAB5'], path: 'learn', bundle: 'com.duolingo' },
  { brand: 'Heineken', domain: 'heineken.com', cat: ['IAB8-5'], path: 'refresh' },
  { brand: 'Barefoot Wine', domain: 'barefootwine.com', cat: ['IAB8-18'], path: 'wines' },
  { brand: 'Toyota', domain: 'toyota.com', cat: ['IAB2-3'], path: 'rav4' },
  { brand: 'Ford', domain: 'ford.com', cat: ['IAB2-3'], path: 'trucks/f150' },
  { brand: 'Samsung', domain: 'samsung.com', cat: ['IAB19-6'], path: 'smartphones' },
  { brand: 'Dell', domain: 'dell.com', cat: ['IAB19-15'], path: 'laptops' },
  { brand: 'Shopify', domain: 'shopify.com', cat: ['IAB3-1', 'IAB3-4'], path: 'start' },
  { brand: 'HubSpot', domain: 'hubspot.com', cat: ['IAB3-1'], path: 'products/marketing' },
  { brand: 'Chase', domain: 'chase.com', cat: ['IAB13-3'], path: 'personal/credit-cards' },
  { brand: 'Robinhood', domain: 'robinhood.com', cat: ['IAB13-7'], path: 'invest', bundle: 'com.robinhood.android' },
  { brand: 'IKEA', domain: 'ikea.com', cat: ['IAB10-4'], path: 'rooms/living-room' },
  { brand: 'Wayfair', domain: 'wayfair.com', cat: ['IAB10', 'IAB22'], path: 'sale' },
  { brand: 'Chewy', domain: 'chewy.com', cat: ['IAB16-3'], path: 'dog-food' },
  { brand: 'Sephora', domain: 'sephora.com', cat: ['IAB18-1'], path: 'skincare' },
  { brand: 'Zalando', domain: 'zalando.de', cat: ['IAB18-3'], path: 'damen' },
  { brand: 'ASOS', domain: 'asos.com', cat: ['IAB18-3'], path: 'men' },
  { brand: 'Uber', domain: 'uber.com', cat: ['IAB20-4'], path: 'ride', bundle: 'com.ubercab' },
  { brand: 'DoorDash', domain: 'doordash.com', cat: ['IAB8'], path: 'dashpass', bundle: 'com.dd.doordash' },
  { brand: 'Candy Crush', domain: 'king.com', cat: ['IAB9-30'], path: 'game/candycrush', bundle: 'com.king.candycrushsaga' },
  { brand: 'Raid: Shadow Legends', domain: 'plarium.com', cat: ['IAB9-30'], path: 'raid', bundle: 'com.plarium.raidlegends' },
  { brand: 'Coursera', domain: 'coursera.org', cat: ['IAB5-2'], path: 'certificates' },
  { brand: 'Zillow', domain: 'zillow.com', cat: ['IAB21-1'], path: 'homes' },
  { brand: 'Peloton', domain: 'onepeloton.com', cat: ['IAB7-44', 'IAB17'], path: 'bike' },
  { brand: 'HelloFresh', domain: 'hellofresh.com', cat: ['IAB8-9'], path: 'plans' },
  { brand: 'Lufthansa', domain: 'lufthansa.com', cat: ['IAB20-1'], path: 'offers' },
  { brand: 'Decathlon', domain: 'decathlon.fr', cat: ['IAB17'], path: 'velo' },
  { brand: 'Nintendo', domain: 'nintendo.com', cat: ['IAB9-30'], path: 'switch' },
  { brand: 'The Economist', domain: 'economist.com', cat: ['IAB12'], path: 'subscribe' },
];

// Copy pools for native and VAST titles.
const TITLES = [
  'Spring sale: up to 40% off',
  'New arrivals are here',
  'Free shipping on your first order',
  'Try it free for 30 days',
  'Members save more this week',
  'Find your next favourite',
  'Limited time: bundle and save',
  'See why millions switched',
  'Built for every day',
  'Get started in minutes',
];
const LONG_TITLE =
  'Everything you ever wanted to know about our new collection, in one long headline that runs past most title limits';
const DESCS = [
  'Shop the collection and get free returns on every order.',
  'Join today and unlock member-only prices, early access and more.',
  'Rated 4.8 by over 100,000 customers. See what the buzz is about.',
  'Plans start at less than a coffee a week. Cancel anytime.',
  'Discover hand-picked offers updated every morning.',
];
const CTAS = ['Shop now', 'Learn more', 'Sign up', 'Install', 'Book now', 'Get offer'];
const VIDEO_PROTOCOL_SETS = [
  [2, 3, 5, 6],
  [2, 3, 5, 6, 7, 8],
  [3, 6, 7, 8],
  [7, 8],
];
const VIDEO_MIME_SETS = [['video/mp4'], ['video/mp4', 'video/webm'], ['video/webm']];
const TARGETS = [
  { inventory: 'site' },
  { inventory: 'app' },
  { inventory: 'app', os: ['ios'] },
  { inventory: 'app', os: ['android'] },
  { deviceTypes: [4, 5] },
  { deviceTypes: [2] },
  { countries: ['USA', 'CAN'] },
  { countries: ['GBR', 'IRL'] },
  { countries: ['DEU', 'AUT', 'CHE'] },
  { countries: ['FRA', 'BEL'] },
];

function targeting(t) {
  return {
    inventory: t.inventory ?? null,
    deviceTypes: t.deviceTypes ?? [],
    os: t.os ?? [],
    countries: t.countries ?? [],
  };
}

function budget() {
  const total = pick([2000, 5000, 10000, 25000, 50000]);
  const days = pick([10, 20, 30]);
  return { total, daily: Math.round(total / days) };
}

let crSeq = 0;
function crid(cid) {
  crSeq += 1;
  return `${cid}-cr${String(crSeq).padStart(3, '0')}`;
}

function banner(cid, adv, w, h, price, attr = []) {
  const id = crid(cid);
  return {
    id,
    type: 'banner',
    price,
    attr,
    banner: { w, h, imageUrl: `${CDN}/creatives/${id}/${w}x${h}.png` },
  };
}

/** shape: 'full' (main image + icon), 'image' (main image only), 'icon', 'text'. */
function native(cid, adv, shape, price, opts = {}) {
  const id = crid(cid);
  const n = {
    title: opts.title ?? pick(TITLES),
    description: opts.description ?? pick(DESCS),
    sponsoredBy: opts.sponsoredBy ?? adv.brand,
    cta: opts.cta ?? pick(CTAS),
    image: null,
    icon: null,
  };
  if (shape === 'full' || shape === 'image') {
    const [w, h] = opts.imageSize ?? pick([[1200, 627], [1200, 627], [1200, 628], [627, 627]]);
    n.image = { url: `${CDN}/creatives/${id}/main-${w}x${h}.jpg`, w, h };
  }
  if (shape === 'full' || shape === 'icon') {
    const s = pick([80, 128, 256]);
    n.icon = { url: `${CDN}/creatives/${id}/icon-${s}.png`, w: s, h: s };
  }
  return { id, type: 'native', price, attr: opts.attr ?? [], native: n };
}

function video(cid, adv, duration, price, opts = {}) {
  const id = crid(cid);
  const mimes = opts.mimes ?? pick(VIDEO_MIME_SETS);
  const ext = mimes[0] === 'video/webm' ? 'webm' : 'mp4';
  return {
    id,
    type: 'video',
    price,
    attr: opts.attr ?? pick([[], [], [16], [15, 16]]),
    video: {
      mimes,
      duration,
      protocols: opts.protocols ?? pick(VIDEO_PROTOCOL_SETS),
      w: 1280,
      h: 720,
      mediaUrl: `${CDN}/video/${id}-${duration}s.${ext}`,
      bitrate: pick([800, 1200, 2000]),
    },
  };
}

function campaign(n, adv, extra) {
  const id = `cmp-${String(n).padStart(3, '0')}`;
  const c = {
    id,
    name: `${adv.brand} ${extra.label ?? 'always-on'}`,
    adomain: [adv.domain],
    cat: adv.cat,
    landingUrl: `https://www.${adv.domain}/${adv.path}?utm_source=demo-dsp&utm_campaign=${id}`,
    budget: extra.budget ?? budget(),
  };
  if (extra.frequencyCap !== undefined) {
    if (extra.frequencyCap !== null) c.frequencyCap = extra.frequencyCap;
  } else if (chance(0.5)) {
    c.frequencyCap = { perDay: intIn(2, 10) };
  }
  if (adv.bundle) c.bundle = adv.bundle;
  c.targeting = targeting(extra.targeting ?? {});
  c.deals = extra.deals ?? [];
  if (extra.dealsOnly) c.dealsOnly = true;
  // Policy fields, derived from the campaign number and brand rather than drawn, so that adding
  // them left every drawn value (and so every auction on the samples) as it was.
  if (NOT_FOR_CHILDREN.has(adv.domain)) c.coppa = false;
  if (PERSONALIZED.has(adv.domain)) c.personalized = true;
  if (n % 2 === 1) c.dsa = { behalf: adv.brand, paid: n % 6 === 1 ? 'Demo DSP Media Agency' : adv.brand, adrender: n % 4 === 1 ? 1 : 0 };
  c.creatives = extra.creatives(id);
  return c;
}

// Alcohol brands stay off child-directed inventory (regs.coppa = 1).
const NOT_FOR_CHILDREN = new Set(['heineken.com', 'barefootwine.com']);
// Retargeting-style campaigns that rely on user-level data: they bid only where the request allows it.
const PERSONALIZED = new Set(['zalando.de', 'asos.com', 'wayfair.com']);

const byDomain = (d) => ADVERTISERS.find((a) => a.domain === d);
const campaigns = [];
let n = 0;

// ---- Anchors ---------------------------------------------------------------------------------
// 2.6.md §6.2.5 PMP sample: deals AB-Agency1-0001 (floor 2.50) and XY-Agency2-0001 (floor 2.00).
{
  const adv = { brand: 'Lexus', domain: 'lexus.com', cat: ['IAB2-2'], path: 'models/rx' };
  campaigns.push(
    campaign(++n, adv, {
      label: 'Agency1 PMP',
      deals: ['AB-Agency1-0001'],
      dealsOnly: true,
      budget: { total: 40000, daily: 2000 },
      frequencyCap: { perDay: 3 },
      creatives: (id) => [banner(id, adv, 300, 250, 3.2), banner(id, adv, 728, 90, 3.1), banner(id, adv, 300, 600, 3.4)],
    }),
  );
}
{
  const adv = { brand: 'Mercedes-Benz', domain: 'mbusa.com', cat: ['IAB2-2'], path: 'vehicles/eqe' };
  campaigns.push(
    campaign(++n, adv, {
      label: 'Agency2 PMP',
      deals: ['XY-Agency2-0001'],
      dealsOnly: true,
      budget: { total: 30000, daily: 1500 },
      frequencyCap: null,
      creatives: (id) => [banner(id, adv, 300, 250, 2.4), banner(id, adv, 160, 600, 2.2)],
    }),
  );
}
// bsm breq.video: deals 1452f.eadb4.7aaa (floors 5.30 / 3.50) and 1452f.eadb4.f9bc (2.50), 30–60 s.
{
  const adv = { brand: 'Disney+', domain: 'disneyplus.com', cat: ['IAB1-5'], path: 'originals', bundle: 'com.disney.disneyplus' };
  campaigns.push(
    campaign(++n, adv, {
      label: 'Premium video PMP',
      deals: ['1452f.eadb4.7aaa', '1452f.eadb4.f9bc'],
      budget: { total: 50000, daily: 2500 },
      frequencyCap: { perDay: 4 },
      creatives: (id) => [
        video(id, adv, 30, 4.2, { mimes: ['video/mp4', 'video/webm'], protocols: [2, 3, 5, 6, 7, 8], attr: [] }),
        video(id, adv, 15, 3.8, { mimes: ['video/mp4'], protocols: [2, 3, 5, 6], attr: [] }),
        banner(id, adv, 300, 250, 1.9),
      ],
    }),
  );
}
// A brand that 2.6.md §6.2.3 (mobile) blocks in badv: bids high on 728x90, must lose to badv.
{
  const adv = { brand: 'Apple', domain: 'apple.com', cat: ['IAB19-6'], path: 'iphone' };
  campaigns.push(
    campaign(++n, adv, {
      label: 'iPhone launch',
      budget: { total: 50000, daily: 5000 },
      frequencyCap: null,
      creatives: (id) => [banner(id, adv, 728, 90, 4.8), banner(id, adv, 300, 250, 4.6), banner(id, adv, 320, 50, 4.4)],
    }),
  );
}
// Native for the IAB native sample (icon >= 50x50 required, sponsored <= 25 chars) and the
// Prebid/Ezoic native sample (main image exactly 1200x627, title <= 90).
{
  const adv = byDomain('booking.com');
  campaigns.push(
    campaign(++n, adv, {
      label: 'native always-on',
      frequencyCap: { perDay: 6 },
      creatives: (id) => [
        native(id, adv, 'full', 2.1, { imageSize: [1200, 627], title: 'Your summer getaway starts here' }),
        native(id, adv, 'image', 1.7, { imageSize: [1200, 627] }),
        native(id, adv, 'text', 1.2),
      ],
    }),
  );
}
// Banner sizes with a 0.5 floor on app inventory (2.6.md §6.2.3 mobile: 728x90, iOS, devicetype 1).
{
  const adv = byDomain('duolingo.com');
  campaigns.push(
    campaign(++n, adv, {
      label: 'app install',
      targeting: { inventory: 'app', deviceTypes: [4, 5] },
      creatives: (id) => [
        banner(id, adv, 728, 90, 1.35),
        banner(id, adv, 320, 50, 1.1),
        banner(id, adv, 320, 480, 1.6, [13]),
        native(id, adv, 'icon', 1.4, { cta: 'Install' }),
      ],
    }),
  );
}
// A native whose sponsoredBy runs past 25 characters and a long title: filtered by len.
{
  const adv = { brand: 'The International Wool Company', domain: 'woolcompany.example', cat: ['IAB18-3'], path: 'knitwear' };
  campaigns.push(
    campaign(++n, adv, {
      label: 'long copy',
      creatives: (id) => [
        native(id, adv, 'full', 2.8, { imageSize: [1200, 627], title: LONG_TITLE }),
        native(id, adv, 'full', 2.7, { imageSize: [1200, 627], sponsoredBy: 'The International Wool Company Ltd.' }),
      ],
    }),
  );
}

// ---- Drawn campaigns ------------------------------------------------------------------------
// Each advertiser gets one campaign with 3–7 creatives; ~45% carry some targeting.
for (const adv of ADVERTISERS) {
  const t = chance(0.45) ? pick(TARGETS) : {};
  const deals = chance(0.12) ? [pick(['DEAL-DEMO-SPORTS-01', 'DEAL-DEMO-AUTO-02', 'DEAL-DEMO-NEWS-03'])] : [];
  campaigns.push(
    campaign(++n, adv, {
      targeting: t,
      deals,
      creatives: (id) => {
        const out = [];
        const count = intIn(4, 7);
        for (let i = 0; i < count; i++) {
          const r = rnd();
          if (r < 0.55) {
            const [w, h] = pick(BANNER_SIZES);
            out.push(banner(id, adv, w, h, cpm(0.1, 3.5), chance(0.15) ? [pick([1, 3, 6, 13, 14])] : []));
          } else if (r < 0.8) {
            const shape = pick(['full', 'full', 'image', 'icon', 'text']);
            out.push(native(id, adv, shape, cpm(0.2, 3.0), { attr: chance(0.1) ? [pick([13, 14])] : [] }));
          } else {
            out.push(video(id, adv, pick([15, 30]), cpm(0.5, 5.0)));
          }
        }
        return out;
      },
    }),
  );
}

const doc = {
  version: 1,
  currency: 'USD',
  comment: `Demo campaigns generated by scripts/gen-campaigns.js (seed ${SEED}); regenerate, do not edit by hand.`,
  campaigns,
};
const out = positionals[0] ?? path.resolve(__dirname, '..', 'data', 'campaigns.demo.json');
fs.writeFileSync(out, JSON.stringify(doc, null, 2) + '\n');
const counts = { banner: 0, native: 0, video: 0 };
for (const c of campaigns) for (const cr of c.creatives) counts[cr.type] += 1;
const total = counts.banner + counts.native + counts.video;
process.stdout.write(
  `wrote ${out}: ${campaigns.length} campaigns, ${total} creatives (banner ${counts.banner}, native ${counts.native}, video ${counts.video})\n`,
);
