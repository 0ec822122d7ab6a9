// Unit tests of the soak scenario's pure parts: its plan (k6/lib/plan.js) and the verdict on its
// samples (tools/lib/loadtest-soak.js) on made-up samples: a flat run passes, and each criterion
// fails on its own failure, with the exit status and the reason saying which.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

type Obj = Record<string, any>;

/* eslint-disable @typescript-eslint/no-require-imports */
const planLib = require(path.join(ROOT, 'k6', 'lib', 'plan.js')) as { settings(env: Record<string, string>): Obj; makePlan(s: Obj): Obj; mainPhaseName(s: Obj): string };
const soak = require(path.join(ROOT, 'tools', 'lib', 'loadtest-soak.js')) as {
  verdict(a: Obj): Obj;
  exitCode(v: Obj): number;
  section(v: Obj, h: string): string[];
  plots(v: Obj, note: string): Record<string, string>;
  scrape(text: string, wanted: string[]): Record<string, number[]>;
};
/* eslint-enable @typescript-eslint/no-require-imports */

const T0 = 1_700_000_000_000;
const PHASE = { start: 5, duration: 1800 };

/**
 * Samples every `every` s from the start to the end of the phase: `rss(x)` MB, `backlog(x)` the bid
 * log in Redis (MB), `keys(x)` the keys [without a TTL, with one] at x s; used_memory follows.
 */
function samples(rss: (x: number, worker: number) => number, backlog: (x: number) => number, every = 10, keys: (x: number) => [number, number] = healthyKeys): Obj {
  const out = [];
  for (let x = 0; x <= PHASE.start + PHASE.duration; x += every) {
    out.push({
      t: T0 + x * 1000,
      workers: [0, 1].map((id) => ({ pmId: id, pid: 100 + id, rssMB: rss(x, id) })),
      daemonRssMB: 60,
      shipperRssMB: 150,
      redisUsedMB: 1 + backlog(x) + keys(x)[1] / 10_000,
      redisKeys: keys(x)[0] + keys(x)[1],
      redisKeysWithTtl: keys(x)[1],
      log: { bidder_log_bytes_queued: 1e6, bidder_log_bytes_pending: 0, bidder_log_spill_bytes: 0, bidder_log_backlog_bytes: backlog(x) * 1024 * 1024 },
      shipper: {},
    });
  }
  return { intervalS: every, samples: out };
}

const complete = { sent: 2_340_000, requestRecords: 2_340_000, responseRecords: 2_340_000, lost: 0, complete: true };
// Warming up for 2 minutes, then flat with a GC sawtooth; Redis's bid log filling and drained by the
// shipper; 60 keys without a TTL, and markers with a TTL growing with the notices (260 a second).
const healthyRss = (x: number, w: number) => (x < 120 ? 100 + x / 2 : 160) + w * 5 + 3 * Math.sin(x / 7);
const healthyRedis = (x: number) => 2 + 8 * ((x % 30) / 30);
function healthyKeys(x: number): [number, number] {
  return [60, 260 * x];
}

describe('soak: the plan', () => {
  it('is 30 minutes at 1300/s after the warm-up, judged by k6 on its answers only', () => {
    const p = planLib.makePlan(planLib.settings({ SCENARIO: 'soak' }));
    assert.equal(p.scenario, 'soak');
    const main = p.phases.find((x: Obj) => x.measured);
    assert.equal(main.name, 's1300');
    assert.equal(main.duration, 1800);
    assert.equal(main.rate, 1300);
    assert.equal(p.bucket, 10);
    assert.deepEqual(p.thresholds.bid_invalid, ['count<=0']);
    assert.deepEqual(p.thresholds.notice_failed, ['count<1']);
    // Latency and drops are only observed (thresholds that cannot fail), not judged.
    assert.deepEqual(p.thresholds['http_req_duration{scenario:s1300,kind:bid}'], ['max>=0']);
    assert.deepEqual(p.thresholds['dropped_iterations{scenario:s1300}'], ['count>=0']);
    // The reference keeps its latency thresholds.
    const r = planLib.makePlan(planLib.settings({ SCENARIO: 'reference' }));
    assert.deepEqual(r.thresholds['http_req_duration{scenario:r1300,kind:bid}'], ['p(99)<3', 'avg<1.2']);
    assert.equal(planLib.makePlan(planLib.settings({ SCENARIO: 'soak', DURATION: '90s', RATE: '200' })).phases[1].name, 's200');
  });
});

