import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { CampaignFileError, loadCampaigns } from '../../src/targeting/loader';
import { CampaignFile } from '../../src/targeting/campaign-file';
import { CampaignStore, loadCampaignFile } from '../../src/targeting/campaign-store';
import { ConfigError, DEFAULT_CAMPAIGNS_FILE, loadConfig } from '../../src/config/config';

const root = path.resolve(__dirname, '..', '..', '..');
const demoFile = path.join(root, 'data', 'campaigns.demo.json');

/** A valid file with one campaign holding one creative of each kind; tests break one field. */
 
function goodFile(): any {
  return {
    version: 1,
    currency: 'USD',
    campaigns: [
      {
        id: 'c1',
        adomain: ['WWW.Brand.example'],
        cat: ['IAB3-1'],
        landingUrl: 'https://brand.example/',
        budget: { total: 1000, daily: 100 },
        frequencyCap: { perDay: 3 },
        pacing: 'even',
        pacingCurve: 'traffic',
        timeZone: 'america/new_york',
        bundle: 'com.brand.app',
        targeting: { inventory: 'app', deviceTypes: [4], os: ['iOS'], countries: ['USA'] },
        deals: ['D1'],
        dealsOnly: true,
        coppa: false,
        personalized: true,
        dsa: { behalf: 'Brand', paid: 'Brand Holding', adrender: 1 },
        creatives: [
          { id: 'b1', type: 'banner', price: 1.5, attr: [13], banner: { w: 300, h: 250, imageUrl: 'https://cdn.example/b1.png' } },
          {
            id: 'n1',
            type: 'native',
            price: 2,
            native: { title: 'T', description: 'D', sponsoredBy: 'S', cta: 'C', image: { url: 'https://cdn.example/m.jpg', w: 1200, h: 627 }, icon: null },
          },
          {
            id: 'v1',
            type: 'video',
            price: 3,
            landingUrl: 'http://brand.example/video',
            video: { mimes: ['video/MP4'], duration: 30, protocols: [2, 3], w: 640, h: 360, mediaUrl: 'https://cdn.example/v.mp4' },
          },
        ],
      },
      {
        id: 'c2',
        adomain: ['other.example'],
        cat: [],
        landingUrl: 'https://other.example/',
        budget: { total: 10, daily: 10 },
        creatives: [{ id: 'b2', type: 'banner', price: 0.1, banner: { w: 728, h: 90, imageUrl: 'https://cdn.example/b2.png' } }],
      },
    ],
  };
}

function problemsOf(f: unknown): string[] {
  try {
    loadCampaigns(f);
  } catch (e) {
    assert.ok(e instanceof CampaignFileError, `expected CampaignFileError, got ${String(e)}`);
    return [...e.problems];
  }
  assert.fail('expected the file to be rejected');
}

