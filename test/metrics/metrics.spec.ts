// Metrics: the hot-path families, the log-stats mapping, the machine view's aggregation, and the
// real app's /metrics, /metrics/cluster and /health/* against a real Redis.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Registry, type Metric } from 'prom-client';
import { adminUrl, createApp, listen } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { LogService } from '../../src/log/log.service';
import { aggregate } from '../../src/metrics/cluster-metrics';
import { logStatMetricName } from '../../src/metrics/log-stats';
import { CounterFamily, HistogramFamily } from '../../src/metrics/bid-path-metrics';
import { MetricsService } from '../../src/metrics/metrics.service';
import type { MetricFamily } from '../../src/metrics/scraped';
import { startTestRedis, type TestRedis } from '../support/redis';
import { postBid, request } from '../ops/support/http';
import { parseProm, sum } from '../support/prom';

/** The repository (this file runs from .test-build/test/ops). */
const ROOT = path.resolve(__dirname, '..', '..', '..');

async function render(...metrics: Array<{ name: string }>): Promise<string> {
  const r = new Registry();
  for (const m of metrics) r.registerMetric(m as unknown as Metric);
  return r.metrics();
}

describe('hot-path metric families', () => {
  it('a histogram puts a value equal to a bound in that bound\'s bucket (le) and renders cumulative buckets', async () => {
    const h = new HistogramFamily('t_seconds', 'test', [0.1, 1, 0.5]);
    const a = h.slot({ outcome: 'a' });
    const b = h.slot({ outcome: 'b' });
    for (const v of [0.05, 0.1, 0.2, 0.5, 3]) h.observe(a, v);
    h.observe(b, 0.7);
    assert.equal(h.count(a), 5);
    const f = parseProm(await render(h));
    const le = (o: string, bound: string) => sum(f, 't_seconds_bucket', { outcome: o, le: bound });
    assert.deepEqual([le('a', '0.1'), le('a', '0.5'), le('a', '1'), le('a', '+Inf')], [2, 4, 4, 5]);
    assert.deepEqual([le('b', '0.1'), le('b', '0.5'), le('b', '1'), le('b', '+Inf')], [0, 0, 1, 1]);
    assert.ok(Math.abs(sum(f, 't_seconds_sum', { outcome: 'a' }) - 3.85) < 1e-9);
    assert.equal(sum(f, 't_seconds_count', { outcome: 'b' }), 1);
  });

  it('counter slots keep their own counts past the initial capacity', async () => {
    const c = new CounterFamily('t_total', 'test');
    const slots = Array.from({ length: 20 }, (_, i) => c.slot({ reason: `r${i}` }));
    for (const s of slots) for (let k = 0; k <= s; k++) c.inc(s);
    const f = parseProm(await render(c));
    for (const s of slots) assert.equal(sum(f, 't_total', { reason: `r${s}` }), s + 1);
  });
});

