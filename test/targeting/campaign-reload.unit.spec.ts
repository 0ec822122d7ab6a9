/**
 * CampaignStore and CampaignWatcher above an in-memory campaign file (test/support/fake-stores.ts):
 * the start-up load and its refusal, a changed file swapped in, a bad or unreadable one refused with
 * the old set kept. On real files: test/targeting/loader.spec.ts and the reload case of
 * test/delivery/budget.spec.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError } from '../../src/config/config';
import { CampaignWatcher } from '../../src/targeting/campaign-watcher';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { bannerCampaign } from '../support/campaigns';
import { MemoryCampaignSource } from '../support/fake-stores';

const file = (...ids: string[]): string => JSON.stringify({ version: 1, campaigns: ids.map((id) => bannerCampaign(id, { w: 300, h: 250 }, { budget: { total: 10, daily: 5 } })) });

describe('campaigns from an in-memory campaign file', () => {
  it('start with the file, and refuse to start on a bad one, naming CAMPAIGNS_FILE', () => {
    assert.equal(new CampaignStore(new MemoryCampaignSource(file('a', 'b'))).count, 2);
    assert.throws(() => new CampaignStore(new MemoryCampaignSource('{"version": 1, ')), (e: Error) => e instanceof ConfigError && /CAMPAIGNS_FILE=memory\.json: not valid JSON/.test(e.message));
    const gone = new MemoryCampaignSource(file('a'));
    gone.unreadable = true;
    assert.throws(() => new CampaignStore(gone), /CAMPAIGNS_FILE=memory\.json: cannot read: gone/);
  });

  it('swap in a changed file as one reference, and keep the set in use when the new one is bad or unreadable', () => {
    const source = new MemoryCampaignSource(file('a'));
    const store = new CampaignStore(source);
    const watcher = new CampaignWatcher(source, store);
    watcher.onModuleInit();
    const first = store.current();
    source.change(file('a', 'b', 'c'));
    assert.equal(store.count, 3);
    assert.notEqual(store.current(), first);
    const good = store.current();
    source.change('{"version": 1, "campaigns": [{"id": 1}]}');
    assert.equal(store.current(), good, 'a bad file keeps the set in use');
    source.unreadable = true;
    assert.equal(watcher.reload(), false);
    assert.equal(store.current(), good);
    assert.deepEqual(watcher.stats, { reloads: 1, rejected: 2 });
    watcher.onApplicationShutdown();
    source.unreadable = false;
    source.change(file('z'));
    assert.equal(store.current(), good, 'not watched after the shutdown');
  });
});
