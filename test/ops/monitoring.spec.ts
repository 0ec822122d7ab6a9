// The monitoring files (deploy/monitoring/): the alert rules pass `promtool check rules`, every alert
// fires in `promtool test rules` on the failure it is for (and a broken rule makes that test fail);
// the dashboard's queries parse as PromQL; and every metric the rules and the dashboard read is one
// the code exports: read from a running bidder's /metrics/cluster?by=worker (what Prometheus scrapes)
// and a running shipper's /metrics, not from a list kept by hand.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parse as parseYaml, stringify as toYaml } from 'yaml';
import { request, startTestApp, type TestApp } from '../support/app';
import { spawnShipper, tmpDir } from '../shipper/support';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const DIR = path.join(ROOT, 'deploy', 'monitoring');
const RULES = path.join(DIR, 'bidder-alerts.yml');
const RULE_TESTS = path.join(DIR, 'bidder-alerts.test.yml');
const DASHBOARD = path.join(DIR, 'bidder-dashboard.json');
const PROMETHEUS = path.join(DIR, 'prometheus.yml');

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { findPromtool } = require(path.join(ROOT, 'scripts', 'lib', 'promtool.js')) as {
  findPromtool(opts?: { log?: (m: string) => void }): Promise<{ bin: string | null; reason?: string; built?: boolean }>;
};

type Obj = Record<string, any>;

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
}

function rules(): Rule[] {
  const doc = parseYaml(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> };
  return doc.groups.flatMap((g) => g.rules);
}

function dashboardPanels(): Obj[] {
  const d = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as Obj;
  return (d.panels as Obj[]).filter((p) => p.type !== 'row');
}

/** The dashboard's queries with Grafana's variables replaced by values Prometheus accepts. */
function dashboardExprs(): string[] {
  return dashboardPanels().flatMap((p) =>
    (p.targets as Obj[]).map((t) =>
      String(t.expr)
        .replace(/\$__rate_interval|\$__range/g, '5m')
        .replace(/\$instance|\$worker|\$campaign/g, '.*'),
    ),
  );
}

// Every identifier in a PromQL expression that is not a metric name: functions, aggregations,
// keywords. An unknown word fails the test, so a new function is added here knowingly.
const PROMQL_WORDS = new Set([
  'sum', 'min', 'max', 'avg', 'count', 'topk', 'bottomk', 'quantile', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'and', 'or', 'unless', 'bool', 'offset',
  'rate', 'irate', 'increase', 'deriv', 'changes', 'resets', 'delta', 'histogram_quantile', 'time', 'hour', 'vector', 'scalar', 'clamp_min', 'clamp_max', 'absent', 'label_replace',
]);

/** The metric names an expression selects (label matchers, strings, grouping labels and durations removed). */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, '$1 ')
    .replace(/\[[^\]]*\]/g, ' ');
  const names: string[] = [];
  for (const m of bare.matchAll(/[A-Za-z_:][A-Za-z0-9_:]*/g)) {
    const w = m[0];
    if (PROMQL_WORDS.has(w)) continue;
    // Exponents of numbers (1e3) and duration units after a number never start a word here.
    names.push(w);
  }
  return names;
}

/** Family names of a Prometheus text exposition (`# TYPE name type`), with the series names each family yields. */
function exported(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m;
    out.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) out.add(name + s);
  }
  return out;
}

function runPromtool(bin: string, args: string[]): { status: number | null; out: string } {
  const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 120_000, cwd: DIR });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

