// explain() against the auction itself, over every fixture request (and variants of each that
// reach floors, deals, block lists, the gate and the policy filters) with the demo campaigns:
// the winner is an eligible candidate, the best-priced one per the deal rules, and a no-bid's
// reason is the one explain() gives.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { parseBidRequest } from '../../src/openrtb/parse';
import type { BidRequest } from '../../src/openrtb/types';
import { priceIn, STATIC_RATES } from '../../src/currency/rates';
import { Auction, loadCampaignFile } from '../../src/targeting/campaign-store';
import type { Candidate, CandidateGate, NoBidReason } from '../../src/targeting/types';
import { sampleRequests } from '../support/samples';

const root = path.resolve(__dirname, '..', '..', '..');
const index = loadCampaignFile(path.join(root, 'data', 'campaigns.demo.json'));

/** Blocks some campaigns by their number: out of budget for multiples of 3, capped for multiples of 5. */
class SomeGate implements CandidateGate {
  check(c: Candidate): 'budget' | 'frequency_cap' | null {
    const n = Number(c.campaignId.replace(/\D/g, ''));
    return n % 3 === 0 ? 'budget' : n % 5 === 0 ? 'frequency_cap' : null;
  }
}

type Raw = Record<string, any>;

function requests(): Array<{ name: string; body: Raw }> {
  const out: Array<{ name: string; body: Raw }> = sampleRequests().map((s) => ({ name: s.name, body: s.request }));
  const casesDir = path.join(root, 'test', 'fixtures', 'cases');
  for (const group of ['exemplary', 'supplemental']) {
    for (const f of fs.readdirSync(path.join(casesDir, group)).sort()) {
      const c = JSON.parse(fs.readFileSync(path.join(casesDir, group, f), 'utf8')) as { request: Raw };
      out.push({ name: `cases/${group}/${f}`, body: c.request });
    }
  }
  return out;
}

const clone = (o: Raw): Raw => structuredClone(o);
const imps = (b: Raw): Raw[] => (Array.isArray(b.imp) ? (b.imp as Raw[]) : []);

/** Each request as it is and changed to reach the other stages. */
function variants(body: Raw): Array<[string, Raw, boolean]> {
  const v: Array<[string, Raw, boolean]> = [['as is', body, true]];
  const floors = clone(body);
  for (const i of imps(floors)) i.bidfloor = (Number(i.bidfloor) || 0.5) * 3;
  v.push(['floors × 3', floors, true]);
  const blocked = clone(body);
  blocked.bcat = Array.from({ length: 12 }, (_, k) => `IAB${k + 1}`);
  blocked.badv = ['nike.com', 'booking.com', 'apple.com'];
  v.push(['bcat IAB1-12, badv', blocked, true]);
  for (const priv of [0, 1]) {
    const deals = clone(body);
    for (const i of imps(deals)) i.pmp = { private_auction: priv, deals: [{ id: 'AB-Agency1-0001', bidfloor: 3 }, { id: 'DEAL-DEMO-SPORTS-01', bidfloor: 1, bidfloorcur: 'EUR' }, { id: 'none-such' }] };
    v.push([`deals, private_auction ${priv}`, deals, true]);
  }
  const child = clone(body);
  child.regs = { coppa: 1 };
  v.push(['coppa, no user data', child, false]);
  for (const [required, pubrender] of [
    [2, 0],
    [3, 2],
    [2, 1],
  ]) {
    const dsa = clone(body);
    dsa.regs = { ext: { dsa: { dsarequired: required, pubrender, datatopub: 2 } } };
    v.push([`dsarequired ${required}, pubrender ${pubrender}`, dsa, true]);
  }
  const eur = clone(body);
  eur.cur = ['EUR'];
  v.push(['cur EUR', eur, true]);
  return v;
}

describe('Auction.explain agrees with Auction.select', () => {
  it('over the fixture requests and their variants, with and without a gate', () => {
    const seen = new Map<string, number>();
    const seenCandidate = new Set<string | null>();
    let checked = 0;
    for (const gate of [null, new SomeGate()]) {
      const auction = new Auction(gate);
      for (const { name, body } of requests()) {
        for (const [variant, raw, userData] of variants(body)) {
          let req: BidRequest;
          try {
            req = parseBidRequest(raw);
          } catch {
            continue; // the 400 cases
          }
          const bidCur = req.cur.length === 0 || req.cur.includes('USD') ? 'USD' : req.cur[0];
          const rate = STATIC_RATES.unitsPerUsd(bidCur) ?? 1;
          for (const imp of req.imps) {
            const where = `${name} (${variant}, gate ${gate === null ? 'off' : 'on'}) imp ${imp.id}`;
            const r = auction.select(index, imp, req, bidCur, STATIC_RATES, userData);
            const ex = auction.explain(index, imp, req, bidCur, STATIC_RATES, userData);
            const eligible = ex.candidates.filter((c) => c.reason === null);
            for (const c of ex.candidates) seenCandidate.add(c.reason);
            checked++;
            if (typeof r === 'string') {
              seen.set(r, (seen.get(r) ?? 0) + 1);
              assert.equal(ex.reason, r, where);
              assert.deepEqual(eligible, [], where);
              if (ex.candidates.length > 0) assert.ok(ex.candidates.some((c) => c.reason === r), `${where}: no candidate says ${r}`);
              continue;
            }
            seen.set('bid', (seen.get('bid') ?? 0) + 1);
            assert.equal(ex.reason, null, where);
            const mine = eligible.find((c) => c.crid === r.candidate.id);
            assert.ok(mine, `${where}: the winner ${r.candidate.id} is not eligible in explain()`);
            assert.equal(mine.deal, r.dealId, `${where}: deal`);
            // Deal bids first (outside a private auction too), then the open market; the best price wins.
            const pool = eligible.some((c) => c.deal !== null) ? eligible.filter((c) => c.deal !== null) : eligible;
            const best = Math.max(...pool.map((c) => priceIn(index.get(c.crid)!.price, rate)));
            assert.equal(r.price, best, `${where}: price`);
          }
        }
      }
    }
    // The variants reach every part of the auction: imps end at these reasons, candidates at those.
    const impReasons: NoBidReason[] = ['floor', 'deal', 'currency', 'bcat', 'size', 'native_assets', 'media_type', 'budget', 'frequency_cap'];
    for (const reason of impReasons) assert.ok((seen.get(reason) ?? 0) > 0, `no imp ended with ${reason}: ${JSON.stringify([...seen])}`);
    const candidateReasons: NoBidReason[] = ['inventory', 'device', 'os', 'country', 'coppa', 'consent', 'dsa', 'battr', 'badv', 'video', 'native_assets'];
    for (const reason of candidateReasons) assert.ok(seenCandidate.has(reason), `no candidate stopped at ${reason}: ${JSON.stringify([...seenCandidate])}`);
    assert.ok((seen.get('bid') ?? 0) > 100, JSON.stringify([...seen]));
    assert.ok(checked > 500, `${checked}`);
  });
});
