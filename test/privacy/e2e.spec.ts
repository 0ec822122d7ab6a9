/**
 * Privacy signals end to end (real app, real Redis, real HTTP): what the bid log keeps of a request
 * with each signal, what tracking payloads carry, frequency caps only with consent, and raw personal
 * data only with consent and LOG_RAW_PII=true.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PayloadCodec, trackingKeys } from '../../src/tracking/payload';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { gppString, OUR_VENDOR, tcString } from './consent-strings';

const RAW = { ip: '203.0.113.77', ipv6: '2001:db8:1234:5678:9abc::1', ifa: 'ifa-raw-123e4567', userId: 'user-raw-456', buyeruid: 'buyer-raw-789' };
const CONSENT = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4] });
const NO_CONSENT = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3] });

/** Each signal, the regs/user/device parts it adds, and the decision the response record names. */
const SIGNALS: Array<{ name: string; regs?: object; user?: object; device?: object; reason: string }> = [
  { name: 'no signal', reason: 'none' },
  { name: 'GDPR with consent', regs: { gdpr: 1 }, user: { consent: CONSENT }, reason: 'none' },
  { name: 'GDPR without consent for purpose 4', regs: { gdpr: 1 }, user: { consent: NO_CONSENT }, reason: 'gdpr_no_consent' },
  { name: 'GDPR with a malformed string', regs: { ext: { gdpr: 1 } }, user: { ext: { consent: 'not-a-tc-string' } }, reason: 'gdpr_malformed' },
  { name: 'COPPA', regs: { coppa: 1 }, reason: 'coppa' },
  { name: 'US Privacy opt-out of sale', regs: { us_privacy: '1YYN' }, reason: 'us_opt_out' },
  { name: 'GPP opt-out of targeted ads', regs: { gpp: gppString({ usnat: { TargetedAdvertisingOptOutNotice: 1, TargetedAdvertisingOptOut: 1 } }), gpp_sid: [7] }, reason: 'gpp_opt_out' },
  { name: 'limit ad tracking', device: { lmt: 1 }, reason: 'lmt' },
  { name: 'do not track', device: { dnt: 1 }, reason: 'dnt' },
  // Unreadable flags apply (fail closed): no user key in the payload, nothing raw in the log.
  { name: 'GDPR flag "yes"', regs: { gdpr: 'yes' }, reason: 'gdpr_no_consent' },
  { name: 'GDPR flag 2', regs: { gdpr: 2 }, reason: 'gdpr_no_consent' },
  { name: 'GDPR flag " 1"', regs: { gdpr: ' 1' }, reason: 'gdpr_no_consent' },
  { name: 'GDPR flag "yes" in regs.ext', regs: { ext: { gdpr: 'yes' } }, reason: 'gdpr_no_consent' },
  { name: 'lmt "yes"', device: { lmt: 'yes' }, reason: 'lmt' },
  { name: 'dnt 2', device: { dnt: 2 }, reason: 'dnt' },
];

function body(id: string, s: { regs?: object; user?: object; device?: object }, size = { w: 300, h: 250 }, userId = RAW.userId): string {
  return JSON.stringify({
    id,
    imp: [{ id: '1', banner: size }],
    site: { domain: 'news.example', publisher: { name: 'P' } },
    device: { ip: RAW.ip, ipv6: RAW.ipv6, ifa: RAW.ifa, ua: 'Mozilla/5.0', ...s.device },
    user: { id: userId, buyeruid: RAW.buyeruid, data: [{ id: 'dmp', segment: [{ id: 's1' }] }], ext: { eids: [{ source: 'id5', uids: [{ id: 'eid-raw' }] }] }, ...s.user },
    ...(s.regs ? { regs: s.regs } : {}),
  });
}

interface Bid {
  adm: string;
  cid: string;
}

