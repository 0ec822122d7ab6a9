// Unit tests of the load test's pure parts: the k6 request generator, the response validator, the
// scenario plan (with the ramp's verdict) and the SVG chart writer. The k6 modules are ES modules
// (k6/package.json); Node 24 loads them with require().
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');

type Obj = Record<string, any>;

interface Meta {
  imps: { id: string; mt: number[]; floor: number; fcur: string }[];
  cur: string[];
  nofill: string;
  inv: string;
}
interface Entry {
  rest: string;
  meta: Meta;
}
interface Phase {
  name: string;
  rate: number;
  start: number;
  duration: number;
  measured: boolean;
}
interface Plan {
  scenario: string;
  phases: Phase[];
  bucket: number;
  nBuckets: number;
  total: number;
  scenarios: Record<string, { rate: number; startTime: string; duration: string; preAllocatedVUs: number; maxVUs: number }>;
  thresholds: Record<string, unknown[]>;
  settings: Record<string, number | string>;
}
interface Step {
  name: string;
  offered: number;
  requests: number;
  sustained: boolean;
  why: string;
}

/* eslint-disable @typescript-eslint/no-require-imports */
const gen = require(path.join(ROOT, 'k6', 'lib', 'generator.js')) as {
  buildPool(n: number, seed: number): Entry[];
  bodyFor(e: Entry, id: string): string;
};
const val = require(path.join(ROOT, 'k6', 'lib', 'validate.js')) as {
  validate(status: number, body: string | null, id: string, meta: Meta, strict: boolean): string;
};
const planLib = require(path.join(ROOT, 'k6', 'lib', 'plan.js')) as {
  seconds(t: string): number;
  settings(env: Record<string, string>): Record<string, number | string>;
  makePlan(s: Record<string, number | string>): Plan;
  rampResult(data: unknown, plan: Plan): { sustained: number; steps: Step[] };
  buckets(data: unknown, plan: Plan): { t: number; count: number; rps: number; offered: number }[];
};
const svg = require(path.join(ROOT, 'scripts', 'lib', 'loadtest-svg.js')) as {
  lineChart(o: unknown): string;
};
/* eslint-enable @typescript-eslint/no-require-imports */

describe('k6 request generator', () => {
  const pool = gen.buildPool(3000, 7);
  const reqs = pool.map((e, i) => JSON.parse(gen.bodyFor(e, `run-x-${i}`)) as Obj);

  it('is deterministic for a seed', () => {
    assert.deepEqual(gen.buildPool(20, 7), pool.slice(0, 20));
    assert.notDeepEqual(gen.buildPool(20, 8), pool.slice(0, 20));
  });

  it('writes the id first and every body parses', () => {
    assert.ok(gen.bodyFor(pool[0], 'abc').startsWith('{"id":"abc",'));
    reqs.forEach((r, i) => assert.equal(r.id, `run-x-${i}`));
  });

  it('mixes inventory, media types, native forms, imps, floors and currencies', () => {
    const count = (f: (r: Obj) => boolean): number => reqs.filter(f).length;
    const imps = reqs.flatMap((r) => r.imp as Obj[]);
    const share = (n: number, of: number): number => n / of;
    assert.ok(share(count((r) => Boolean(r.site)), reqs.length) > 0.4);
    assert.ok(share(count((r) => Boolean(r.app)), reqs.length) > 0.25);
    assert.equal(count((r) => Boolean(r.site) === Boolean(r.app)), 0, 'exactly one of site and app');
    assert.ok(imps.filter((i) => i.banner && i.banner.format).length > 100, 'banner format[]');
    assert.ok(imps.filter((i) => i.banner && i.banner.w).length > 100, 'banner w/h');
    assert.ok(imps.filter((i) => i.video).length > 200);
    assert.ok(imps.filter((i) => i.audio).length > 10);
    const natives = imps.filter((i) => i.native).map((i) => i.native.request);
    assert.ok(natives.filter((n) => typeof n === 'object').length > 50, 'native request as an object');
    assert.ok(natives.filter((n) => typeof n === 'string' && n.startsWith('{"native"')).length > 30, 'Native 1.0 wrapper');
    assert.ok(natives.filter((n) => typeof n === 'string' && n.startsWith('{"ver"')).length > 300, 'native request as a string');
    for (const n of natives) {
      const o = typeof n === 'string' ? JSON.parse(n) : n;
      const req = o.native ?? o;
      assert.ok(Array.isArray(req.assets) && req.assets.length >= 3);
    }
    assert.ok(count((r) => r.imp.length === 2) > 200 && count((r) => r.imp.length === 3) > 100, 'several imps');
    assert.ok(imps.filter((i) => i.bidfloorcur === 'EUR').length > 50 && imps.filter((i) => i.bidfloorcur === 'GBP').length > 5);
    assert.ok(count((r) => r.cur === undefined) > 300 && count((r) => Array.isArray(r.cur) && r.cur.includes('EUR')) > 100);
    assert.ok(count((r) => Array.isArray(r.bcat)) > 1000 && count((r) => Array.isArray(r.badv)) > 700 && count((r) => Array.isArray(r.bapp)) > 50);
    assert.ok(count((r) => r.regs && r.regs.gdpr === 1) > 300);
  });

  it('builds about 8 % unfillable requests, of three kinds', () => {
    const nofill = pool.filter((e) => e.meta.nofill);
    assert.ok(nofill.length > 150 && nofill.length < 400, `${nofill.length}`);
    for (const kind of ['floor', 'audio', 'deal']) assert.ok(nofill.some((e) => e.meta.nofill === kind), kind);
    for (const e of nofill.filter((x) => x.meta.nofill === 'floor')) assert.ok(e.meta.imps.every((i) => i.floor >= 1000));
  });

  it('keeps bodies near the reference size (1.7 KB)', () => {
    const sizes = pool.map((e) => e.rest.length).sort((a, b) => a - b);
    const median = sizes[sizes.length >> 1];
    assert.ok(median > 900 && median < 2500, `median ${median}`);
  });
});

