// Unit tests of the load test's pure parts: the k6 request generator, its body pool and sampled
// validation, the response validator, the scenario plan (with the ramp's verdict), the SVG chart
// writer and the report's validity checks. The k6 modules are ES modules (k6/package.json); Node 24
// loads them with require().
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as svg from '../../src/charts/svg';
import { fixtureReport } from '../../test/ops/support/loadtest-fixture';

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
interface Bucket {
  index: number;
  t: number;
  length: number;
  phase: string;
}
interface Phase {
  name: string;
  rate: number;
  start: number;
  duration: number;
  measured: boolean;
  buckets: Bucket[];
}
interface Plan {
  scenario: string;
  phases: Phase[];
  bucket: number;
  nBuckets: number;
  buckets: Bucket[];
  total: number;
  scenarios: Record<string, { rate: number; startTime: string; duration: string; preAllocatedVUs: number; maxVUs: number }>;
  thresholds: Record<string, unknown[]>;
  settings: Record<string, number | string>;
}
interface Step {
  name: string;
  offered: number;
  requests: number;
  shedShare: number | null;
  sustained: boolean;
  why: string;
}
interface Bad {
  why: string;
  reason: string;
}

/* eslint-disable @typescript-eslint/no-require-imports */
const gen = require(path.join(ROOT, 'k6', 'lib', 'generator.js')) as {
  buildPool(n: number, seed: number): Entry[];
  bodyFor(e: Entry, id: string): string;
  rng(seed: number): () => number;
};
const val = require(path.join(ROOT, 'k6', 'lib', 'validate.js')) as {
  validate(status: number, body: string | null, id: string, meta: Meta, strict: boolean): string;
};
const lean = require(path.join(ROOT, 'k6', 'lib', 'lean.js')) as {
  HEAD: string;
  WINDOW: number;
  EVERY: number;
  tailOf(e: Entry): string;
  idPrefix(runId: string, vu: number): string;
  requestBody(id: string, tail: string): string;
  Cursor: new (get: (i: number) => string, size: number, start: number, local?: number, every?: number) => { take(): string; index: number };
  quickCheck(status: number, body: string | null, id: string): string;
  checkAnswer(status: number, body: string | null, id: string, strict: boolean, sampled: boolean, meta: () => Meta): Bad | null;
  winNotice(body: string): string | null;
  impressionTracker(body: string): string | null;
};
const planLib = require(path.join(ROOT, 'k6', 'lib', 'plan.js')) as {
  seconds(t: string): number;
  settings(env: Record<string, string>): Record<string, number | string>;
  makePlan(s: Record<string, number | string>): Plan;
  k6Options(p: Plan, o: { thresholds: string }): { thresholds: Record<string, unknown[]>; tags: Record<string, string>; systemTags: string[] };
  rampResult(data: unknown, plan: Plan): { sustained: number; steps: Step[] };
  buckets(data: unknown, plan: Plan): { t: number; count: number; rps: number; offered: number; shed: number }[];
  phaseStats(data: unknown, phase: Phase): { parts: Obj };
};
const mdLib = require(path.join(ROOT, 'tools', 'lib', 'loadtest-markdown.js')) as { markdown(rep: Obj): string };
const report = require(path.join(ROOT, 'tools', 'lib', 'loadtest-report.js')) as {
  cpuFigures(
    c: {
      seconds: number;
      serverCpu: number | null;
      redisCpu: number | null;
      k6Cpu: number | null;
      daemonCpu: number | null;
      workersCpu: (number | null)[];
      helpersCpu?: number | null;
      shippedRecords?: number | null;
      machineBusy: number;
      steal: number;
    },
    st: { requests: number; httpRequests: number },
    cpus: number,
  ): {
    k6UsPerReq: number;
    k6UsPerHttpReq: number;
    serverUsPerReq: number;
    shipperUsPerReq: number | null;
    shipperCores: number | null;
    shipperShare: number | null;
    shipperUsPerRecord: number | null;
    machineBusyShare: number;
    saturated: boolean;
    latencyValid: boolean;
    why: string[];
  };
};
const proc = require(path.join(ROOT, 'tools', 'lib', 'loadtest-proc.js')) as {
  cpuSplit(cpus: number, taskset: boolean): { k6: string; servers: string } | null;
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

describe('k6 body pool and sampled validation (k6/lib/lean.js)', () => {
  const pool = gen.buildPool(256, 11);
  const tails = pool.map((e) => lean.tailOf(e));

  it('splices the id into a template: the body is the template with that id first', () => {
    const body = lean.requestBody('run-3-17', tails[5]);
    assert.equal(body, gen.bodyFor(pool[5], 'run-3-17'));
    assert.equal((JSON.parse(body) as Obj).id, 'run-3-17');
  });

  it('uses every template of the pool, from VUs that each hold a sliding window of it', () => {
    // As k6/bid.js: each VU starts at its own offset, keeps 16 templates and slides by one every 32 requests.
    const used = new Set<number>();
    let reads = 0;
    const get = (i: number): string => {
      reads++;
      return tails[i];
    };
    for (let vu = 1; vu <= 16; vu++) {
      const cur = new lean.Cursor(get, tails.length, (vu - 1) * lean.WINDOW);
      for (let k = 0; k < 2000; k++) {
        const tail = cur.take();
        assert.equal(tail, tails[cur.index], 'index names the template it returned');
        used.add(cur.index);
      }
    }
    assert.equal(used.size, tails.length);
    // 16 windows of 16, then one read per 32 requests.
    assert.equal(reads, 16 * lean.WINDOW + 16 * Math.floor(2000 / lean.EVERY));
  });

  it('gives every request of a run a unique id across VUs', () => {
    const ids = new Set<string>();
    for (let vu = 1; vu <= 50; vu++) {
      const prefix = lean.idPrefix('lt1', vu);
      for (let n = 1; n <= 200; n++) ids.add(prefix + n);
    }
    assert.equal(ids.size, 50 * 200);
    // No VU's ids can be another's: VU 1's 12th request is not VU 11's 2nd.
    assert.notEqual(lean.idPrefix('lt1', 1) + 12, lean.idPrefix('lt1', 11) + 2);
  });

  const meta: Meta = { imps: [{ id: '1', mt: [1], floor: 0.5, fcur: 'USD' }], cur: ['USD'], nofill: '', inv: 'site' };
  const answer = (id: string, price: number): string => JSON.stringify({ id, cur: 'USD', seatbid: [{ bid: [{ id: 'b', impid: '1', price, crid: 'c', adm: '<a/>', mtype: 1 }] }] });

  it('checks every answer cheaply: status, the id first, a seatbid', () => {
    assert.equal(lean.quickCheck(204, null, 'r1'), '');
    assert.equal(lean.quickCheck(200, answer('r1', 1), 'r1'), '');
    assert.match(lean.quickCheck(200, answer('r12', 1), 'r1'), /id/);
    assert.match(lean.quickCheck(200, answer('x', 1), 'r1'), /id/);
    assert.match(lean.quickCheck(200, '{"id":"r1","nbr":2}', 'r1'), /seatbid/);
    assert.match(lean.quickCheck(500, '', 'r1'), /status 500/);
    assert.match(lean.quickCheck(0, null, 'r1'), /no response/);
  });

  it('catches an error the cheap check cannot see on the sample, and one it can see on every answer', () => {
    // A seeded 1 % sample over 3000 answers that all bid under the floor: the cheap check passes them,
    // the sampled full validation catches about 1 % of them.
    const r = gen.rng(5);
    let caught = 0;
    for (let i = 0; i < 3000; i++) {
      const bad = lean.checkAnswer(200, answer(`r${i}`, 0.1), `r${i}`, true, r() < 0.01, () => meta);
      if (bad) {
        assert.equal(bad.why, 'validation');
        assert.match(bad.reason, /under floor/);
        caught++;
      }
    }
    assert.ok(caught >= 10 && caught <= 60, `${caught} caught`);
    // Unsampled, the same answer passes; a wrong id fails every time, sampled or not.
    assert.equal(lean.checkAnswer(200, answer('r1', 0.1), 'r1', true, false, () => meta), null);
    assert.deepEqual(lean.checkAnswer(200, answer('r2', 1), 'r1', true, false, () => meta), { why: 'marker', reason: 'body does not start with the request id' });
    assert.equal(lean.checkAnswer(502, '', 'r1', true, false, () => meta)?.why, 'status');
    // --validate: every answer is validated in full, so every one of these is caught.
    for (let i = 0; i < 20; i++) assert.equal(lean.checkAnswer(200, answer(`r${i}`, 0.1), `r${i}`, true, true, () => meta)?.why, 'validation');
  });

  it('reads the meta only for a sampled answer', () => {
    let reads = 0;
    const m = (): Meta => {
      reads++;
      return meta;
    };
    for (let i = 0; i < 100; i++) lean.checkAnswer(200, answer('r1', 1), 'r1', true, i % 10 === 0, m);
    assert.equal(reads, 10);
  });

  it('finds the win notice and the impression tracker of the first bid by string search', () => {
    const body = JSON.stringify({
      id: 'r1',
      seatbid: [{ bid: [{ id: 'b', impid: '1', price: 2.5, nurl: 'https://h:1/t/win?p=AB&s=CD&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}', adm: '{"url":"https://x/\\"nurl\\""}' }] }],
    });
    const win = lean.winNotice(body);
    assert.equal(win, 'https://h:1/t/win?p=AB&s=CD&price=2.0000&cur=USD');
    // The impression URL carries the browser signature: found in each kind of markup.
    const banner = JSON.stringify({ adm: "<a href='x'><img src='https://h:1/t/imp?p=AB&amp;s=EF' width='1'>" });
    assert.equal(lean.impressionTracker(banner), 'https://h:1/t/imp?p=AB&s=EF');
    const native = JSON.stringify({ adm: JSON.stringify({ eventtrackers: [{ event: 1, method: 1, url: 'https://h:1/t/imp?p=AB&s=EF' }] }) });
    assert.equal(lean.impressionTracker(native), 'https://h:1/t/imp?p=AB&s=EF');
    const vast = JSON.stringify({ adm: "<Impression id='imp'><![CDATA[https://h:1/t/imp?p=AB&s=EF]]></Impression>" });
    assert.equal(lean.impressionTracker(vast), 'https://h:1/t/imp?p=AB&s=EF');
    assert.equal(lean.impressionTracker('{"id":"r1"}'), null);
    assert.equal(lean.winNotice('{"id":"r1","seatbid":[{"bid":[{"price":1}]}]}'), null);
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
    assert.deepEqual(p.thresholds['http_req_duration{scenario:r1300,kind:bid}'], ['p(99)<3', 'avg<1.2']);
    assert.deepEqual(p.thresholds.bid_invalid, ['count<=0']);
    assert.deepEqual(p.thresholds.notice_failed, ['count<1']);
    assert.equal(p.total, 185);
    // The per-phase latency Trends get no threshold: k6 would sort them every 2 s.
    assert.equal(p.thresholds.answered_r1300, undefined);
  });

  it('k6 options: the minimal script shares the scenarios and tuning, not the sub-metrics', () => {
    const p = planLib.makePlan(planLib.settings({}));
    const full = planLib.k6Options(p, { thresholds: 'all' });
    const min = planLib.k6Options(p, { thresholds: 'phases' });
    assert.deepEqual(full.systemTags, ['status', 'scenario']);
    assert.deepEqual(full.tags, { kind: 'bid' });
    assert.deepEqual(min.systemTags, full.systemTags);
    assert.deepEqual(Object.keys(min.thresholds).sort(), [
      'dropped_iterations{scenario:r1300}',
      'dropped_iterations{scenario:warm_up}',
      'http_reqs{scenario:r1300,kind:bid}',
      'http_reqs{scenario:r1300}',
      'http_reqs{scenario:warm_up,kind:bid}',
      'http_reqs{scenario:warm_up}',
    ]);
  });

  it('overload: one phase at the given rate with room for VUs, judged by nothing', () => {
    const p = planLib.makePlan(planLib.settings({ SCENARIO: 'overload', RATE: '4000', DURATION: '20s', WARMUP_RATE: '2000', WARMUP_DURATION: '3s' }));
    assert.deepEqual(
      p.phases.map((x) => [x.name, x.rate, x.start, x.duration]),
      [
        ['warm_up', 2000, 0, 3],
        ['o4000', 4000, 3, 20],
      ],
    );
    assert.equal(p.scenarios.o4000.maxVUs, 1000);
    assert.ok(!Object.values(p.thresholds).flat().some((t) => typeof t === 'object' && (t as { abortOnFail?: boolean }).abortOnFail));
    assert.equal(p.thresholds['http_req_duration{scenario:o4000,kind:bid}'][0], 'max>=0');
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
    // Both servers warm up at the first step's rate for 15 s, unjudged: a cold bidder is still compiling.
    const warm = p.phases.find((x) => x.name === 'warm_up');
    assert.deepEqual(warm && { rate: warm.rate, start: warm.start, duration: warm.duration, measured: warm.measured }, { rate: 1000, start: 0, duration: 15, measured: false });
    assert.equal(steps[1].start, 25);
    const th = p.thresholds['answered_step_02{step:step_02}'][0] as { threshold: string; abortOnFail: boolean; delayAbortEval: string };
    assert.equal(th.threshold, 'p(99)<10');
    assert.equal(th.abortOnFail, true);
    // Step 2 runs from 25 s to 35 s; it is judged from 27 s (settled) and evaluated from 31 s.
    assert.equal(th.delayAbortEval, '31s');
    assert.deepEqual((p.thresholds['bid_shed{step:step_02}'][0] as { threshold: string }).threshold, 'count<=16');
    // A synthetic k6 summary: steps 1-2 fine, step 3 over the p99 limit, step 4 never ran.
    // Latency, errors and shed answers are read from the settled part (tag `step`), the rest per step.
    const metrics: Record<string, { values: Record<string, number> }> = {};
    const put = (name: string, rate: number, p99: number, shed = 0): void => {
      metrics[`http_reqs{scenario:${name},kind:bid}`] = { values: { count: rate * 10 } };
      metrics[`http_reqs{step:${name},kind:bid}`] = { values: { count: rate * 8 } };
      metrics[`answered_${name}`] = { values: { avg: 1, 'p(99)': 99, med: 0.5 } };
      metrics[`answered_${name}{step:${name}}`] = { values: { avg: 1, 'p(99)': p99, med: 0.5 } };
      metrics[`bid_shed{step:${name}}`] = { values: { count: shed } };
      metrics[`dropped_iterations{scenario:${name}}`] = { values: { count: 0 } };
    };
    put('step_01', 1000, 2);
    put('step_02', 2000, 4, 10);
    put('step_03', 3000, 25);
    const r = planLib.rampResult({ metrics }, p);
    assert.equal(r.sustained, 2000);
    assert.deepEqual(
      r.steps.map((s) => s.sustained),
      [true, true, false],
    );
    assert.match(r.steps[2].why, /p99 25\.00 ms > 10 ms/);
    assert.equal(r.steps[1].shedShare, 10 / 16000);
    // Shedding more than 0.1 % of a step's requests means the server did not keep up with it.
    put('step_02', 2000, 4, 17);
    const shed = planLib.rampResult({ metrics }, p);
    assert.equal(shed.sustained, 1000);
    assert.match(shed.steps[1].why, /0\.11 % shed/);
  });

  it('time buckets follow the phases and give per-interval throughput, shed answers and offered rate', () => {
    const p = planLib.makePlan(planLib.settings({ DURATION: '8s', RATE: '200', WARMUP_DURATION: '3s', BUCKET: '5s' }));
    // Buckets never straddle two phases: the warm-up's only one is 3 s, the measured phase's last one 3 s.
    assert.deepEqual(
      p.buckets.map((b) => [b.index, b.t, b.length, b.phase]),
      [
        [0, 0, 3, 'warm_up'],
        [1, 3, 5, 'r200'],
        [2, 8, 3, 'r200'],
      ],
    );
    assert.ok(p.thresholds['answered_r200{tb:2}'] && p.thresholds['bid_shed{tb:1}']);
    const metrics = {
      'answered_warm_up{tb:0}': { values: { count: 300, med: 0.4, 'p(99)': 1 } },
      'answered_r200{tb:1}': { values: { count: 990, med: 0.5, 'p(99)': 2 } },
      'bid_shed{tb:1}': { values: { count: 10 } },
      'answered_r200{tb:2}': { values: { count: 600, med: 0.5, 'p(99)': 2 } },
    };
    const b = planLib.buckets({ metrics }, p);
    assert.deepEqual(
      b.map((x) => [x.t, x.rps, x.offered, x.shed]),
      [
        [0, 100, 100, 0],
        [3, 200, 200, 10],
        [8, 200, 200, 0],
      ],
    );
  });
});

describe('load-test report: the first seconds at the measured rate against the rest', () => {
  it('tags the measured phase\'s first 5 s apart (not the warm-up\'s) and reads each part\'s latency and shed answers', () => {
    const p = planLib.makePlan(planLib.settings({ DURATION: '30s' }));
    const r = p.phases.find((x) => x.name === 'r1300') as Phase & { head: number };
    assert.equal(r.head, 5);
    assert.equal((p.phases.find((x) => x.name === 'warm_up') as Phase & { head?: number }).head, undefined);
    for (const key of ['answered_r1300{part:head}', 'answered_r1300{part:rest}', 'bid_shed{scenario:r1300,part:head}', 'bid_shed{scenario:r1300,part:rest}']) {
      assert.ok(p.thresholds[key], key);
    }
    // No head when the phase is not longer than it, or when HEAD=0.
    assert.equal((planLib.makePlan(planLib.settings({ DURATION: '5s' })).phases[1] as Phase & { head: number }).head, 0);
    assert.equal((planLib.makePlan(planLib.settings({ HEAD: '0' })).phases[1] as Phase & { head: number }).head, 0);
    const metrics = {
      'http_reqs{scenario:r1300,kind:bid}': { values: { count: 39000 } },
      'answered_r1300{part:head}': { values: { count: 6480, med: 0.5, 'p(99)': 9, 'p(99.9)': 20, max: 31 } },
      'bid_shed{scenario:r1300,part:head}': { values: { count: 20 } },
      'answered_r1300{part:rest}': { values: { count: 32500, med: 0.4, 'p(99)': 2, 'p(99.9)': 7, max: 14 } },
    };
    const st = planLib.phaseStats({ metrics }, r);
    assert.equal(st.parts.seconds, 5);
    assert.deepEqual(
      ['head', 'rest'].map((k) => [st.parts[k].requests, st.parts[k].shed, st.parts[k].answered.p99]),
      [
        [6500, 20, 9],
        [32500, 0, 2],
      ],
    );
    // A summary without the parts (an older k6 script) gives none.
    assert.equal(planLib.phaseStats({ metrics: { 'answered_r1300{part:head}': metrics['answered_r1300{part:head}'] } }, r).parts, null);
  });

  it('reports the first 5 s against the rest for each server, and judges the bidder\'s p99 ratio', () => {
    const rep = fixtureReport('20260101-000000-reference');
    const head = rep.targets.bidder.main.parts;
    assert.ok(head.seconds === 5 && head.rest.answered.p99 > 0);
    const ratio = head.head.answered.p99 / head.rest.answered.p99;
    assert.ok(ratio > 1, 'the fixture makes the first seconds slower');
    const v = rep.verdicts.find((x: { name: string }) => /first 5 s at 1300\/s/.test(x.name));
    assert.ok(v, 'a verdict on the first 5 s');
    assert.equal(v.ok, false);
    assert.equal(v.measured, ratio);
    const text = mdLib.markdown(rep);
    assert.match(text, /The first 5 s at 1300\/s against the rest of the phase/);
    const rows = text.split('\n').filter((l: string) => l.startsWith('| bidder, ') || l.startsWith('| bare Fastify'));
    const headRow = rows.find((l: string) => l.endsWith(`| ${ratio.toFixed(2)}× |`));
    assert.ok(headRow, `a row with the bidder's ratio ${ratio.toFixed(2)}×:\n${rows.join('\n')}`);
    assert.match(text, /\| p99 of the first 5 s at 1300\/s \/ the rest's \| ≤ 1 \| [0-9.]+ \| \*\*no\*\* \|/);
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

  it('draws grouped bars, leaving a gap for a missing value', () => {
    const out = svg.barChart({
      title: 'CPU',
      yLabel: 'µs',
      groups: ['warm_up 100/s', 'r1300 1300/s'],
      series: [
        { name: 'bidder server', values: [400, 300] },
        { name: 'k6', values: [null, 280] },
      ],
    });
    assert.equal((out.match(/<\/title><\/rect>/g) ?? []).length, 3);
    assert.match(out, /k6: 280/);
    assert.match(svg.barChart({ title: 't', yLabel: 'y', groups: [], series: [] }), /no data/);
  });

  it('is the product\'s one chart module (src/charts/svg.ts, built in dist/), which the report page draws with too', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const tools = require(path.join(ROOT, 'tools', 'lib', 'charts.js')) as typeof svg;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    assert.equal(tools, require(path.join(ROOT, 'dist', 'charts', 'svg.js')));
    assert.deepEqual(Object.keys(tools).sort(), Object.keys(svg).sort());
  });

  it('says so when there is no data', () => {
    assert.match(svg.lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ name: 'a', points: [] }] }), /no data/);
  });
});

