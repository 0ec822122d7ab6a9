/**
 * A click must never crash a worker: a landing URL with characters that are not valid in a header
 * (accepted by `new URL`) is normalized when campaigns load, and a send that fails anyway is answered,
 * not thrown.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request, startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let dir: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-click-'));
  const file = path.join(dir, 'campaigns.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      version: 1,
      campaigns: [
        {
          id: 'uni',
          adomain: ['uni.example'],
          cat: ['IAB3'],
          landingUrl: 'https://uni.example/ünïcode/页面?q=ä ö',
          budget: { total: 1000, daily: 1000 },
          creatives: [{ id: 'uni-cr', type: 'banner', price: 1, banner: { w: 300, h: 250, imageUrl: 'https://cdn.uni.example/bild-ä.png' } }],
        },
      ],
    }),
  );
  t = await startTestApp({ CAMPAIGNS_FILE: file });
});
after(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('clicks on non-Latin-1 landing pages', () => {
  it('redirect to the percent-encoded URL, and the worker keeps serving', async () => {
    const body = { id: 'uni-1', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' } };
    let r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
    // On a loaded machine a request may wait past the shedding budget: sent again, as an exchange would.
    for (let retry = 0; retry < 5 && r.headers['x-bidder-shed'] === '1'; retry++) r = await request(`${t.url}/openrtb2/bid`, { body: JSON.stringify(body) });
    assert.equal(r.status, 200, r.body.toString());
    const adm = (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Array<{ adm: string }> }> }).seatbid[0].bid[0].adm;
    const click = new URL(/<a href='([^']+\/t\/click\?[^']+)'/.exec(adm)![1].replace(/&amp;/g, '&'));
    const c = await request(`${t.url}${click.pathname}${click.search}`, { method: 'GET' });
    assert.equal(c.status, 302);
    assert.equal(c.headers.location, new URL('https://uni.example/ünïcode/页面?q=ä ö').href);
    assert.equal((await request(`${t.url}/health/live`, { method: 'GET' })).status, 200);
  });
});
