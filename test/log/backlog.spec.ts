/** The bidder says it is degraded when the bid log piles up in Redis (no shipper takes it). */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseProm, sum } from '../support/prom';
import { request, startTestApp, type TestApp } from '../support/app';
import { sendBids, until } from './support';

let t: TestApp;
before(async () => {
  t = await startTestApp({ LOG_BACKLOG_WARN_BYTES: '4096', LOG_FLUSH_INTERVAL_MS: '50', LOG_REDIS_KEY: 'backlog' });
});
after(async () => {
  await t.close();
});

describe('log backlog', () => {
  it('is ready while the backlog is small, degraded (still 200) past LOG_BACKLOG_WARN_BYTES, with the figures in the metrics', async () => {
    const ready = async () => JSON.parse((await request(`${t.url}/health/ready`, { method: 'GET' })).body.toString()) as { status: string; warnings: string[] };
    assert.equal((await ready()).status, 'ready');
    await sendBids(t.url, 200, 8, 'backlog');
    await until('degraded', async () => (await ready()).status === 'degraded', 10_000);
    const r = await request(`${t.url}/health/ready`, { method: 'GET' });
    assert.equal(r.status, 200);
    assert.match((await ready()).warnings.join(), /bid log backlog in Redis: \d+ bytes/);
    const m = parseProm((await request(`${t.adminUrl}/metrics`, { method: 'GET' })).body.toString());
    assert.ok(sum(m, 'bidder_log_backlog_bytes') > 4096);
    assert.ok(sum(m, 'bidder_log_backlog_frames') > 0);
    assert.ok(sum(m, 'bidder_log_backlog_age_seconds') >= 0);
  });
});