let t: TestApp;
let dir: string;
before(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'privacy-e2e-'));
  const campaigns = path.join(dir, 'campaigns.json');
  const banner = (id: string, w: number, h: number, extra: object = {}) => ({
    id,
    adomain: [`${id}.example`],
    cat: ['IAB3'],
    landingUrl: `https://${id}.example/`,
    budget: { total: 1000, daily: 1000 },
    ...extra,
    creatives: [{ id: `${id}-cr`, type: 'banner', price: 2, banner: { w, h, imageUrl: `https://cdn.${id}.example/a.png` } }],
  });
  fs.writeFileSync(
    campaigns,
    JSON.stringify({ version: 1, campaigns: [banner('open', 300, 250), banner('capped', 728, 90, { frequencyCap: { perDay: 1 } }), banner('targeted', 160, 600, { personalized: true })] }),
  );
  t = await startTestApp({ CAMPAIGNS_FILE: campaigns, TCF_VENDOR_ID: String(OUR_VENDOR), LOG_REDIS_KEY: 'privacy-log', LOG_FLUSH_INTERVAL_MS: '50', LOG_REQUEST_SAMPLE: '1' });
});
after(async () => {
  await t.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

async function bid(b: string): Promise<Bid | null> {
  const r = await request(`${t.url}/openrtb2/bid`, { body: b });
  if (r.status === 204) return null;
  assert.equal(r.status, 200, r.body.toString());
  return (JSON.parse(r.body.toString()) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid[0];
}

function userKeyOf(b: Bid, app: TestApp = t): string {
  const u = new URL(/<img src='([^']+\/t\/imp\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&'));
  return new PayloadCodec(trackingKeys(app.config)).decode(u.searchParams.get('p')!, u.searchParams.get('s')!, 'browser').userKey;
}

async function records(key: string, app: TestApp = t): Promise<Array<Record<string, unknown>>> {
  return (await readRedisLog(app.redis.url, key)).records;
}

describe('the bid log keeps no raw personal data, whatever the signal', () => {
  for (const s of SIGNALS) {
    it(`${s.name}: IPs truncated, ids hashed, data and eids dropped; decision "${s.reason}" logged`, async () => {
      const id = `sig-${s.reason}-${s.name.length}`;
      const b = await bid(body(id, s));
      assert.ok(b !== null, 'contextual campaigns still bid');
      let recs: Array<Record<string, unknown>> = [];
      await until('logged', async () => {
        recs = (await records('privacy-log')).filter((r) => r.id === id);
        return recs.length === 2;
      });
      const req = recs.find((r) => r.type === 'request')!;
      const text = JSON.stringify(req);
      for (const raw of [RAW.ip, RAW.ipv6, RAW.ifa, RAW.userId, RAW.buyeruid, 'eid-raw', 'dmp']) assert.ok(!text.includes(raw), `${raw} kept`);
      const r = req.req as { device: Record<string, unknown>; user: Record<string, unknown> };
      assert.equal(r.device.ip, '203.0.113.0');
      assert.equal(r.device.ipv6, '2001:db8:1234::');
      assert.equal(typeof r.device.ifa, 'string');
      assert.equal(r.user.data, undefined);
      assert.equal(recs.find((x) => x.type === 'response')!.privacy, s.reason);
      // The tracking payload never carries the raw id; a hashed user key only when user data may be used.
      const key = userKeyOf(b);
      assert.notEqual(key, RAW.userId);
      if (s.reason === 'none') assert.equal(key, r.user.id, 'the same keyed hash as in the log');
      else assert.equal(key, '');
    });
  }
});

describe('the bid log keeps what its allowlist names, nothing else raw', () => {
  it('device.ext.ifv, device.ext.idfv, user.ext.prebid.buyeruids, user.ext.tpid and fields it does not know never reach the log', async () => {
    const id = 'allowlist-1';
    const secrets = ['ifv-raw-0001', 'idfv-raw-0002', 'buyeruids-raw-0003', 'tpid-raw-0004', 'unknown-raw-0005', 'unknown-raw-0006', 'unknown-raw-0007'];
    const b = JSON.stringify({
      id,
      imp: [{ id: '1', banner: { w: 300, h: 250 }, ext: { gpid: '/slot/1', private: secrets[4] } }],
      site: { domain: 'news.example', publisher: { name: 'P' }, ext: { data: secrets[5] } },
      device: { ip: RAW.ip, ua: 'Mozilla/5.0', geo: { country: 'USA', city: 'Springfield' }, ext: { ifv: secrets[0], idfv: secrets[1], atts: 3 } },
      user: { id: RAW.userId, yob: 1980, ext: { prebid: { buyeruids: { appnexus: secrets[2] } }, tpid: [{ source: 'x', uid: secrets[3] }], consent: CONSENT } },
      regs: { gdpr: 1, ext: { us_privacy: '1---' } },
      ext: { whatever: secrets[6] },
    });
    await bid(b);
    let req: Record<string, unknown> | undefined;
    await until('logged', async () => {
      req = (await records('privacy-log')).find((r) => r.id === id && r.type === 'request');
      return req !== undefined;
    });
    const text = JSON.stringify(req);
    for (const raw of [...secrets, RAW.ip, RAW.userId]) assert.ok(!text.includes(raw), `${raw} reached the log: ${text}`);
    // What the allowlist keeps is still there, and the shipper's schema reads it (req.imp[].banner).
    const r = req!.req as Record<string, any>;
    assert.equal(r.id, id);
    assert.deepEqual(r.imp[0].banner, { w: 300, h: 250 });
    assert.equal(r.imp[0].ext.gpid, '/slot/1');
    assert.equal(r.site.domain, 'news.example');
    assert.equal(r.device.ua, 'Mozilla/5.0');
    assert.equal(r.device.ip, '203.0.113.0');
    assert.equal(r.device.geo.city, 'Springfield');
    assert.equal(r.device.ext.atts, 3);
    assert.equal(r.user.yob, 1980);
    assert.equal(r.user.ext.consent, CONSENT);
    assert.equal(r.regs.gdpr, 1);
    assert.equal(r.regs.ext.us_privacy, '1---');
  });
});

describe('user-level data only with consent', () => {
  it('frequency caps are neither read nor counted without consent; with it they cap', async () => {
    const noConsent = { regs: { gdpr: 1 }, user: { consent: NO_CONSENT } };
    const consent = { regs: { gdpr: 1 }, user: { consent: CONSENT } };
    const size = { w: 728, h: 90 };
    const imp = async (b: Bid) => {
      const u = new URL(/<img src='([^']+\/t\/imp\?[^']+)'/.exec(b.adm)![1].replace(/&amp;/g, '&'));
      assert.equal((await request(`${t.url}${u.pathname}${u.search}`, { method: 'GET' })).status, 200);
    };
    // Without consent: the capped campaign bids again and again (no cap is kept for an unknown user).
    for (let i = 0; i < 3; i++) {
      const b = await bid(body(`nc-${i}`, noConsent, size, 'cap-user'));
      assert.equal(b?.cid, 'capped');
      await imp(b);
    }
    // With consent: one impression caps the user.
    const first = await bid(body('c-0', consent, size, 'cap-user'));
    assert.equal(first?.cid, 'capped');
    await imp(first);
    await until('capped', async () => (await bid(body(`c-${Date.now()}`, consent, size, 'cap-user'))) === null, 3_000);
    // The log: the impressions without consent carry no user.
    let imps: Array<Record<string, unknown>> = [];
    await until('impressions logged', async () => {
      imps = (await records('privacy-log')).filter((r) => r.type === 'imp');
      return imps.length >= 4;
    });
    assert.deepEqual(
      imps.filter((r) => String(r.id).startsWith('nc-')).map((r) => r.user),
      [null, null, null],
    );
  });
  it('a personalized campaign bids only when the request allows user data', async () => {
    const size = { w: 160, h: 600 };
    assert.equal((await bid(body('pers-ok', {}, size)))?.cid, 'targeted');
    assert.equal(await bid(body('pers-lmt', { device: { lmt: 1 } }, size)), null);
    assert.equal(await bid(body('pers-gdpr', { regs: { gdpr: 1 }, user: { consent: NO_CONSENT } }, size)), null);
  });
});

describe('LOG_RAW_PII', () => {
  it('keeps raw personal data of consented requests only', async () => {
    const a = await startTestApp({ LOG_RAW_PII: 'true', TCF_VENDOR_ID: String(OUR_VENDOR), LOG_REDIS_KEY: 'raw-log', LOG_FLUSH_INTERVAL_MS: '50', LOG_REQUEST_SAMPLE: '1' });
    try {
      for (const [id, s] of [
        ['raw-consent', { regs: { gdpr: 1 }, user: { consent: CONSENT } }],
        ['raw-none', { regs: { gdpr: 1 }, user: { consent: NO_CONSENT } }],
      ] as const) {
        await request(`${a.url}/openrtb2/bid`, { body: body(id, s) });
      }
      let recs: Array<Record<string, unknown>> = [];
      await until('logged', async () => {
        recs = (await records('raw-log', a)).filter((r) => r.type === 'request');
        return recs.length === 2;
      });
      const text = (id: string) => JSON.stringify(recs.find((r) => r.id === id));
      assert.ok(text('raw-consent').includes(RAW.ip) && text('raw-consent').includes(RAW.ifa));
      assert.ok(!text('raw-none').includes(RAW.ip) && !text('raw-none').includes(RAW.ifa));
    } finally {
      await a.close();
    }
  });
});