describe('the bid path\'s families', () => {
  const config = (): ReturnType<typeof loadConfig> => loadConfig({ WORKER_ID: 'w-unit', LOG_SPILL_DIR: os.tmpdir() });

  it('exports every outcome\'s series at 0 from the start, and a value equal to a bound in that bound\'s bucket (le)', async () => {
    const m = new MetricsService(config());
    try {
      const f0 = parseProm(await m.render());
      for (const [outcome, status] of [['bid', '200'], ['bad_request', '400'], ['too_large', '413'], ['error', '204'], ['shed', '204']]) {
        assert.equal(sum(f0, 'bidder_bid_requests_total', { outcome, status, worker: 'w-unit' }), 0, outcome);
        assert.ok(f0.get('bidder_bid_requests_total')!.samples.some((s) => s.labels.outcome === outcome), outcome);
        assert.equal(sum(f0, 'bidder_bid_request_duration_seconds_count', { outcome }), 0);
      }
      for (const v of [0.0001, 0.0005, 0.002]) m.bidRequest('bid', null, v);
      m.bidRequest('nobid', 'floor', 0.0004);
      m.bidPrice(2);
      const f = parseProm(await m.render());
      const le = (bound: string) => sum(f, 'bidder_bid_request_duration_seconds_bucket', { outcome: 'bid', le: bound });
      assert.deepEqual([le('0.0001'), le('0.00025'), le('0.0005'), le('0.0025'), le('+Inf')], [1, 1, 2, 3, 3]);
      assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'nobid', reason: 'floor', status: '204' }), 1);
      assert.equal(sum(f, 'bidder_bid_price_cpm_bucket', { le: '2' }), 1);
    } finally {
      m.onApplicationShutdown();
    }
  });

  it('counts no-bid reasons past the 64th as "other"', async () => {
    const m = new MetricsService(config());
    try {
      for (let i = 0; i < 80; i++) m.bidRequest('nobid', `r${i}`, 0.001);
      const f = parseProm(await m.render());
      const reasons = new Set(f.get('bidder_bid_requests_total')!.samples.filter((s) => s.labels.outcome === 'nobid').map((s) => s.labels.reason));
      assert.equal(reasons.size, 64);
      assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'nobid' }), 80);
      assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'nobid', reason: 'other' }), 80 - 63);
    } finally {
      m.onApplicationShutdown();
    }
  });

  it('families read at scrape time show what their source says then, counters and gauges alike', async () => {
    const m = new MetricsService(config());
    try {
      let n = 3;
      const seen = new Map([['a', 1]]);
      m.counter('t_things_total', 'test', ['kind'], () => [{ value: n, labels: { kind: 'x' } }]);
      m.gauge('t_open', 'test', 'max', ['name'], () => [...seen].map(([name, value]) => ({ value, labels: { name } })));
      let f = parseProm(await m.render());
      assert.equal(sum(f, 't_things_total', { kind: 'x' }), 3);
      assert.equal(sum(f, 't_open', { name: 'a' }), 1);
      n = 5;
      seen.delete('a');
      seen.set('b', 2);
      f = parseProm(await m.render());
      assert.equal(sum(f, 't_things_total', { kind: 'x' }), 5);
      assert.deepEqual(f.get('t_open')!.samples.map((s) => [s.labels.name, s.value]), [['b', 2]]);
    } finally {
      m.onApplicationShutdown();
    }
  });
});

describe('log pipeline stats → metric names', () => {
  const cases: Array<[string, string, 'counter' | 'gauge', number]> = [
    ['recordsQueued', 'bidder_log_records_queued', 'gauge', 1],
    ['bytesQueued', 'bidder_log_bytes_queued', 'gauge', 1],
    ['recordsLogged', 'bidder_log_records_logged_total', 'counter', 1],
    ['batchesFlushed', 'bidder_log_batches_flushed_total', 'counter', 1],
    ['bytesFlushedCompressed', 'bidder_log_bytes_flushed_compressed_total', 'counter', 1],
    ['lastFlushMs', 'bidder_log_last_flush_seconds', 'gauge', 0.001],
    ['flushMsTotal', 'bidder_log_flush_seconds_total', 'counter', 0.001],
    ['compressionRatio', 'bidder_log_compression_ratio', 'gauge', 1],
    ['recordsSpilled', 'bidder_log_records_spilled_total', 'counter', 1],
    ['recordsDrained', 'bidder_log_records_drained_total', 'counter', 1],
    ['recordsDropped', 'bidder_log_records_dropped_total', 'counter', 1],
    ['spillBytes', 'bidder_log_spill_bytes', 'gauge', 1],
    ['redisUp', 'bidder_log_redis_up', 'gauge', 1],
  ];
  for (const [field, name, type, scale] of cases) {
    it(`${field} → ${type} ${name}`, () => {
      const m = logStatMetricName(field);
      assert.deepEqual([m.name, m.type, m.scale], [name, type, scale]);
    });
  }
  it('ratios are averaged and durations maxed across workers, counts summed', () => {
    assert.equal(logStatMetricName('compressionRatio').aggregator, 'average');
    assert.equal(logStatMetricName('lastFlushMs').aggregator, 'max');
    assert.equal(logStatMetricName('recordsQueued').aggregator, 'sum');
  });
});

