/**
 * SpendService above an in-memory spend store (test/support/fake-stores.ts): leases from the spend
 * read at a refresh, bids taken from them, bills counted once, a lost bid's cost given back, a store
 * that is away, the live set left at a stop. The same service on a real Redis: budget.spec.ts,
 * leases.spec.ts, money-keys.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import type { CurrencyService } from '../../src/currency/currency.service';
import { Clock } from '../../src/delivery/clock';
import { spendKeys } from '../../src/delivery/keys';
import { LocalDays } from '../../src/delivery/local-day';
import { witnessKey } from '../../src/delivery/money-keys';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { SpendService } from '../../src/delivery/spend.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate } from '../../src/targeting/types';
import { MemorySpendRepository } from '../support/fake-stores';

const NOW = Date.UTC(2026, 10, 28, 9, 30);
const DAY = new LocalDays().of(NOW, 'UTC').day;
/** 1,000 CPM: each bid costs 1 USD. Budget: 10 USD in all, 5 a day. */
const candidate = { id: 'cr1', campaignId: 'c1', price: 1000, budget: { total: 10, daily: 5 } } as unknown as Candidate;
const unbudgeted = { id: 'cr2', campaignId: 'c2', price: 1000 } as unknown as Candidate;

function service(env: Record<string, string> = {}): { spend: SpendService; db: MemorySpendRepository; clock: Clock } {
  const config = loadConfig({ HOST_ID: 'h', WORKER_ID: '1', ...env });
  const store = { current: () => ({ candidates: [candidate, unbudgeted], get: (crid: string) => [candidate, unbudgeted].find((c) => c.id === crid) }) } as unknown as CampaignStore;
  const currency = { current: () => ({ convert: (v: number) => v }) } as unknown as CurrencyService;
  const clock = new Clock();
  clock.now = () => NOW;
  const db = new MemorySpendRepository();
  return { spend: new SpendService(config, db, store, clock, currency, new Random()), db, clock };
}

/** Bids of `c` the lease allows in a row, each committed. */
function bidsAllowed(spend: SpendService, c: Candidate): number {
  let n = 0;
  while (n < 100 && spend.allows(c)) {
    spend.commit(c);
    n++;
  }
  return n;
}

const noticed = (bidId: string, ts = NOW): NoticedBid => ({ bidId, cid: 'c1', crid: 'cr1', price: 1000, cur: 'USD', ts, publisher: 'pub' });

describe('SpendService over an in-memory store', () => {
  it('holds a budgeted campaign until the first refresh, then bids what is left of its day, and no more', async () => {
    const { spend, db } = service();
    assert.equal(spend.allows(candidate), false, 'not read yet: wait');
    assert.equal(spend.allows(unbudgeted), true, 'no budget: no lease');
    db.strings.set(spendKeys.daily('c1', DAY), String(2_000_000));
    db.strings.set(spendKeys.total('c1'), String(2_000_000));
    await spend.refresh();
    assert.equal(bidsAllowed(spend, candidate), 3, 'the day had 5 USD, 2 are spent');
    assert.equal(spend.stats.blockedBids, 2, 'the first check and the fourth bid');
    assert.equal(spend.staleness(), 0);
  });

  it('splits what is left between the live workers', async () => {
    const { spend, db } = service();
    db.otherWorkers = 4;
    await spend.refresh();
    assert.equal(spend.stats.liveWorkers, 5);
    assert.equal(bidsAllowed(spend, candidate), 1, '5 USD left for 5 workers');
  });

  it('counts a bill once, into the total and the day of the bid, and says so', async () => {
    const { spend, db } = service();
    assert.equal(await spend.bill(noticed('b1'), 500), 'counted');
    assert.equal(await spend.bill(noticed('b1'), 500), 'duplicate');
    assert.equal(await spend.spent('c1'), 0.5);
    assert.equal(db.strings.get(spendKeys.daily('c1', DAY)), '500000');
    assert.deepEqual([spend.stats.billsCounted, spend.stats.billsDuplicate], [1, 1]);
  });

  it("gives a lost bid's cost back to the lease at once, a billed one's through the spend", async () => {
    const { spend } = service();
    await spend.refresh();
    assert.equal(bidsAllowed(spend, candidate), 5);
    spend.release(noticed('lost'), false);
    assert.equal(bidsAllowed(spend, candidate), 1, 'the lost bid freed one');
    spend.release(noticed('billed'), true);
    assert.equal(bidsAllowed(spend, candidate), 0, 'a bill frees nothing until the spend is read');
  });

  it('keeps the last leases while the store is away, and says how old they are; renews them when it is back', async () => {
    const { spend, db, clock } = service();
    await spend.refresh();
    db.outage.down = true;
    clock.now = () => NOW + 3_000;
    await spend.refresh();
    assert.equal(spend.staleness(), 3_000);
    assert.ok(spend.stats.refreshErrors >= 1);
    assert.equal(bidsAllowed(spend, candidate), 5, 'the lease read before still holds');
    db.up();
    await spend.refresh();
    assert.equal(spend.staleness(), 0);
  });

  it('sets a missing witness of the billing markers, and counts a spend total that went backwards', async () => {
    const { spend, db } = service();
    db.strings.set(spendKeys.total('c1'), '3000000');
    await spend.refresh();
    await Promise.resolve();
    assert.equal(db.strings.get(witnessKey('c1')), spend.moneyKeys.token);
    db.strings.set(spendKeys.total('c1'), '1000000');
    await spend.refresh();
    assert.equal(spend.moneyKeys.lost.spend, 1);
  });

  it('leaves the live set when it stops', async () => {
    const { spend, db } = service();
    await spend.refresh();
    assert.equal(db.workers.size, 1);
    await spend.onApplicationShutdown();
    assert.equal(db.workers.size, 0);
  });
});