describe('soak: the verdict', () => {
  it('passes a flat run: RSS from minute 5 to the end, Redis bounded, every record', () => {
    const v = soak.verdict({ sampling: samples(healthyRss, healthyRedis), t0: T0, phase: PHASE, logs: complete });
    assert.equal(v.ok, true, JSON.stringify({ rss: v.rss, redis: v.redis }));
    assert.equal(soak.exitCode(v), 0);
    assert.equal(v.windows.settleAt, 305);
    assert.equal(v.windows.lastFrom, 1505);
    assert.equal(v.windows.rssWindow, 60);
    assert.equal(v.rss.workers.length, 2);
    assert.ok(Math.abs(v.rss.maxGrowth) < 0.03, String(v.rss.maxGrowth));
    assert.ok(v.series.length > 180);
    assert.match(soak.section(v, '##').join('\n'), /\*\*The soak passed\.\*\*/);
    // Markers with a TTL grow used_memory: reported, not judged.
    assert.ok(Math.abs(v.redis.keysWithTtlPerMinute - 260 * 60) < 1, String(v.redis.keysWithTtlPerMinute));
    assert.ok(v.redis.usedMBPerMinute > 1, String(v.redis.usedMBPerMinute));
    assert.equal(v.redis.persistentKeys.lastMax, 60);
  });

  it('fails a worker whose RSS keeps growing after minute 5 (exit 9), not one that grew before it', () => {
    const leak = (x: number, w: number) => healthyRss(x, w) + (w === 1 ? x * 0.01 : 0); // +3 MB per 5 min
    const v = soak.verdict({ sampling: samples(leak, healthyRedis), t0: T0, phase: PHASE, logs: complete });
    assert.deepEqual(v.failed, ['rss']);
    assert.equal(soak.exitCode(v), 9);
    assert.ok(v.rss.workers[1].growth > 0.05 && v.rss.workers[0].growth < 0.05);
    assert.match(v.rss.why, /RSS grew by \d+\.\d %/);
    assert.match(soak.section(v, '##').join('\n'), /The soak failed: a worker's RSS grew/);
  });

  it('fails a bid log that the shipper stops draining in the last 5 minutes (exit 10)', () => {
    const stalled = (x: number) => (x < 1505 ? healthyRedis(x) : 10 + (x - 1505) * 0.05); // +15 MB
    const v = soak.verdict({ sampling: samples(healthyRss, stalled), t0: T0, phase: PHASE, logs: complete });
    assert.deepEqual(v.failed, ['redis']);
    assert.equal(soak.exitCode(v), 10);
    assert.ok(v.redis.backlog.lastMaxMB > v.redis.backlog.allowedMB);
    assert.match(v.redis.why, /the bid log in Redis peaked at .* the shipper does not keep up/);
  });

  it('fails keys without a TTL that keep accumulating (exit 10)', () => {
    const leaking = (x: number): [number, number] => [60 + Math.floor(x / 2), 260 * x];
    const v = soak.verdict({ sampling: samples(healthyRss, healthyRedis, 10, leaking), t0: T0, phase: PHASE, logs: complete });
    assert.deepEqual(v.failed, ['redis']);
    assert.match(v.redis.why, /keys without a TTL grew to \d+ in the last window, above \d+/);
  });

  it('fails a run that lost records (exit 12), and one with no samples on every criterion (exit 15)', () => {
    const lost = { ...complete, responseRecords: complete.sent - 3, lost: 3, complete: false };
    const v = soak.verdict({ sampling: samples(healthyRss, healthyRedis), t0: T0, phase: PHASE, logs: lost });
    assert.deepEqual(v.failed, ['records']);
    assert.equal(soak.exitCode(v), 12);
    assert.match(v.records.why, /3 answered requests without their two records/);
    const none = soak.verdict({ sampling: { intervalS: 10, samples: [] }, t0: T0, phase: PHASE, logs: null });
    assert.deepEqual(none.failed, ['rss', 'redis', 'records']);
    assert.equal(soak.exitCode(none), 15);
    assert.match(none.rss.why, /too few RSS samples/);
  });

  it('scales its windows to a shortened soak', () => {
    const short = { start: 2, duration: 60 };
    const s = samples(healthyRss, healthyRedis, 2);
    s.samples = s.samples.filter((x: Obj) => x.t <= T0 + 62_000);
    const v = soak.verdict({ sampling: s, t0: T0, phase: short, logs: complete });
    assert.equal(v.windows.settleAt, 12);
    assert.equal(v.windows.lastFrom, 52);
    assert.equal(v.windows.rssWindow, 6);
    assert.ok(v.rss.workers.every((w: Obj) => w.atSettleMB !== null && w.atEndMB !== null));
  });

  it('plots memory, Redis and the bid log with a line per series', () => {
    const v = soak.verdict({ sampling: samples(healthyRss, healthyRedis), t0: T0, phase: PHASE, logs: complete });
    const svgs = soak.plots(v, 'note');
    assert.deepEqual(Object.keys(svgs).sort(), ['soak-log.svg', 'soak-redis.svg', 'soak-rss.svg']);
    // 2 workers, the daemon and the shipper; Redis and the backlog; queued, pending and spilled.
    const paths = (svg: string) => (svg.match(/<path /g) ?? []).length;
    assert.equal(paths(svgs['soak-rss.svg']), 4);
    assert.equal(paths(svgs['soak-redis.svg']), 2);
    assert.equal(paths(svgs['soak-log.svg']), 3);
  });

  it("reports and plots each worker's main arena ([heap]), the external memory and the open connections when they were sampled", () => {
    const sampling = samples(healthyRss, healthyRedis);
    for (const s of sampling.samples) {
      const x = (s.t - T0) / 1000;
      for (const w of s.workers) w.heapMB = x < 900 ? 40 + w.pmId : 60 + w.pmId; // a step at minute 15
      s.log.nodejs_external_memory_bytes = 20 * 1024 * 1024;
      s.log.bidder_http_connections_open = x < 900 ? 250 : 400;
    }
    const v = soak.verdict({ sampling, t0: T0, phase: PHASE, logs: complete });
    assert.deepEqual(v.rss.workers.map((w: Obj) => [w.heap.atSettleMB, w.heap.atEndMB]), [
      [40, 60],
      [41, 61],
    ]);
    const text = soak.section(v, '##').join('\n');
    assert.match(text, /main arena/);
    assert.match(text, /Open HTTP connections, all workers: 250 at minute 5, 400 at the end, 400 at most/);
    assert.match(text, /\| 0 \| [\d.]+ MB \| [\d.]+ MB \| -?[\d.]+ % \| 40(\.0)? → 60(\.0)? MB \|/);
    const paths = (svg: string) => (svg.match(/<path /g) ?? []).length;
    // 2 workers' RSS, their [heap], external, the daemon and the shipper.
    assert.equal(paths(soak.plots(v, 'note')['soak-rss.svg']), 7);
  });

  it('reads the families it samples from a Prometheus exposition', () => {
    const text = '# TYPE bidder_log_spill_bytes gauge\nbidder_log_spill_bytes{worker="0"} 10\nbidder_log_spill_bytes{worker="1"} 12\nbidder_log_backlog_bytes 5e3\nother 1\n';
    assert.deepEqual(soak.scrape(text, ['bidder_log_spill_bytes', 'bidder_log_backlog_bytes']), { bidder_log_spill_bytes: [10, 12], bidder_log_backlog_bytes: [5000] });
  });
});
