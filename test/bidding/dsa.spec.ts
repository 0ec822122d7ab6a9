/**
 * DSA transparency (`bid.ext.dsa`), the campaign policy fields and normalized campaign URLs, end to
 * end: a campaign file written for the test, the real app over HTTP, bids parsed as an exchange
 * would; plus the `ext.dsa` writer on its own.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DsaWriter } from '../../src/bidding/response-json';
import { ByteWriter } from '../../src/bidlog/json-bytes';
import type { DsaRequest } from '../../src/openrtb/types';
import { CandidateJson } from '../../src/targeting/candidate-json';
import type { Candidate, Match } from '../../src/targeting/types';
import { request, startTestApp, type TestApp } from '../support/app';
import { firstBid } from '../support/bid';

function match(c: Partial<Candidate>): Match {
  const candidate = { id: 'c', campaignId: 'k', adomain: ['a.example'], cat: [], attr: [], banner: null, video: null, native: null, ...c } as Candidate;
  return { candidate, mtype: 1, price: 1, dealId: null, size: null, native: null, json: new CandidateJson(candidate) };
}
function dsa(required: number, pubrender: number, datatopub = 2): DsaRequest {
  return { required, pubrender, datatopub, transparency: [] };
}
/** What `w` writes for a bid, as text ('' for nothing). */
function fragmentOf(w: DsaWriter, m: Match, d: DsaRequest | null): string {
  const out = new ByteWriter(64);
  w.write(out, m, d);
  return out.text();
}

describe('DsaWriter: the ext.dsa fragment', () => {
  const w = new DsaWriter('dsp.example');
  const parse = (fragment: string): unknown => (JSON.parse(`{"id":"x"${fragment}}`) as { ext?: { dsa?: unknown } }).ext?.dsa;

  it('carries behalf, paid, adrender and our transparency entry with basic targeting (2)', () => {
    const m = match({ dsa: { behalf: 'Brand "B" ✓', paid: 'Agency\\Paid', adrender: 1 } });
    assert.deepEqual(parse(fragmentOf(w, m, dsa(2, 1))), {
      behalf: 'Brand "B" ✓',
      paid: 'Agency\\Paid',
      transparency: [{ domain: 'dsp.example', dsaparams: [2] }],
      adrender: 1,
    });
  });
  it('adds profiling (1) for a personalized campaign', () => {
    const m = match({ personalized: true, dsa: { behalf: 'B', paid: 'P', adrender: 0 } });
    assert.deepEqual((parse(fragmentOf(w, m, dsa(3, 1))) as { transparency: unknown }).transparency, [{ domain: 'dsp.example', dsaparams: [1, 2] }]);
  });
  it('leaves transparency out for datatopub 0, and without a domain', () => {
    const m = match({ dsa: { behalf: 'B', paid: 'P', adrender: 0 } });
    assert.deepEqual(parse(fragmentOf(w, m, dsa(2, 1, 0))), { behalf: 'B', paid: 'P', adrender: 0 });
    assert.deepEqual(parse(fragmentOf(new DsaWriter(''), m, dsa(2, 1, 2))), { behalf: 'B', paid: 'P', adrender: 0 });
  });
  it('states the adrender pubrender asks for', () => {
    const can = match({ dsa: { behalf: 'B', paid: 'P', adrender: 1 } });
    const cannot = match({ dsa: { behalf: 'B', paid: 'P', adrender: 0 } });
    const adrender = (m: Match, pub: number): unknown => (parse(fragmentOf(w, m, dsa(1, pub))) as { adrender?: number } | undefined)?.adrender;
    assert.equal(adrender(can, 0), 1);
    assert.equal(adrender(can, 1), 1);
    assert.equal(adrender(can, 2), 0);
    assert.equal(adrender(cannot, 1), 0);
    assert.equal(adrender(cannot, 2), 0);
    // Supported but not required, and the publisher cannot render either: the bid goes without ext.dsa.
    assert.equal(fragmentOf(w, cannot, dsa(1, 0)), '');
  });
  it('nothing without a request for DSA information, or without campaign information', () => {
    const m = match({ dsa: { behalf: 'B', paid: 'P', adrender: 1 } });
    assert.equal(fragmentOf(w, m, null), '');
    assert.equal(fragmentOf(w, m, dsa(0, 1)), '');
    assert.equal(fragmentOf(w, match({ dsa: null }), dsa(1, 1)), '');
  });
});