describe('k6 response validation', () => {
  const meta: Meta = { imps: [{ id: '1', mt: [1], floor: 0.5, fcur: 'USD' }, { id: '2', mt: [4], floor: 0, fcur: 'USD' }], cur: ['USD'], nofill: '', inv: 'site' };
  const bid = { id: 'b1', impid: '1', price: 1.5, crid: 'c1', adm: '<a/>', mtype: 1 };
  const body = (over: Record<string, unknown> = {}, top: Record<string, unknown> = {}): string =>
    JSON.stringify({ id: 'r1', seatbid: [{ bid: [{ ...bid, ...over }] }], cur: 'USD', ...top });
  const cases: { name: string; status: number; body: string | null; strict?: boolean; meta?: Meta; bad?: RegExp }[] = [
    { name: '204', status: 204, body: null },
    { name: 'a valid bid', status: 200, body: body() },
    { name: 'no cur means USD', status: 200, body: JSON.stringify({ id: 'r1', seatbid: [{ bid: [bid] }] }) },
    { name: 'win-notice-served ad (nurl, no adm)', status: 200, body: body({ adm: undefined, nurl: 'https://x/win' }) },
    { name: '400', status: 400, body: '{}', bad: /status 400/ },
    { name: 'not JSON', status: 200, body: 'oops', bad: /not JSON/ },
    { name: 'wrong id', status: 200, body: body({}, { id: 'other' }), bad: /id/ },
    { name: 'no seatbid', status: 200, body: JSON.stringify({ id: 'r1' }), bad: /seatbid/ },
    { name: 'unknown impid', status: 200, body: body({ impid: '9' }), bad: /impid/ },
    { name: 'price 0', status: 200, body: body({ price: 0 }), bad: /price/ },
    { name: 'no crid', status: 200, body: body({ crid: '' }), bad: /crid/ },
    { name: 'no markup', status: 200, body: body({ adm: undefined }), bad: /adm/ },
    { name: 'currency not allowed', status: 200, body: body({}, { cur: 'EUR' }), bad: /cur/ },
    { name: 'mtype not offered (strict)', status: 200, body: body({ mtype: 2 }), bad: /mtype/ },
    { name: 'mtype not offered (baseline)', status: 200, body: body({ mtype: 2 }), strict: false },
    { name: 'under the floor', status: 200, body: body({ price: 0.4 }), bad: /floor/ },
    { name: 'bid on an unfillable request', status: 200, body: body(), meta: { ...meta, nofill: 'floor' }, bad: /unfillable/ },
    { name: 'unfillable request answered 204', status: 204, body: null, meta: { ...meta, nofill: 'floor' } },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const reason = val.validate(c.status, c.body, 'r1', c.meta ?? meta, c.strict ?? true);
      if (c.bad) assert.match(reason, c.bad);
      else assert.equal(reason, '');
    });
  }
});