describe('machine view aggregation', () => {
  const snap = (worker: string, bids: number, lag: number): MetricFamily[] => [
    {
      name: 'bidder_bid_requests_total',
      help: 'h',
      type: 'counter',
      aggregator: 'sum',
      values: [
        { value: bids, labels: { outcome: 'bid', worker } },
        { value: 1, labels: { outcome: 'nobid', worker } },
      ],
    },
    { name: 'bidder_event_loop_delay_seconds', help: 'h', type: 'gauge', aggregator: 'max', values: [{ value: lag, labels: { quantile: '1', worker } }] },
  ];

  it('sums counters without the worker label, takes each gauge\'s aggregator, counts workers', async () => {
    const f = parseProm(await aggregate([snap('0', 5, 0.002), snap('1', 7, 0.009)]));
    assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'bid' }), 12);
    assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'nobid' }), 2);
    assert.equal(sum(f, 'bidder_event_loop_delay_seconds'), 0.009);
    assert.equal(sum(f, 'bidder_cluster_workers'), 2);
    for (const fam of f.values()) for (const s of fam.samples) assert.equal(s.labels.worker, undefined);
  });

  it('by worker keeps each worker\'s series, adding up an old and a new worker of one instance', async () => {
    const f = parseProm(await aggregate([snap('0', 5, 0.002), snap('1', 7, 0.009), snap('1', 2, 0.001)], true));
    assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'bid', worker: '0' }), 5);
    assert.equal(sum(f, 'bidder_bid_requests_total', { outcome: 'bid', worker: '1' }), 9);
    assert.equal(sum(f, 'bidder_event_loop_delay_seconds', { worker: '1' }), 0.009);
    assert.equal(sum(f, 'bidder_cluster_workers'), 3);
  });
});