describe('monitoring: alert rules and dashboard', () => {
  let promtool: string | null = null;
  let noPromtool = '';

  before(async () => {
    const found = await findPromtool({ log: (m) => console.log(m) });
    promtool = found.bin;
    noPromtool = found.reason ?? '';
  });

  it('the rules pass `promtool check rules`', (t) => {
    if (!promtool) return t.skip(noPromtool);
    const r = runPromtool(promtool, ['check', 'rules', RULES]);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${rules().length} rules found`), r.out);
  });

  it('every alert fires in `promtool test rules` on its failure, and is quiet before and after', (t) => {
    if (!promtool) return t.skip(noPromtool);
    const r = runPromtool(promtool, ['test', 'rules', RULE_TESTS]);
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /SUCCESS/);
    // Every alert has a case where it fires and one where it does not.
    const tests = parseYaml(fs.readFileSync(RULE_TESTS, 'utf8')) as { tests: Array<{ alert_rule_test: Array<{ alertname: string; exp_alerts: unknown[] }> }> };
    const cases = tests.tests.flatMap((c) => c.alert_rule_test);
    for (const rule of rules().filter((x) => x.alert)) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      assert.ok(mine.some((c) => c.exp_alerts.length > 0), `${rule.alert}: no test case where it fires`);
      assert.ok(mine.some((c) => c.exp_alerts.length === 0), `${rule.alert}: no test case where it stays quiet`);
    }
  });

  it('a broken rule fails those tests (the tests can fail)', (t) => {
    if (!promtool) return t.skip(noPromtool);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'alerts-broken-'));
    try {
      const doc = parseYaml(fs.readFileSync(RULES, 'utf8')) as { groups: Array<{ rules: Rule[] }> };
      const dropped = doc.groups.flatMap((g) => g.rules).find((x) => x.alert === 'BidLogRecordsDropped');
      assert.ok(dropped);
      dropped.expr = dropped.expr.replace(/> 0$/, '> 100');
      fs.writeFileSync(path.join(dir, 'bidder-alerts.yml'), toYaml(doc));
      fs.copyFileSync(RULE_TESTS, path.join(dir, 'bidder-alerts.test.yml'));
      const r = spawnSync(promtool, ['test', 'rules', 'bidder-alerts.test.yml'], { encoding: 'utf8', timeout: 120_000, cwd: dir });
      assert.notEqual(r.status, 0, 'promtool test rules passed with a rule that never fires');
      assert.match(`${r.stdout}${r.stderr}`, /BidLogRecordsDropped/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the dashboard is Grafana JSON whose every query parses as PromQL', (t) => {
    const d = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as Obj;
    assert.equal(typeof d.title, 'string');
    assert.ok(Number.isInteger(d.schemaVersion));
    const ids = (d.panels as Obj[]).map((p) => p.id as number);
    assert.equal(new Set(ids).size, ids.length, 'panel ids are unique');
    const vars = (d.templating.list as Obj[]).map((v) => v.name as string);
    assert.deepEqual(vars, ['datasource', 'instance', 'worker', 'campaign']);
    const panels = dashboardPanels();
    assert.ok(panels.length >= 20, `${panels.length} panels`);
    for (const p of panels) {
      assert.ok(p.title && p.description, `panel ${p.id} has a title and a description`);
      assert.equal(p.datasource.uid, '${datasource}', p.title);
      assert.ok(p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24, `${p.title}: gridPos within 24 columns`);
      assert.ok((p.targets as Obj[]).length > 0, `${p.title}: a query`);
    }
    // What an on-call person looks at, each on some panel.
    const all = dashboardExprs().join('\n');
    for (const m of ['bidder_bid_requests_total', 'bidder_bid_request_duration_seconds_bucket', 'bidder_event_loop_delay_seconds', 'bidder_pacing_blocked_total', 'bidder_log_records_dropped_total', 'bidder_log_spill_bytes', 'bidder_log_backlog_age_seconds', 'shipper_last_success_timestamp_seconds', 'bidder_log_redis_up', 'shipper_redis_up', 'process_cpu_seconds_total']) {
      assert.ok(all.includes(m), `no panel reads ${m}`);
    }
    // Spend and pacing per campaign (issue 25): target against spend, the day's budget, the throttle rate.
    const perCampaign = dashboardPanels().filter((p) => (p.targets as Obj[]).some((t) => /by \(campaign\)/.test(String(t.expr))));
    const campaignExprs = perCampaign.flatMap((p) => (p.targets as Obj[]).map((t) => String(t.expr))).join('\n');
    for (const m of ['bidder_pacing_spent_usd', 'bidder_pacing_target_usd', 'bidder_pacing_budget_usd', 'bidder_pacing_share']) {
      assert.ok(campaignExprs.includes(m), `no per-campaign panel reads ${m}`);
    }
    for (const p of perCampaign) {
      for (const t of p.targets as Obj[]) assert.match(String(t.expr), /campaign=~"\$campaign"/, `${p.title}: follows the campaign selector`);
    }
    assert.ok(all.includes('bidder_pacing_throttled_total'), 'no panel reads bidder_pacing_throttled_total');
    if (!promtool) return t.skip(`queries not parsed: ${noPromtool}`);
    // promtool has no expression checker of its own: the queries become recording rules.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-rules-'));
    try {
      const exprs = dashboardExprs();
      const file = path.join(dir, 'dashboard.yml');
      fs.writeFileSync(file, toYaml({ groups: [{ name: 'dashboard', rules: exprs.map((expr, i) => ({ record: `dashboard:query:${i}`, expr })) }] }));
      const r = runPromtool(promtool, ['check', 'rules', file]);
      assert.equal(r.status, 0, r.out);
      assert.match(r.out, new RegExp(`SUCCESS: ${exprs.length} rules found`));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the example Prometheus configuration scrapes the jobs the rules and the dashboard name', () => {
    const cfg = parseYaml(fs.readFileSync(PROMETHEUS, 'utf8')) as Obj;
    assert.deepEqual(cfg.rule_files, ['bidder-alerts.yml']);
    const jobs = Object.fromEntries((cfg.scrape_configs as Obj[]).map((j) => [j.job_name, j]));
    assert.equal(jobs.bidder.metrics_path, '/metrics/cluster');
    assert.deepEqual(jobs.bidder.params, { by: ['worker'] });
    assert.ok(jobs.shipper);
    const text = fs.readFileSync(RULES, 'utf8') + fs.readFileSync(DASHBOARD, 'utf8');
    for (const job of text.matchAll(/job=~?\\?"([^"\\]+)\\?"/g)) {
      for (const name of job[1].split('|')) assert.ok(jobs[name], `job "${name}" is not scraped by prometheus.yml`);
    }
  });

  describe('every metric name used is one the code exports', () => {
    let app: TestApp;
    let bidderNames = new Set<string>();
    let shipperNames = new Set<string>();

    let campaignIds: string[] = [];
    let bidderScrape = '';
    const campaignDir = fs.mkdtempSync(path.join(os.tmpdir(), 'monitoring-campaigns-'));

    before(async () => {
      // The demo campaigns (all asap, budgeted) with the last one paced evenly, so that every pacing
      // family, the even-only target included, has series to check.
      const demo = JSON.parse(fs.readFileSync(path.join(ROOT, 'data', 'campaigns.demo.json'), 'utf8')) as { campaigns: Obj[] };
      demo.campaigns[demo.campaigns.length - 1].pacing = 'even';
      campaignIds = demo.campaigns.map((c) => String(c.id));
      const campaigns = path.join(campaignDir, 'campaigns.json');
      fs.writeFileSync(campaigns, JSON.stringify(demo));
      app = await startTestApp({ CAMPAIGNS_FILE: campaigns });
      const body = fs.readFileSync(path.join(ROOT, 'test', 'fixtures', 'samples', 'iab-openrtb2.x', 'bid-request_6.2.1_simple-banner.json'));
      const bid = await request(`${app.url}/openrtb2/bid`, { body, headers: { 'content-type': 'application/json' } });
      assert.equal(bid.status, 200);
      const m = await request(`${app.adminUrl}/metrics/cluster?by=worker`, { method: 'GET' });
      assert.equal(m.status, 200);
      bidderScrape = m.body.toString();
      bidderNames = exported(bidderScrape);
      const shipDir = tmpDir('monitoring-ship-');
      const shipper = spawnShipper({ REDIS_URL: app.redis.url, SHIP_DIR: shipDir });
      try {
        const s = await request(`${await shipper.adminUrl()}/metrics`, { method: 'GET' });
        assert.equal(s.status, 200);
        shipperNames = exported(s.body.toString());
      } finally {
        await shipper.stop();
        fs.rmSync(shipDir, { recursive: true, force: true });
      }
    });

    after(async () => {
      await app?.close();
      fs.rmSync(campaignDir, { recursive: true, force: true });
    });

    it('the scrapes hold the families the rules are built on (so the check below means something)', () => {
      assert.ok(bidderNames.has('bidder_bid_requests_total') && bidderNames.has('bidder_log_records_dropped_total') && bidderNames.has('process_cpu_seconds_total'), [...bidderNames].join(' '));
      assert.ok(shipperNames.has('shipper_last_success_timestamp_seconds') && shipperNames.has('process_cpu_seconds_total'), [...shipperNames].join(' '));
      assert.ok(!bidderNames.has('bidder_no_such_metric'));
    });

    it('the per-campaign families have series, labelled with campaigns of the campaign file only', () => {
      const even = campaignIds[campaignIds.length - 1];
      for (const name of ['bidder_pacing_spent_usd', 'bidder_pacing_budget_usd', 'bidder_pacing_share', 'bidder_pacing_target_usd']) {
        const labels = [...bidderScrape.matchAll(new RegExp(`^${name}\\{[^}]*campaign="([^"]*)"`, 'gm'))].map((m) => m[1]);
        assert.ok(labels.length > 0, `${name}: no series`);
        for (const c of labels) assert.ok(campaignIds.includes(c), `${name}: campaign "${c}" is not in the campaign file`);
        if (name === 'bidder_pacing_target_usd') assert.deepEqual([...new Set(labels)], [even], 'the target is for even campaigns');
        else assert.equal(new Set(labels).size, campaignIds.length, `${name}: every budgeted campaign`);
      }
    });

    it('the alert rules', () => {
      const missing: string[] = [];
      for (const r of rules()) {
        for (const name of metricNames(r.expr)) {
          // Prometheus's own series of every target: 1 when the scrape succeeded.
          if (name === 'up') continue;
          const jobs = /job=~?"([^"]+)"/.exec(r.expr)?.[1] ?? (name.startsWith('shipper_') ? 'shipper' : 'bidder');
          const ok = jobs.split('|').every((j) => (j === 'shipper' ? shipperNames : bidderNames).has(name));
          if (!ok) missing.push(`${r.alert}: ${name}`);
        }
      }
      assert.deepEqual(missing, []);
    });

    it('the dashboard', () => {
      const missing: string[] = [];
      for (const p of dashboardPanels()) {
        for (const t of p.targets as Obj[]) {
          const shipper = /job="shipper"/.test(String(t.expr));
          for (const name of metricNames(String(t.expr))) if (!(shipper ? shipperNames : bidderNames).has(name)) missing.push(`${p.title}: ${name}`);
        }
      }
      const d = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as Obj;
      for (const v of d.templating.list as Obj[]) {
        const q = typeof v.query === 'object' ? String(v.query.query) : '';
        const m = /label_values\((\w+)/.exec(q);
        if (m && !bidderNames.has(m[1])) missing.push(`variable ${v.name}: ${m[1]}`);
      }
      assert.deepEqual(missing, []);
    });

    it('a name the code does not export is caught', () => {
      assert.deepEqual(metricNames('sum by (instance) (rate(bidder_bids_total{job="bidder"}[5m])) / 2'), ['bidder_bids_total']);
      assert.ok(!bidderNames.has('bidder_bids_total'));
    });
  });
});