// '€' and '日本' are outside Latin-1: as written they are not a valid header value.
const LANDING = 'https://brand.example/日本/straße?q=5 €&x="y"';
const campaignFile = {
  version: 1,
  campaigns: [
    {
      id: 'plain',
      adomain: ['plain.example'],
      cat: [],
      landingUrl: LANDING,
      budget: { total: 1000, daily: 100 },
      creatives: [{ id: 'cr-plain', type: 'banner', price: 3, banner: { w: 300, h: 250, imageUrl: 'https://cdn.example/ä b.png' } }],
    },
    {
      id: 'dsa0',
      adomain: ['dsa0.example'],
      cat: [],
      landingUrl: 'https://dsa0.example/',
      budget: { total: 1000, daily: 100 },
      coppa: false,
      dsa: { behalf: 'Zoë "Z" GmbH', paid: 'Zoë Holding', adrender: 0 },
      creatives: [{ id: 'cr-dsa0', type: 'banner', price: 2, banner: { w: 300, h: 250, imageUrl: 'https://cdn.example/0.png' } }],
    },
    {
      id: 'dsa1',
      adomain: ['dsa1.example'],
      cat: [],
      landingUrl: 'https://dsa1.example/',
      budget: { total: 1000, daily: 100 },
      personalized: true,
      dsa: { behalf: 'One', paid: 'One', adrender: 1 },
      creatives: [{ id: 'cr-dsa1', type: 'banner', price: 1, banner: { w: 300, h: 250, imageUrl: 'https://cdn.example/1.png' } }],
    },
  ],
};

interface Bid {
  crid: string;
  adm: string;
  ext?: { dsa?: { behalf: string; paid: string; adrender: number; transparency?: Array<{ domain: string; dsaparams: number[] }> } };
}

describe('DSA and campaign policy over HTTP', () => {
  let t: TestApp;
  let dir: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-dsa-'));
    const file = path.join(dir, 'campaigns.json');
    fs.writeFileSync(file, JSON.stringify(campaignFile));
    t = await startTestApp({ CAMPAIGNS_FILE: file, DSA_DOMAIN: 'bidder.example' });
  });
  after(async () => {
    await t.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function bid(regs: object | undefined): Promise<Bid | null> {
    const body = { id: 'd-1', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' }, ...(regs ? { regs } : {}) };
    return firstBid<Bid>(t.url, body);
  }

  it('no DSA in the request: the best campaign, no ext.dsa', async () => {
    const b = await bid(undefined);
    assert.equal(b?.crid, 'cr-plain');
    assert.equal(b?.ext, undefined);
  });
  it('dsarequired 1: the best campaign, with ext.dsa only when it has the information', async () => {
    const b = await bid({ ext: { dsa: { dsarequired: 1, pubrender: 1, datatopub: 2 } } });
    assert.equal(b?.crid, 'cr-plain');
    assert.equal(b?.ext, undefined);
  });
  it('dsarequired 2: only a campaign with DSA information bids, and says so', async () => {
    const b = await bid({ ext: { dsa: { dsarequired: 2, pubrender: 1, datatopub: 2 } } });
    assert.equal(b?.crid, 'cr-dsa0');
    assert.deepEqual(b?.ext?.dsa, { behalf: 'Zoë "Z" GmbH', paid: 'Zoë Holding', transparency: [{ domain: 'bidder.example', dsaparams: [2] }], adrender: 0 });
  });
  it('dsarequired 3, publisher cannot render: only a campaign that renders the notice bids (adrender 1; profiling for a personalized one)', async () => {
    const b = await bid({ ext: { dsa: { dsarequired: 3, pubrender: 0, datatopub: 1 } } });
    assert.equal(b?.crid, 'cr-dsa1');
    assert.deepEqual(b?.ext?.dsa, { behalf: 'One', paid: 'One', transparency: [{ domain: 'bidder.example', dsaparams: [1, 2] }], adrender: 1 });
  });
  it('DSA required, publisher cannot render, child-directed: nobody may bid (204)', async () => {
    // dsa1 relies on user data (none on child-directed inventory); dsa0 cannot render and says coppa: false.
    assert.equal(await bid({ coppa: 1, ext: { dsa: { dsarequired: 2, pubrender: 0, datatopub: 0 } } }), null);
  });
  it('coppa: child-directed inventory keeps the campaign that says coppa: false out', async () => {
    const b = await bid({ coppa: 1, ext: { dsa: { dsarequired: 2, pubrender: 2, datatopub: 0 } } });
    assert.equal(b, null, 'dsa0 (coppa: false) and dsa1 (personalized) both out');
    const ok = await bid({ ext: { dsa: { dsarequired: 2, pubrender: 2, datatopub: 0 } } });
    assert.equal(ok?.crid, 'cr-dsa0');
    assert.deepEqual(ok?.ext?.dsa, { behalf: 'Zoë "Z" GmbH', paid: 'Zoë Holding', adrender: 0 });
  });

  it('a landing URL with non-Latin-1 characters, spaces and quotes redirects (it used to crash the worker)', async () => {
    const b = await bid(undefined);
    assert.ok(b);
    assert.ok(b.adm.includes("src='https://cdn.example/%C3%A4%20b.png'"), b.adm);
    const clickUrl = /<a href='([^']+\/t\/click\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&');
    const u = new URL(clickUrl);
    const click = await request(`${t.url}${u.pathname}${u.search}`, { method: 'GET' });
    assert.equal(click.status, 302);
    assert.equal(click.headers.location, new URL(LANDING).href);
    assert.equal(click.headers.location, 'https://brand.example/%E6%97%A5%E6%9C%AC/stra%C3%9Fe?q=5%20%E2%82%AC&x=%22y%22');
    // The worker still answers.
    assert.equal((await bid(undefined))?.crid, 'cr-plain');
  });
});