describe('the app: /metrics, /metrics/cluster, /health', () => {
  let redis: TestRedis;
  let app: NestFastifyApplication;
  let url: string;
  let admin: string;
  let spill: string;

  before(async () => {
    redis = await startTestRedis();
    spill = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-ops-spill-'));
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: redis.url,
      LOG_SPILL_DIR: spill,
      LOG_LEVEL: 'warn',
      WORKER_ID: 'w-test',
      ADMIN_PORT: '0',
      BODY_LIMIT_BYTES: '4096',
      CAMPAIGNS_FILE: path.join(ROOT, 'data', 'campaigns.demo.json'),
    });
    app = await createApp(config);
    await app.init();
    // Not listening yet: not ready.
    const early = await app.getHttpAdapter().getInstance().inject({ method: 'GET', url: '/health/ready' });
    assert.equal(early.statusCode, 503);
    assert.deepEqual(early.json<{ problems: string[] }>().problems, ['starting']);
    url = (await listen(app, config)).replace('[::1]', '127.0.0.1');
    admin = adminUrl(app);
  });

  after(async () => {
    await app.close().catch(() => undefined);
    await redis.stop();
    fs.rmSync(spill, { recursive: true, force: true });
  });

  async function scrape(path = '/metrics') {
    const a = await request(`${admin}${path}`);
    assert.equal(a.status, 200, a.body);
    assert.match(String(a.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return parseProm(a.body);
  }

  it('serves Prometheus text with every family the issue asks for, each series labelled with the worker', async () => {
    const f = await scrape();
    for (const name of [
      'bidder_bid_requests_total',
      'bidder_bid_request_duration_seconds',
      'bidder_bid_price_cpm',
      'bidder_event_loop_delay_seconds',
      'bidder_candidates',
      'bidder_ready',
      'bidder_log_healthy',
      'bidder_http_connections_cut_total',
      'bidder_http_connections_open',
      'bidder_notices_total',
      'bidder_pacing_blocked_total',
      'bidder_campaign_reloads_total',
      'process_cpu_user_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_eventloop_lag_p99_seconds',
    ]) {
      assert.ok(f.has(name), `missing ${name}`);
    }
    assert.equal(f.get('bidder_bid_requests_total')?.type, 'counter');
    assert.equal(f.get('bidder_bid_request_duration_seconds')?.type, 'histogram');
    if (typeof (LogService.prototype as { stats?: unknown }).stats === 'function') {
      for (const name of ['bidder_log_records_queued', 'bidder_log_batches_flushed_total', 'bidder_log_records_dropped_total']) {
        assert.ok(f.has(name), `missing ${name} (LogService.stats() exists)`);
      }
    }
    for (const fam of f.values()) for (const s of fam.samples) assert.equal(s.labels.worker, 'w-test', `${s.name} lacks worker="w-test"`);
    assert.equal(sum(f, 'bidder_ready'), 1);
    assert.ok(sum(f, 'bidder_candidates') > 0, 'the demo campaigns are loaded');
  });

  it('counters move with traffic: bids and no-bids, 400 and 413, durations and prices', async () => {
    const f0 = await scrape();
    const n = 6;
    const statuses: number[] = [];
    for (let i = 0; i < n; i++) statuses.push((await postBid(url, `m-${i}`)).status);
    const bad = await request(`${url}/openrtb2/bid`, { method: 'POST', body: '{"id":', headers: { 'content-type': 'application/json' } });
    assert.equal(bad.status, 400);
    const big = await request(`${url}/openrtb2/bid`, { method: 'POST', body: `{"id":"big","x":"${'a'.repeat(8192)}"}`, headers: { 'content-type': 'application/json' } });
    assert.equal(big.status, 413);
    const f1 = await scrape();
    const d = (name: string, labels: Record<string, string> = {}) => sum(f1, name, labels) - sum(f0, name, labels);
    const bids = statuses.filter((s) => s === 200).length;
    assert.equal(bids + statuses.filter((s) => s === 204).length, n, `statuses ${statuses.join(',')}`);
    assert.equal(d('bidder_bid_requests_total', { outcome: 'bid' }), bids);
    assert.equal(d('bidder_bid_requests_total', { outcome: 'nobid' }), n - bids);
    assert.equal(d('bidder_bid_requests_total', { outcome: 'bad_request', status: '400' }), 1);
    assert.equal(d('bidder_bid_requests_total', { outcome: 'too_large', status: '413' }), 1);
    assert.equal(d('bidder_bid_request_duration_seconds_count'), n + 2);
    assert.ok(d('bidder_bid_price_cpm_count') >= bids);
    assert.ok(d('process_cpu_user_seconds_total') > 0);
  });

  it('bidRequest/bidPrice cost well under a microsecond', () => {
    const m = app.get(MetricsService);
    const N = 200_000;
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) {
      m.bidRequest(i % 3 === 0 ? 'bid' : 'nobid', i % 3 === 0 ? null : 'floor', 0.0004);
      m.bidPrice(1.5);
    }
    const ns = Number(process.hrtime.bigint() - t0) / N;
    assert.ok(ns < 1000, `${ns.toFixed(0)} ns per request`);
  });

  it('/metrics/cluster aggregates the workers publishing to Redis, without the worker label', async () => {
    const mine = await scrape();
    const f = await scrape('/metrics/cluster');
    assert.equal(sum(f, 'bidder_cluster_workers'), 1);
    assert.equal(sum(f, 'bidder_bid_requests_total'), sum(mine, 'bidder_bid_requests_total'));
    for (const fam of f.values()) for (const s of fam.samples) assert.equal(s.labels.worker, undefined);
    const byWorker = await scrape('/metrics/cluster?by=worker');
    assert.equal(sum(byWorker, 'bidder_bid_requests_total', { worker: 'w-test' }), sum(mine, 'bidder_bid_requests_total'));
  });

  it('/health/live answers; /health/ready fails once shutting down, and open connections are told to close', async () => {
    assert.equal((await request(`${url}/health/live`)).status, 200);
    const ready = await request(`${url}/health/ready`);
    assert.equal(ready.status, 200);
    assert.equal((JSON.parse(ready.body) as { status: string }).status, 'ready');
    // A keep-alive connection open before the stop may still carry a request during the drain.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal((await request(`${url}/health/live`, { agent })).status, 200);
    const closing = app.close();
    const during = await request(`${url}/health/ready`, { agent });
    assert.equal(during.status, 503);
    assert.deepEqual((JSON.parse(during.body) as { problems: string[] }).problems, ['shutting down']);
    assert.equal(during.headers.connection, 'close');
    await closing;
    agent.destroy();
  });
});
