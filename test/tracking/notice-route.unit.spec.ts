/**
 * NoticeRoute above in-memory stores (test/support/fake-stores.ts) and recording fakes of spend,
 * caps and the log: what each notice logs and counts, what it asks of spend and caps, once per bid,
 * and what it answers when a store fails. Real Redis and HTTP: the other specs of this folder.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LogRecord, NoticeRecord } from '../../src/bidlog/records';
import { loadConfig } from '../../src/config/config';
import type { CapsService } from '../../src/delivery/caps.service';
import type { SpendService } from '../../src/delivery/spend.service';
import type { HttpAnswer } from '../../src/http/answer';
import type { LogService } from '../../src/log/log.service';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import { type Notice, type NoticeEvent, NoticeError } from '../../src/tracking/notice';
import { NoticeLog } from '../../src/tracking/notice-log';
import type { NoticeReader } from '../../src/tracking/notice-reader';
import { NoticeRoute } from '../../src/tracking/notice.route';
import { NoticeStats } from '../../src/tracking/notice-stats';
import type { TrackingPayload } from '../../src/tracking/payload';
import type { ShadingFeedback } from '../../src/tracking/shading-feedback';
import { MemoryNoticeMarkers } from '../support/fake-stores';

const payload = (bidId: string, extra: Partial<TrackingPayload> = {}): TrackingPayload => ({
  requestId: 'r1',
  bidId,
  impId: '1',
  crid: 'cr1',
  cid: 'c1',
  price: 2,
  cur: 'USD',
  ts: Date.now(),
  dealId: '',
  publisher: 'pub',
  userKey: 'u1',
  ...extra,
});

function harness(opts: { billFails?: boolean; capsFail?: boolean } = {}) {
  const records: NoticeRecord[] = [];
  const released: Array<{ bidId: string; billed: boolean }> = [];
  const billed = new Set<string>();
  const log = { log: (r: LogRecord) => records.push(r as NoticeRecord) } as unknown as LogService;
  const stats = new NoticeStats();
  const markers = new MemoryNoticeMarkers();
  let next: Notice | NoticeError = new NoticeError(400, 'payload missing', 'payload_missing');
  const reader = {
    read: (): Notice => {
      if (next instanceof NoticeError) throw next;
      return next;
    },
  } as unknown as NoticeReader;
  const spend = {
    release: (p: TrackingPayload, b: boolean) => released.push({ bidId: p.bidId, billed: b }),
    bill: (p: TrackingPayload) => (opts.billFails ? Promise.reject(new Error('down')) : Promise.resolve(billed.has(p.bidId) ? 'duplicate' : (billed.add(p.bidId), 'counted'))),
  } as unknown as SpendService;
  const caps = { recordImpression: (bidId: string) => (opts.capsFail ? Promise.reject(new Error('down')) : Promise.resolve(bidId !== 'seen')) } as unknown as CapsService;
  const store = { current: () => ({ get: (crid: string) => (crid === 'cr1' ? { landingUrl: 'https://c1.example/landing' } : undefined) }) } as unknown as CampaignStore;
  const learnt: string[] = [];
  const feedback = { learn: (n: Notice) => learnt.push(n.event) } as unknown as ShadingFeedback;
  const route = new NoticeRoute(reader, markers, new NoticeLog(loadConfig({}), log, stats), store, spend, caps, feedback);
  const send = async (event: NoticeEvent, p: TrackingPayload, price: number | null = 1.5): Promise<HttpAnswer> => {
    next = { event, payload: p, price, loss: event === 'loss' ? 102 : null, minToWin: null };
    return route.answer(event, { sd: '2' });
  };
  const refuse = (e: NoticeError): void => {
    next = e;
  };
  return { route, records, released, stats, markers, learnt, send, refuse };
}

describe('NoticeRoute over in-memory stores', () => {
  it('logs a win once as counted, a repeat as not, and answers both', async () => {
    const h = harness();
    assert.equal((await h.send('win', payload('b1'))).status, 204);
    assert.equal((await h.send('win', payload('b1'))).status, 204);
    assert.deepEqual(
      h.records.map((r) => [r.type, r.bid, r.counted, r.price, r.exchange]),
      [
        ['win', 'b1', true, 1.5, 'open'],
        ['win', 'b1', false, 1.5, 'open'],
      ],
    );
    assert.deepEqual([h.stats.get('win', 'ok'), h.stats.get('win', 'repeated')], [1, 1]);
    assert.deepEqual(h.learnt, ['win', 'win'], 'shading hears every win');
  });

  it("gives a lost bid's reservation back once, however often its loss notice comes", async () => {
    const h = harness();
    await h.send('loss', payload('b1'));
    await h.send('loss', payload('b1'));
    assert.deepEqual(h.released, [{ bidId: 'b1', billed: false }]);
    assert.equal(h.records[0].loss, 102);
  });

  it('bills once, releasing the bid from the window of unbilled bids; asks for a retry (503) when spend cannot be recorded', async () => {
    const h = harness();
    await h.send('bill', payload('b1'));
    await h.send('bill', payload('b1'));
    assert.deepEqual(h.released, [{ bidId: 'b1', billed: true }]);
    assert.deepEqual([h.stats.get('bill', 'ok'), h.stats.get('bill', 'duplicate')], [1, 1]);
    const down = harness({ billFails: true });
    const a = await down.send('bill', payload('b2'));
    assert.equal(a.status, 503);
    assert.equal(a.headers?.['retry-after'], '1');
    assert.equal(down.records[0].counted, null);
  });

  it("answers a notice whose marker cannot be set, its record's counted null, and has it run nothing", async () => {
    const h = harness();
    h.markers.outage.down = true;
    assert.equal((await h.send('loss', payload('b1'))).status, 204);
    assert.equal(h.records[0].counted, null);
    assert.deepEqual(h.released, []);
    assert.equal(h.stats.get('loss', 'error'), 1);
  });

  it('counts a test bid nothing: its bill and impression logged with counted false, no spend, no caps', async () => {
    const h = harness({ billFails: true, capsFail: true });
    assert.equal((await h.send('bill', payload('b1', { test: true }))).status, 204);
    assert.equal((await h.send('imp', payload('b1', { test: true }))).status, 200);
    assert.deepEqual(
      h.records.map((r) => [r.type, r.counted, r.test]),
      [
        ['bill', false, true],
        ['imp', false, true],
      ],
    );
  });

  it('answers an impression with the pixel whether caps counted it, saw it before or failed', async () => {
    const h = harness();
    assert.equal((await h.send('imp', payload('b1'))).status, 200);
    assert.equal((await h.send('imp', payload('seen'))).status, 200);
    const down = harness({ capsFail: true });
    assert.equal((await down.send('imp', payload('b2'))).status, 200);
    assert.deepEqual(
      [...h.records, ...down.records].map((r) => [r.user, r.counted]),
      [
        ['u1', true],
        ['u1', false],
        ['u1', null],
      ],
    );
    assert.equal(down.stats.get('imp', 'cap_error'), 1);
  });

  it("redirects a click to its creative's landing page, once counted; 404 for a creative gone", async () => {
    const h = harness();
    const a = await h.send('click', payload('b1'));
    assert.deepEqual([a.status, a.headers?.location], [302, 'https://c1.example/landing']);
    assert.equal((await h.send('click', payload('b2', { crid: 'gone' }))).status, 404);
    assert.deepEqual(
      h.records.map((r) => [r.landing, r.counted]),
      [
        ['https://c1.example/landing', true],
        [null, true],
      ],
    );
    assert.equal(h.stats.get('click', 'unknown_creative'), 1);
  });

  it('refuses what the reader refuses, counted by reason, nothing logged; 404 for an unknown notice type', async () => {
    const h = harness();
    h.refuse(new NoticeError(410, 'notice too old', 'expired'));
    assert.equal((await h.route.answer('win', {})).status, 410);
    assert.equal((await h.route.answer('nope', {})).status, 404);
    assert.equal(h.stats.get('win', 'expired'), 1);
    assert.equal(h.stats.refusals.get('win\u0000expired'), 1);
    assert.deepEqual(h.records, []);
  });
});