describe('load-test report: whether the latencies describe the server', () => {
  const c = (machineBusy: number, serverCpu: number, k6Cpu: number) => ({ seconds: 10, serverCpu, redisCpu: null, k6Cpu, daemonCpu: null, workersCpu: [], machineBusy, steal: 0 });

  it('gives k6 per bid request and per HTTP request, and the busy share of the machine', () => {
    const x = report.cpuFigures(c(10, 3, 2.4), { requests: 10000, httpRequests: 12000 }, 2);
    assert.equal(Math.round(x.serverUsPerReq), 300);
    assert.equal(Math.round(x.k6UsPerReq), 240);
    assert.equal(Math.round(x.k6UsPerHttpReq), 200);
    assert.equal(x.machineBusyShare, 0.5);
    assert.equal(x.latencyValid, true);
  });

  it('reports the shipper within the server CPU, per request and in cores', () => {
    const x = report.cpuFigures({ ...c(10, 3, 2.4), helpersCpu: 0.5 }, { requests: 10000, httpRequests: 12000 }, 2);
    assert.equal(Math.round(x.serverUsPerReq), 300);
    assert.equal(Math.round(x.shipperUsPerReq ?? NaN), 50);
    assert.equal(x.shipperCores, 0.05);
    assert.equal(report.cpuFigures(c(10, 3, 2.4), { requests: 10000, httpRequests: 12000 }, 2).shipperUsPerReq, null);
  });

  it('reports the shipper as a share of the workers and daemon, and per record it shipped in the phase', () => {
    const x = report.cpuFigures({ ...c(10, 3, 2.4), helpersCpu: 0.5, shippedRecords: 20000 }, { requests: 10000, httpRequests: 12000 }, 2);
    assert.equal(x.shipperShare, 0.2, 'the shipper against the rest of the server (2.5 s)');
    assert.equal(Math.round(x.shipperUsPerRecord ?? NaN), 25);
    const none = report.cpuFigures({ ...c(10, 3, 2.4), helpersCpu: 0.5, shippedRecords: 0 }, { requests: 10000, httpRequests: 12000 }, 2);
    assert.equal(none.shipperUsPerRecord, null, 'no record shipped in the phase: no figure');
  });

  it('warns when the machine was saturated', () => {
    const x = report.cpuFigures(c(18.5, 3, 2), { requests: 10000, httpRequests: 10000 }, 2);
    assert.equal(x.saturated, true);
    assert.equal(x.latencyValid, false);
    assert.match(x.why.join(), /saturated \(1\.85 of 2 cores busy\)/);
  });

  it('warns when the generator took more CPU per request than the server', () => {
    const x = report.cpuFigures(c(8, 3, 4), { requests: 10000, httpRequests: 10000 }, 2);
    assert.equal(x.saturated, false);
    assert.equal(x.latencyValid, false);
    assert.match(x.why.join(), /generator took more CPU per request than the server \(400 µs against 300 µs\)/);
  });

  it('splits 4 cores or more between k6 and the servers, and fewer not at all', () => {
    assert.deepEqual(proc.cpuSplit(4, true), { servers: '0-1', k6: '2-3' });
    assert.deepEqual(proc.cpuSplit(16, true), { servers: '0-7', k6: '8-15' });
    assert.equal(proc.cpuSplit(2, true), null);
    assert.equal(proc.cpuSplit(8, false), null);
  });
});
