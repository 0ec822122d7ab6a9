// The alert rules (deploy/monitoring/bidder-alerts.yml) on what Prometheus really scrapes during a
// failure, not on series written by hand: a bidder's /metrics/cluster?by=worker before and during a
// Redis outage (Redis stopped), and a shipper's /metrics before it stops, while it is down (the
// scrape fails: `up` 0, no series) and after it started again. The scrapes are replayed to
// `promtool test rules` at a 15 s scrape interval, with the labels the scrape config adds.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm } from '../support/prom';
import { startTestRedis } from '../support/redis';
import { spawnShipper, tmpDir } from '../shipper/support';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const RULES = path.join(ROOT, 'deploy', 'monitoring', 'bidder-alerts.yml');

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { findPromtool } = require(path.join(ROOT, 'scripts', 'lib', 'promtool.js')) as {
  findPromtool(opts?: { log?: (m: string) => void }): Promise<{ bin: string | null; reason?: string }>;
};

/** One scrape as Prometheus stores it: `up` and, when it succeeded, every sample. */
interface Scrape {
  up: 0 | 1;
  samples: Map<string, number>;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The metric names the rules read (and `up`). */
function ruleMetricNames(): Set<string> {
  const text = fs.readFileSync(RULES, 'utf8');
  return new Set(['up', ...[...text.matchAll(/\b(?:bidder|shipper|process)_[a-z0-9_]+/g)].map((m) => m[0])]);
}

function seriesKey(name: string, labels: Record<string, string>): string {
  const body = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(',');
  return `${name}{${body}}`;
}

/** A scrape of `url` with the target labels Prometheus adds; a failed scrape is `up` 0 and no samples. */
async function scrape(url: string | null, target: Record<string, string>, names: Set<string>): Promise<Scrape> {
  const samples = new Map<string, number>();
  let answer: { status: number; body: Buffer } | null = null;
  if (url !== null) answer = await request(url, { method: 'GET' }).catch(() => null);
  if (answer === null || answer.status !== 200) {
    samples.set(seriesKey('up', target), 0);
    return { up: 0, samples };
  }
  for (const f of parseProm(answer.body.toString()).values()) {
    for (const s of f.samples) if (names.has(s.name)) samples.set(seriesKey(s.name, { ...s.labels, ...target }), s.value);
  }
  samples.set(seriesKey('up', target), 1);
  return { up: 1, samples };
}

/** promtool input series: each scrape repeated `times` (15 s apart), `_` where a series is missing. */
function inputSeries(timeline: Array<{ scrape: Scrape; times: number }>): Array<{ series: string; values: string }> {
  const keys = new Set(timeline.flatMap((t) => [...t.scrape.samples.keys()]));
  return [...keys].map((series) => ({
    series,
    values: timeline
      .flatMap((t) => {
        const v = t.scrape.samples.get(series);
        return Array<string>(t.times).fill(v === undefined || Number.isNaN(v) ? '_' : String(v));
      })
      .join(' '),
  }));
}

describe('alert rules on real scrapes of a failure', { timeout: 180_000 }, () => {
  let promtool: string | null = null;
  let noPromtool = '';
  let dir = '';
  const names = ruleMetricNames();

  before(async () => {
    const found = await findPromtool({ log: (m) => console.log(m) });
    promtool = found.bin;
    noPromtool = found.reason ?? '';
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'alerts-real-'));
    // The rules without their annotations: the cases below check when each alert fires and with
    // which labels (bidder-alerts.test.yml checks the annotations' text).
    const doc = parseYaml(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Array<Record<string, unknown>> }> };
    for (const g of doc.groups) for (const r of g.rules) delete r.annotations;
    fs.writeFileSync(path.join(dir, 'rules.yml'), toYaml(doc));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  function promtoolTest(tests: unknown[]): { status: number | null; out: string } {
    const file = path.join(dir, 'tests.yml');
    fs.writeFileSync(file, toYaml({ rule_files: ['rules.yml'], evaluation_interval: '15s', tests }));
    const r = spawnSync(promtool!, ['test', 'rules', file], { encoding: 'utf8', timeout: 120_000, cwd: dir });
    return { status: r.status, out: `${r.stdout}${r.stderr}` };
  }

  it('a Redis outage: the bidder still answers its scrape (200), and BidderRedisUnreachable fires', async (t) => {
    if (!promtool) return t.skip(noPromtool);
    let app: TestApp | null = null;
    try {
      app = await startTestApp({});
      const url = `${app.adminUrl}/metrics/cluster?by=worker`;
      const target = { job: 'bidder', instance: 'bidder-1:8081' };
      const healthy = await scrape(url, target, names);
      assert.equal(healthy.up, 1, 'scraped with Redis up');
      assert.equal(healthy.samples.get(seriesKey('bidder_log_redis_up', { ...target, worker: app.config.workerId })), 1);
      await app.redis.stop();
      let outage: Scrape;
      const until = Date.now() + 15_000;
      do {
        await sleep(500);
        outage = await scrape(url, target, names);
      } while (Date.now() < until && outage.samples.get(seriesKey('bidder_log_redis_up', { ...target, worker: app.config.workerId })) !== 0);
      assert.equal(outage.up, 1, 'the scrape answers 200 during the outage');
      assert.equal(outage.samples.get(seriesKey('bidder_log_redis_up', { ...target, worker: app.config.workerId })), 0, 'the outage is in the figures');
      fs.writeFileSync(path.join(dir, 'bidder-scrapes.json'), JSON.stringify({ healthy: [...healthy.samples], outage: [...outage.samples] }));

      const r = promtoolTest([
        {
          interval: '15s',
          // 2 minutes healthy, then 5 minutes of the outage.
          input_series: inputSeries([
            { scrape: healthy, times: 8 },
            { scrape: outage, times: 20 },
          ]),
          alert_rule_test: [
            { eval_time: '1m', alertname: 'BidderRedisUnreachable', exp_alerts: [] },
            { eval_time: '6m30s', alertname: 'BidderRedisUnreachable', exp_alerts: [{ exp_labels: { severity: 'critical', instance: target.instance } }] },
            { eval_time: '6m30s', alertname: 'BidderTargetDown', exp_alerts: [] },
          ],
        },
      ]);
      assert.equal(r.status, 0, r.out);
    } finally {
      await app?.close();
    }
  });

  it('a shipper that stops and starts again: ShipperDown fires while it is down, BidderWorkerRestarted after', async (t) => {
    if (!promtool) return t.skip(noPromtool);
    const redis = await startTestRedis();
    const shipDir = tmpDir('alerts-real-ship-');
    const target = { job: 'shipper', instance: 'bidder-1:9465' };
    try {
      const first = spawnShipper({ REDIS_URL: redis.url, SHIP_DIR: shipDir });
      const before = await scrape(`${await first.adminUrl()}/metrics`, target, names);
      await first.stop();
      const down = await scrape(null, target, names);
      // A process started a second later has another start time.
      await sleep(1_100);
      const second = spawnShipper({ REDIS_URL: redis.url, SHIP_DIR: shipDir });
      const again = await scrape(`${await second.adminUrl()}/metrics`, target, names);
      await second.stop();
      assert.equal(before.up, 1);
      assert.equal(again.up, 1);
      const start = [...again.samples.keys()].find((k) => k.startsWith('process_start_time_seconds{'));
      assert.ok(start, 'the shipper exports process_start_time_seconds');
      assert.notEqual(before.samples.get(start), again.samples.get(start), 'a new start time');
      const labels = Object.fromEntries([...start.slice(start.indexOf('{') + 1, -1).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));

      const r = promtoolTest([
        {
          interval: '15s',
          // 2 minutes up, 4 minutes down, 6 minutes up again.
          input_series: inputSeries([
            { scrape: before, times: 8 },
            { scrape: down, times: 16 },
            { scrape: again, times: 24 },
          ]),
          alert_rule_test: [
            { eval_time: '1m45s', alertname: 'ShipperDown', exp_alerts: [] },
            { eval_time: '5m', alertname: 'ShipperDown', exp_alerts: [{ exp_labels: { severity: 'critical', ...target } }] },
            { eval_time: '7m', alertname: 'ShipperDown', exp_alerts: [] },
            { eval_time: '5m', alertname: 'BidderWorkerRestarted', exp_alerts: [] },
            { eval_time: '7m', alertname: 'BidderWorkerRestarted', exp_alerts: [{ exp_labels: { severity: 'warning', ...labels } }] },
          ],
        },
      ]);
      assert.equal(r.status, 0, r.out);
    } finally {
      await redis.stop();
      fs.rmSync(shipDir, { recursive: true, force: true });
    }
  });
});