describe('loader: a valid file', () => {
  const cands = loadCampaigns(goodFile());
  it('flattens one candidate per creative, in file order', () => {
    assert.deepEqual(
      cands.map((c) => [c.id, c.campaignId, c.kind]),
      [
        ['b1', 'c1', 'banner'],
        ['n1', 'c1', 'native'],
        ['v1', 'c1', 'video'],
        ['b2', 'c2', 'banner'],
      ],
    );
  });
  it('copies campaign fields and normalizes them', () => {
    const b1 = cands[0];
    assert.deepEqual(b1.adomain, ['brand.example']);
    assert.deepEqual(b1.targeting, { inventory: 'app', deviceTypes: [4], os: ['ios'], countries: ['USA'] });
    assert.deepEqual(b1.deals, ['D1']);
    assert.equal(b1.dealsOnly, true);
    assert.equal(b1.bundle, 'com.brand.app');
    assert.deepEqual(b1.budget, { total: 1000, daily: 100 });
    assert.deepEqual(b1.frequencyCap, { perDay: 3 });
    assert.equal(b1.pacing, 'even');
    assert.equal(b1.pacingCurve, 'traffic');
    assert.equal(b1.timeZone, 'America/New_York', 'the zone in its canonical spelling');
    assert.deepEqual(b1.attr, [13]);
    assert.deepEqual(b1.banner, { w: 300, h: 250, imageUrl: 'https://cdn.example/b1.png' });
    assert.equal(b1.coppa, false);
    assert.equal(b1.personalized, true);
    assert.deepEqual(b1.dsa, { behalf: 'Brand', paid: 'Brand Holding', adrender: 1 });
  });
  it('defaults optional fields', () => {
    const b2 = cands[3];
    assert.deepEqual(b2.targeting, { inventory: null, deviceTypes: [], os: [], countries: [] });
    assert.deepEqual(b2.deals, []);
    assert.equal(b2.dealsOnly, false);
    assert.equal(b2.bundle, null);
    assert.equal(b2.frequencyCap, null);
    assert.equal(b2.pacing, 'asap');
    assert.equal(b2.pacingCurve, 'uniform');
    assert.equal(b2.timeZone, 'UTC');
    assert.deepEqual(b2.attr, []);
    assert.equal(b2.coppa, true);
    assert.equal(b2.personalized, false);
    assert.equal(b2.dsa, null);
  });
  it('DSA adrender defaults to 0; 100 bytes is the limit, in UTF-8', () => {
    const f = goodFile();
    f.campaigns[1].dsa = { behalf: 'é'.repeat(50), paid: 'x'.repeat(100) };
    assert.deepEqual(loadCampaigns(f)[3].dsa, { behalf: 'é'.repeat(50), paid: 'x'.repeat(100), adrender: 0 });
  });
  it('computes secure from every URL; an http landing page makes the creative insecure', () => {
    assert.equal(cands[0].secure, true);
    assert.equal(cands[1].secure, true);
    assert.equal(cands[2].secure, false);
    assert.equal(cands[2].landingUrl, 'http://brand.example/video');
  });
  it('lower-cases video mimes', () => {
    assert.deepEqual(cands[2].video?.mimes, ['video/mp4']);
  });
});