describe('k6 scenario plan', () => {
  it('parses durations', () => {
    assert.equal(planLib.seconds('3m'), 180);
    assert.equal(planLib.seconds('1m30s'), 90);
    assert.equal(planLib.seconds('500ms'), 0.5);
    assert.equal(planLib.seconds('12'), 12);
    assert.throws(() => planLib.seconds('3 minutes'));
  });

  it('reference: exactly the reference load by default', () => {
    const p = planLib.makePlan(planLib.settings({}));
    assert.deepEqual(
      p.phases.map((x) => [x.name, x.rate, x.start, x.duration]),
      [
        ['warm_up', 100, 0, 5],
        ['r1300', 1300, 5, 180],
      ],
    );
    const r = p.scenarios.r1300;
    assert.equal(r.preAllocatedVUs, 200);
    assert.equal(r.maxVUs, 500);
    assert.equal(r.startTime, '5s');
    assert.deepEqual(p.thresholds['http_req_duration{scenario:r1300}'], ['p(99)<3', 'avg<1.2']);
    assert.ok(p.thresholds.http_req_failed);
    assert.equal(p.total, 185);
  });

  it('--duration shortens only the measured phase', () => {
    const p = planLib.makePlan(planLib.settings({ DURATION: '30s' }));
    assert.equal(p.phases[0].duration, 5);
    assert.equal(p.phases[1].duration, 30);
  });

  it('ramp: steps of rising rate with abort-on-fail thresholds, and the highest sustained step', () => {
    const p = planLib.makePlan(planLib.settings({ SCENARIO: 'ramp', RAMP_START: '1000', RAMP_STEP: '1000', RAMP_MAX: '4000', RAMP_STEP_DURATION: '10s' }));
    const steps = p.phases.filter((x) => x.measured);
    assert.deepEqual(
      steps.map((x) => x.rate),
      [1000, 2000, 3000, 4000],
    );
    assert.equal(steps[1].start, 15);
    const th = p.thresholds['http_req_duration{step:step_02}'][0] as { threshold: string; abortOnFail: boolean; delayAbortEval: string };
    assert.equal(th.threshold, 'p(99)<10');
    assert.equal(th.abortOnFail, true);
    // Step 2 runs from 15 s to 25 s; it is judged from 17 s (settled) and evaluated from 21 s.
    assert.equal(th.delayAbortEval, '21s');
    // A synthetic k6 summary: steps 1-2 fine, step 3 over the p99 limit, step 4 never ran.
    // Latency, errors and checks are read from the settled part (tag `step`), the rest per step.
    const metrics: Record<string, { values: Record<string, number> }> = {};
    const put = (name: string, rate: number, p99: number): void => {
      metrics[`http_reqs{scenario:${name}}`] = { values: { count: rate * 10 } };
      metrics[`http_reqs{step:${name}}`] = { values: { count: rate * 8 } };
      metrics[`http_req_duration{scenario:${name}}`] = { values: { avg: 1, 'p(99)': 99, med: 0.5 } };
      metrics[`http_req_duration{step:${name}}`] = { values: { avg: 1, 'p(99)': p99, med: 0.5 } };
      metrics[`http_req_failed{step:${name}}`] = { values: { rate: 0 } };
      metrics[`checks{step:${name}}`] = { values: { rate: 1 } };
      metrics[`dropped_iterations{scenario:${name}}`] = { values: { count: 0 } };
    };
    put('step_01', 1000, 2);
    put('step_02', 2000, 4);
    put('step_03', 3000, 25);
    const r = planLib.rampResult({ metrics }, p);
    assert.equal(r.sustained, 2000);
    assert.deepEqual(
      r.steps.map((s) => s.sustained),
      [true, true, false],
    );
    assert.match(r.steps[2].why, /p99 25\.00 ms > 10 ms/);
  });

  it('time buckets give per-interval throughput and offered rate', () => {
    const p = planLib.makePlan(planLib.settings({ DURATION: '10s', RATE: '200', BUCKET: '5s' }));
    const metrics = {
      'http_reqs{tb:0}': { values: { count: 500 } },
      'http_reqs{tb:1}': { values: { count: 1000 } },
      'http_reqs{tb:2}': { values: { count: 1000 } },
      'http_reqs{tb:3}': { values: { count: 3 } },
    };
    const b = planLib.buckets({ metrics }, p);
    assert.deepEqual(
      b.map((x) => [x.t, x.rps, x.offered]),
      [
        [0, 100, 100],
        [5, 200, 200],
        [10, 200, 200],
      ],
    );
  });
});

describe('SVG line chart', () => {
  it('draws series, axes and limits', () => {
    const out = svg.lineChart({
      title: 'Latency <test>',
      xLabel: 's',
      yLabel: 'ms',
      yLog: true,
      series: [
        { name: 'p50', points: [[0, 0.5], [1, 0.6], [2, null], [3, 0.7]] },
        { name: 'p99', points: [[0, 2], [1, 30], [3, 4]] },
      ],
      hLines: [{ y: 10, label: 'limit' }],
    });
    assert.ok(out.startsWith('<svg') && out.endsWith('</svg>'));
    assert.match(out, /Latency &lt;test&gt;/);
    assert.equal((out.match(/<path /g) ?? []).length, 2);
    assert.match(out, /limit/);
  });

  it('says so when there is no data', () => {
    assert.match(svg.lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ name: 'a', points: [] }] }), /no data/);
  });
});
