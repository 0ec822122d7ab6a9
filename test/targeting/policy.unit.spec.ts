// The policy filters: child-directed inventory (coppa), user-level data (consent) and the DSA
// transparency rules (dsa), per candidate.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { DsaRequest } from '../../src/openrtb/types';
import { CandidateIndex, FILTER_ORDER } from '../../src/targeting/campaign-store';
import { bidAdrender, dsaMinRender, dsaRequired } from '../../src/targeting/dsa';
import type { Candidate, Match, NoBidReason } from '../../src/targeting/types';
import { bannerImp, bidRequest, candidate, imp, select } from './fixtures';

const banner300 = imp({ banner: bannerImp() });

function winner(r: Match | NoBidReason): string {
  return typeof r === 'object' ? r.candidate.id : `no bid: ${r}`;
}
function run(c: Candidate, over: Parameters<typeof bidRequest>[0] = {}, userData = true): string {
  return winner(select(new CandidateIndex([c]), banner300, bidRequest(over), 'USD', null, userData));
}
function dsa(required: number, pubrender: number, datatopub = 2): DsaRequest {
  return { required, pubrender, datatopub, transparency: [] };
}

describe('policy filters', () => {
  it('rank after the targeting filters and before the creative ones', () => {
    const at = (r: NoBidReason): number => FILTER_ORDER.indexOf(r);
    assert.ok(at('country') < at('coppa') && at('coppa') < at('consent') && at('consent') < at('dsa') && at('dsa') < at('secure'));
    assert.equal(new Set(FILTER_ORDER).size, FILTER_ORDER.length, 'each reason once');
  });

  it('coppa: false keeps a campaign off child-directed inventory; the default bids there', () => {
    assert.equal(run(candidate({ id: 'c', coppa: false }), { coppa: true }), 'no bid: coppa');
    assert.equal(run(candidate({ id: 'c', coppa: false }), { coppa: false }), 'c');
    assert.equal(run(candidate({ id: 'c' }), { coppa: true }), 'c');
  });

  it('a personalized campaign bids only where user-level data is allowed; a contextual one either way', () => {
    assert.equal(run(candidate({ id: 'c', personalized: true }), {}, false), 'no bid: consent');
    assert.equal(run(candidate({ id: 'c', personalized: true }), {}, true), 'c');
    assert.equal(run(candidate({ id: 'c', personalized: false }), {}, false), 'c');
  });

  it('the next candidate wins when the best one is stopped by a policy filter', () => {
    const index = new CandidateIndex([candidate({ id: 'profiled', price: 3, personalized: true }), candidate({ id: 'plain', price: 1 })]);
    assert.equal(winner(select(index, banner300, bidRequest(), 'USD', null, false)), 'plain');
    assert.equal(winner(select(index, banner300, bidRequest(), 'USD', null, true)), 'profiled');
  });
});

describe('DSA: who may bid, and the adrender the bid states', () => {
  const none = candidate({ id: 'c', dsa: null });
  const cannot = candidate({ id: 'c', dsa: { behalf: 'B', paid: 'P', adrender: 0 } });
  const can = candidate({ id: 'c', dsa: { behalf: 'B', paid: 'P', adrender: 1 } });
  // [dsarequired, pubrender, campaign, bids?]
  const table: Array<[number, number, Candidate, string, boolean]> = [];
  for (const required of [0, 1]) for (const pubrender of [0, 1, 2]) for (const [name, c] of [['none', none], ['adrender 0', cannot], ['adrender 1', can]] as const) table.push([required, pubrender, c, name, true]);
  for (const required of [2, 3]) {
    for (const pubrender of [0, 1, 2]) {
      table.push([required, pubrender, none, 'none', false]);
      table.push([required, pubrender, cannot, 'adrender 0', pubrender !== 0]);
      table.push([required, pubrender, can, 'adrender 1', true]);
    }
  }
  for (const [required, pubrender, c, name, bids] of table) {
    it(`dsarequired ${required}, pubrender ${pubrender}, campaign DSA ${name} → ${bids ? 'bids' : 'dsa'}`, () => {
      assert.equal(run(c, { dsa: dsa(required, pubrender) }), bids ? 'c' : 'no bid: dsa');
    });
  }
  it('no regs.ext.dsa: everyone bids', () => {
    assert.equal(run(none, { dsa: null }), 'c');
    assert.equal(dsaRequired(null), false);
    assert.equal(dsaMinRender(null), -1);
  });
  it('bidAdrender: pubrender 0 needs the advertiser to render, 2 says it will not, 1 keeps the campaign value', () => {
    assert.deepEqual(
      [-1, 0, 1].map((render) => [0, 1, 2, 7].map((pub) => bidAdrender(render, pub))),
      [
        [-1, -1, -1, -1],
        [-1, 0, 0, 0],
        [1, 1, 0, 1],
      ],
    );
  });
  it('the auction and bidAdrender agree: a required-DSA bid always has an adrender to state', () => {
    for (const required of [2, 3]) {
      for (const pubrender of [0, 1, 2]) {
        for (const render of [-1, 0, 1]) {
          assert.equal(render >= dsaMinRender(dsa(required, pubrender)), bidAdrender(render, pubrender) >= 0, `${required} ${pubrender} ${render}`);
        }
      }
    }
  });
});