describe('loader: errors name the entry and the field', () => {
  const cases: { name: string; breakIt: (f: any) => void; want: RegExp }[] = [
    { name: 'wrong version', breakIt: (f) => (f.version = 2), want: /^file: version: expected 1, got 2/ },
    { name: 'campaigns not an array', breakIt: (f) => (f.campaigns = {}), want: /^file: campaigns: expected an array/ },
    { name: 'non-USD currency', breakIt: (f) => (f.currency = 'EUR'), want: /^file: currency: expected "USD"/ },
    { name: 'campaign id missing', breakIt: (f) => delete f.campaigns[1].id, want: /^campaigns\[1\]: id: expected a non-empty string, got nothing/ },
    { name: 'duplicate campaign id', breakIt: (f) => (f.campaigns[1].id = 'c1'), want: /^campaigns\[1\] \(id "c1"\): id: expected an id unique in the file/ },
    { name: 'bad adomain', breakIt: (f) => (f.campaigns[0].adomain = ['not a domain']), want: /^campaigns\[0\] \(id "c1"\): adomain\[0\]: expected a domain name/ },
    { name: 'empty adomain', breakIt: (f) => (f.campaigns[0].adomain = []), want: /^campaigns\[0\] \(id "c1"\): adomain: expected a non-empty array/ },
    { name: 'bad category', breakIt: (f) => (f.campaigns[0].cat = ['Automotive']), want: /^campaigns\[0\] \(id "c1"\): cat\[0\]: expected an IAB category/ },
    { name: 'landing URL not a URL', breakIt: (f) => (f.campaigns[0].landingUrl = 'brand.example'), want: /^campaigns\[0\] \(id "c1"\): landingUrl: expected an absolute http\(s\) URL/ },
    { name: 'budget missing', breakIt: (f) => delete f.campaigns[0].budget, want: /^campaigns\[0\] \(id "c1"\): budget: expected an object, got nothing/ },
    { name: 'daily budget > total', breakIt: (f) => (f.campaigns[0].budget.daily = 5000), want: /^campaigns\[0\] \(id "c1"\): budget\.daily: expected at most budget\.total/ },
    { name: 'negative budget', breakIt: (f) => (f.campaigns[0].budget.total = -1), want: /^campaigns\[0\] \(id "c1"\): budget\.total: expected a number > 0/ },
    { name: 'frequency cap 0', breakIt: (f) => (f.campaigns[0].frequencyCap.perDay = 0), want: /^campaigns\[0\] \(id "c1"\): frequencyCap\.perDay: expected a whole number >= 1/ },
    { name: 'bad pacing', breakIt: (f) => (f.campaigns[0].pacing = 'fast'), want: /^campaigns\[0\] \(id "c1"\): pacing: expected "even" or "asap", got "fast"/ },
    { name: 'bad pacing curve', breakIt: (f) => (f.campaigns[0].pacingCurve = 'hourly'), want: /^campaigns\[0\] \(id "c1"\): pacingCurve: expected "uniform" or "traffic", got "hourly"/ },
    { name: 'unknown time zone', breakIt: (f) => (f.campaigns[0].timeZone = 'Mars/Olympus'), want: /^campaigns\[0\] \(id "c1"\): timeZone: expected an IANA time zone name \("Europe\/Paris", "America\/New_York", "UTC"\), got "Mars\/Olympus"/ },
    { name: 'bad inventory', breakIt: (f) => (f.campaigns[0].targeting.inventory = 'web'), want: /^campaigns\[0\] \(id "c1"\): targeting\.inventory: expected "site", "app" or null, got "web"/ },
    { name: 'alpha-2 country', breakIt: (f) => (f.campaigns[0].targeting.countries = ['US']), want: /^campaigns\[0\] \(id "c1"\): targeting\.countries\[0\]: expected an ISO-3166-1 alpha-3 code/ },
    { name: 'bad device type', breakIt: (f) => (f.campaigns[0].targeting.deviceTypes = ['phone']), want: /^campaigns\[0\] \(id "c1"\): targeting\.deviceTypes\[0\]: expected a whole number/ },
    { name: 'dealsOnly without deals', breakIt: (f) => (f.campaigns[0].deals = []), want: /^campaigns\[0\] \(id "c1"\): dealsOnly: expected false when the campaign lists no deals/ },
    { name: 'unknown campaign field', breakIt: (f) => (f.campaigns[0].frequencycap = 1), want: /^campaigns\[0\] \(id "c1"\): frequencycap: expected no such field/ },
    { name: 'no creatives', breakIt: (f) => (f.campaigns[1].creatives = []), want: /^campaigns\[1\] \(id "c2"\): creatives: expected a non-empty array/ },
    { name: 'price 0', breakIt: (f) => (f.campaigns[0].creatives[0].price = 0), want: /^campaigns\[0\] \(id "c1"\) creatives\[0\] \(id "b1"\): price: expected a number > 0 and <= 1000, got 0/ },
    { name: 'price as string', breakIt: (f) => (f.campaigns[0].creatives[0].price = '1.5'), want: /^campaigns\[0\] \(id "c1"\) creatives\[0\] \(id "b1"\): price: expected a number > 0/ },
    { name: 'price too high', breakIt: (f) => (f.campaigns[0].creatives[0].price = 2500), want: /creatives\[0\] \(id "b1"\): price: expected a number > 0 and <= 1000, got 2500/ },
    { name: 'creative id missing', breakIt: (f) => delete f.campaigns[0].creatives[1].id, want: /^campaigns\[0\] \(id "c1"\) creatives\[1\]: id: expected a non-empty string/ },
    { name: 'duplicate creative id', breakIt: (f) => (f.campaigns[1].creatives[0].id = 'b1'), want: /^campaigns\[1\] \(id "c2"\) creatives\[0\] \(id "b1"\): id: expected an id unique in the file \(already used in campaigns\[0\]/ },
    { name: 'unknown type', breakIt: (f) => (f.campaigns[0].creatives[0].type = 'audio'), want: /creatives\[0\] \(id "b1"\): type: expected "banner", "native" or "video", got "audio"/ },
    { name: 'banner without banner', breakIt: (f) => delete f.campaigns[0].creatives[0].banner, want: /creatives\[0\] \(id "b1"\): banner: expected an object, got nothing/ },
    { name: 'banner width 0', breakIt: (f) => (f.campaigns[0].creatives[0].banner.w = 0), want: /creatives\[0\] \(id "b1"\): banner\.w: expected a whole number >= 1/ },
    { name: 'banner image URL ftp', breakIt: (f) => (f.campaigns[0].creatives[0].banner.imageUrl = 'ftp://x.example/a.png'), want: /creatives\[0\] \(id "b1"\): banner\.imageUrl: expected an absolute http\(s\) URL/ },
    { name: 'video object on a banner', breakIt: (f) => (f.campaigns[0].creatives[0].video = {}), want: /creatives\[0\] \(id "b1"\): video: expected no video object on a banner creative/ },
    { name: 'native title empty', breakIt: (f) => (f.campaigns[0].creatives[1].native.title = ''), want: /creatives\[1\] \(id "n1"\): native\.title: expected a non-empty string/ },
    { name: 'native image without url', breakIt: (f) => delete f.campaigns[0].creatives[1].native.image.url, want: /creatives\[1\] \(id "n1"\): native\.image\.url: expected an absolute http\(s\) URL/ },
    { name: 'video mimes empty', breakIt: (f) => (f.campaigns[0].creatives[2].video.mimes = []), want: /creatives\[2\] \(id "v1"\): video\.mimes: expected a non-empty array/ },
    { name: 'video protocol 99', breakIt: (f) => (f.campaigns[0].creatives[2].video.protocols = [2, 99]), want: /creatives\[2\] \(id "v1"\): video\.protocols\[1\]: expected a whole number from 1 to 30, got 99/ },
    { name: 'video duration 0', breakIt: (f) => (f.campaigns[0].creatives[2].video.duration = 0), want: /creatives\[2\] \(id "v1"\): video\.duration: expected a whole number >= 1/ },
    { name: 'attr not numbers', breakIt: (f) => (f.campaigns[0].creatives[0].attr = ['13']), want: /creatives\[0\] \(id "b1"\): attr\[0\]: expected a whole number/ },
    { name: 'coppa not a boolean', breakIt: (f) => (f.campaigns[0].coppa = 0), want: /^campaigns\[0\] \(id "c1"\): coppa: expected true or false, got 0/ },
    { name: 'personalized not a boolean', breakIt: (f) => (f.campaigns[0].personalized = 'yes'), want: /^campaigns\[0\] \(id "c1"\): personalized: expected true or false, got "yes"/ },
    { name: 'dsa not an object', breakIt: (f) => (f.campaigns[0].dsa = 'Brand'), want: /^campaigns\[0\] \(id "c1"\): dsa: expected an object, got "Brand"/ },
    { name: 'dsa.behalf missing', breakIt: (f) => delete f.campaigns[0].dsa.behalf, want: /^campaigns\[0\] \(id "c1"\): dsa\.behalf: expected a non-empty string of at most 100 characters \(UTF-8 bytes\), got nothing/ },
    { name: 'dsa.paid blank', breakIt: (f) => (f.campaigns[0].dsa.paid = '  '), want: /^campaigns\[0\] \(id "c1"\): dsa\.paid: expected a non-empty string of at most 100 characters/ },
    { name: 'dsa.behalf of 101 characters', breakIt: (f) => (f.campaigns[0].dsa.behalf = 'x'.repeat(101)), want: /^campaigns\[0\] \(id "c1"\): dsa\.behalf: expected a non-empty string of at most 100 characters/ },
    { name: 'dsa.paid of 60 characters, 120 bytes', breakIt: (f) => (f.campaigns[0].dsa.paid = 'é'.repeat(60)), want: /^campaigns\[0\] \(id "c1"\): dsa\.paid: expected a non-empty string of at most 100 characters \(UTF-8 bytes\)/ },
    { name: 'dsa.adrender 2', breakIt: (f) => (f.campaigns[0].dsa.adrender = 2), want: /^campaigns\[0\] \(id "c1"\): dsa\.adrender: expected 0 or 1, got 2/ },
    { name: 'unknown dsa field', breakIt: (f) => (f.campaigns[0].dsa.domain = 'x'), want: /^campaigns\[0\] \(id "c1"\): dsa\.domain: expected no such field/ },
  ];
  it('rejects a root that is not an object', () => {
    assert.match(problemsOf([])[0], /^file: \(root\): expected an object/);
  });
  for (const c of cases) {
    it(c.name, () => {
      const f = goodFile();
      c.breakIt(f);
      const problems = problemsOf(f);
      assert.ok(
        problems.some((p) => c.want.test(p)),
        `no problem matches ${String(c.want)}:\n${problems.join('\n')}`,
      );
    });
  }
  it('a file broken in many places: every problem, each once, nested objects reported from inside', () => {
    const f = {
      version: 1,
      campaigns: [
        {
          id: 'c1',
          adomain: ['a.example', ''],
          cat: 'IAB1',
          landingUrl: 'https://a.example/',
          budget: { total: 5, daily: 10 },
          frequencyCap: null,
          bundle: null,
          targeting: { inventory: null, os: [' iOS '], countries: ['usa'], extra: true },
          dealsOnly: true,
          deals: [' '],
          dsa: null,
          creatives: [
            { id: 'n1', type: 'native', price: 1, native: { title: ' ', image: 'x', icon: { url: 'https://i.example/', w: 0, h: 1 } }, video: {} },
            { id: 'v1', type: 'video', price: 1, video: { mimes: ['mp4'], duration: 1.5, protocols: [], w: 1, h: 1, mediaUrl: 'ftp://x', bitrate: -1 } },
            'not an object',
          ],
        },
        {
          id: 'c2',
          adomain: ['b.example'],
          cat: [],
          landingUrl: 'https://b.example/',
          budget: { total: 5, daily: 5 },
          timeZone: '',
          creatives: [{ id: 'b1', type: 'audio', price: 1, banner: { w: 1, h: 1, imageUrl: 'https://b.example/' } }],
        },
      ],
    };
    assert.deepEqual(problemsOf(f).sort(), [
      'campaigns[0] (id "c1") creatives[0] (id "n1"): native.icon.w: expected a whole number >= 1 and <= 10000, got 0',
      'campaigns[0] (id "c1") creatives[0] (id "n1"): native.image: expected an object {url, w, h} or null, got "x"',
      'campaigns[0] (id "c1") creatives[0] (id "n1"): native.title: expected a non-empty string, got " "',
      'campaigns[0] (id "c1") creatives[0] (id "n1"): video: expected no video object on a native creative, got {}',
      'campaigns[0] (id "c1") creatives[1] (id "v1"): video.bitrate: expected a whole number >= 0 and <= 1000000, got -1',
      'campaigns[0] (id "c1") creatives[1] (id "v1"): video.duration: expected a whole number >= 1 and <= 3600, got 1.5',
      'campaigns[0] (id "c1") creatives[1] (id "v1"): video.mediaUrl: expected an absolute http(s) URL, got "ftp://x"',
      'campaigns[0] (id "c1") creatives[1] (id "v1"): video.mimes[0]: expected a MIME type ("video/mp4"), got "mp4"',
      'campaigns[0] (id "c1") creatives[1] (id "v1"): video.protocols: expected a non-empty array of whole numbers from 1 to 30, got []',
      'campaigns[0] (id "c1") creatives[2]: (entry): expected an object, got "not an object"',
      'campaigns[0] (id "c1"): adomain[1]: expected a domain name ("example.com"), got ""',
      'campaigns[0] (id "c1"): budget.daily: expected at most budget.total (5), got 10',
      'campaigns[0] (id "c1"): cat: expected an array, each an IAB category ("IAB3" or "IAB3-1"), got "IAB1"',
      'campaigns[0] (id "c1"): dealsOnly: expected false when the campaign lists no deals, got true',
      'campaigns[0] (id "c1"): deals[0]: expected a non-empty string, got " "',
      'campaigns[0] (id "c1"): targeting.countries[0]: expected an ISO-3166-1 alpha-3 code ("USA"), got "usa"',
      'campaigns[0] (id "c1"): targeting.extra: expected no such field (allowed: inventory, deviceTypes, os, countries), got true',
      'campaigns[1] (id "c2") creatives[0] (id "b1"): banner: expected no banner object on a audio creative, got {"w":1,"h":1,"imageUrl":"https://b.example/"}',
      'campaigns[1] (id "c2") creatives[0] (id "b1"): type: expected "banner", "native" or "video", got "audio"',
      'campaigns[1] (id "c2"): timeZone: expected an IANA time zone name ("Europe/Paris", "America/New_York", "UTC"), got ""',
    ]);
  });
  it('reports every problem at once, and the message names the source', () => {
    const f = goodFile();
    f.campaigns[0].creatives[0].price = -1;
    f.campaigns[1].landingUrl = 'nope';
    try {
      loadCampaigns(f, 'campaigns file /x.json');
      assert.fail('expected a throw');
    } catch (e) {
      assert.ok(e instanceof CampaignFileError);
      assert.equal(e.problems.length, 2);
      assert.match(e.message, /^campaigns file \/x\.json: invalid campaign file:/);
      assert.match(e.message, /creatives\[0\] \(id "b1"\): price/);
      assert.match(e.message, /campaigns\[1\] \(id "c2"\): landingUrl/);
    }
  });
});

describe('loader: URLs are stored normalized', () => {
  // Non-Latin-1 characters, spaces and quotes: accepted by `new URL`, invalid in a header as written.
  const cases: Array<[string, string]> = [
    ['https://brand.example/straße?q=größe 42', 'https://brand.example/stra%C3%9Fe?q=gr%C3%B6%C3%9Fe%2042'],
    ['https://bücher.example/', 'https://xn--bcher-kva.example/'],
    ['https://brand.example/“sale”/日本', 'https://brand.example/%E2%80%9Csale%E2%80%9D/%E6%97%A5%E6%9C%AC'],
    ['https://brand.example/a b/"c"?d="e"&f=\'g\'', 'https://brand.example/a%20b/%22c%22?d=%22e%22&f=%27g%27'],
    ['HTTPS://Brand.Example:443/x#frag ment', 'https://brand.example/x#frag%20ment'],
    ['https://brand.example', 'https://brand.example/'],
  ];
  for (const [given, stored] of cases) {
    it(`${given} → ${stored}`, () => {
      const f = goodFile();
      f.campaigns[1].landingUrl = given;
      f.campaigns[1].creatives[0].banner.imageUrl = given;
      const c = loadCampaigns(f)[3];
      assert.equal(c.landingUrl, stored);
      assert.equal(c.banner?.imageUrl, stored);
      // Always a valid HTTP header value: printable ASCII.
      assert.match(c.landingUrl, /^[\x21-\x7e]+$/);
    });
  }
  it('every URL field: landing (campaign and creative), banner image, native image and icon, video media', () => {
    const f = goodFile();
    f.campaigns[0].landingUrl = 'https://brand.example/ä';
    f.campaigns[0].creatives[0].banner.imageUrl = 'https://cdn.example/ä.png';
    f.campaigns[0].creatives[1].native.image.url = 'https://cdn.example/ä.jpg';
    f.campaigns[0].creatives[1].native.icon = { url: 'https://cdn.example/ö.png', w: 80, h: 80 };
    f.campaigns[0].creatives[2].landingUrl = 'https://brand.example/ü';
    f.campaigns[0].creatives[2].video.mediaUrl = 'https://cdn.example/ü.mp4';
    const [b, n, v] = loadCampaigns(f);
    assert.equal(b.landingUrl, 'https://brand.example/%C3%A4');
    assert.equal(b.banner?.imageUrl, 'https://cdn.example/%C3%A4.png');
    assert.equal(n.native?.image?.url, 'https://cdn.example/%C3%A4.jpg');
    assert.equal(n.native?.icon?.url, 'https://cdn.example/%C3%B6.png');
    assert.equal(v.landingUrl, 'https://brand.example/%C3%BC');
    assert.equal(v.video?.mediaUrl, 'https://cdn.example/%C3%BC.mp4');
  });
});

describe('loader: files and the store', () => {
  it('the demo file loads: about 200 candidates of every kind, prices 0.10–5 USD, all https', () => {
    const idx = loadCampaignFile(demoFile);
    assert.ok(idx.count >= 180 && idx.count <= 230, `count ${idx.count}`);
    const kinds = new Set(idx.candidates.map((c) => c.kind));
    assert.deepEqual([...kinds].sort(), ['banner', 'native', 'video']);
    for (const c of idx.candidates) {
      assert.ok(c.price >= 0.1 && c.price <= 5, `${c.id} price ${c.price}`);
      assert.ok(c.secure, `${c.id} not https`);
    }
    const sizes = new Set(idx.candidates.filter((c) => c.banner).map((c) => `${c.banner?.w}x${c.banner?.h}`));
    for (const s of ['300x250', '728x90', '320x50', '300x600', '160x600', '320x480']) assert.ok(sizes.has(s), s);
    assert.ok(idx.candidates.some((c) => c.native && !c.native.image && !c.native.icon), 'a text-only native');
    assert.ok(idx.candidates.some((c) => c.native?.image && c.native.icon), 'a native with image and icon');
    assert.deepEqual(new Set(idx.candidates.filter((c) => c.video).map((c) => c.video?.duration)), new Set([15, 30]));
  });

  it('scripts/gen-campaigns.js reproduces data/campaigns.demo.json byte for byte', () => {
    const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gen-campaigns-')), 'c.json');
    execFileSync(process.execPath, [path.join(root, 'scripts', 'gen-campaigns.js'), out], { stdio: 'pipe' });
    assert.equal(fs.readFileSync(out, 'utf8'), fs.readFileSync(demoFile, 'utf8'));
    fs.rmSync(path.dirname(out), { recursive: true, force: true });
  });

  it('CampaignStore loads config.campaignsFile, counts, and swaps the index as one reference', () => {
    const store = new CampaignStore(new CampaignFile(loadConfig({ CAMPAIGNS_FILE: demoFile })));
    const first = store.current();
    assert.equal(store.count, first.count);
    assert.ok(store.count > 0);
    const small = loadCampaignFile(demoFile);
    store.swap(small);
    assert.equal(store.current(), small);
    assert.notEqual(store.current(), first);
  });

  it('the default CAMPAIGNS_FILE is the bundled demo set, from a test build too', () => {
    assert.equal(fs.realpathSync(DEFAULT_CAMPAIGNS_FILE), fs.realpathSync(demoFile));
    const store = new CampaignStore(new CampaignFile(loadConfig({})));
    assert.equal(store.count, loadCampaignFile(demoFile).count);
  });

  it('a bad file stops the store with a message naming the file, entry and field', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bad-campaigns-'));
    const file = path.join(dir, 'c.json');
    const f = goodFile();
    f.campaigns[0].creatives[2].video.duration = 'long';
    fs.writeFileSync(file, JSON.stringify(f));
    assert.throws(
      () => new CampaignStore(new CampaignFile(loadConfig({ CAMPAIGNS_FILE: file }))),
      (e: Error) => e instanceof ConfigError && e.message.includes(`CAMPAIGNS_FILE=${file}: `) && /campaigns\[0\] \(id "c1"\) creatives\[2\] \(id "v1"\): video\.duration/.test(e.message),
    );
    fs.writeFileSync(file, '{"version": 1, ');
    assert.throws(() => new CampaignStore(new CampaignFile(loadConfig({ CAMPAIGNS_FILE: file }))), /not valid JSON/);
    assert.throws(() => new CampaignStore(new CampaignFile(loadConfig({ CAMPAIGNS_FILE: path.join(dir, 'missing.json') }))), /cannot read/);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
