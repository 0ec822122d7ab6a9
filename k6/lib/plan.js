// Scenario plans for the load test: the k6 `scenarios` and `thresholds`, built from a few settings.
// Pure JavaScript shared by k6 (bid.js) and Node (the report), so both read the same plan.

/** '3m', '90s', '1m30s', '500ms', '2h' or a bare number of seconds -> seconds. */
export function seconds(text) {
  if (typeof text === 'number') return text;
  const s = String(text).trim();
  if (/^\d+(\.\d+)?$/.test(s)) return Number(s);
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;
  let total = 0;
  let matched = '';
  let m;
  while ((m = re.exec(s)) !== null) {
    matched += m[0];
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : m[2] === 's' ? n : m[2] === 'm' ? n * 60 : n * 3600;
  }
  if (matched !== s || total <= 0) throw new Error(`bad duration ${JSON.stringify(text)} (use e.g. 3m, 90s, 1m30s)`);
  return total;
}

export const DEFAULTS = {
  // The reference load (docs/loadtest.md): 100/s for 5 s, then 1300/s for 3 minutes.
  warmupRate: 100,
  warmupDuration: 5,
  warmupVUs: 50,
  rate: 1300,
  duration: 180,
  preAllocatedVUs: 200,
  maxVUs: 500,
  // Targets of issue 5 (reference scenario, measured phase).
  p99: 3,
  avg: 1.2,
  maxErrorRate: 0,
  // Ramp: start, step and ceiling of the arrival rate; each step's length; its p99 limit.
  rampStart: 500,
  rampStep: 500,
  // A ceiling, not a goal: with k6 on the same 2 cores its own CPU (~250-350 µs per request, the
  // report's "Generator cost") caps the rate well below this.
  rampMax: 20000,
  rampStepDuration: 10,
  rampP99: 10,
  // Tolerances for a ramp step to count as sustained.
  rampMaxDropped: 0.001,
  rampMaxErrors: 0.001,
  // A step whose server sheds more than this share of its requests (x-bidder-shed) is not sustained.
  rampMaxShed: 0.001,
  // Each step is judged after its first seconds: the change of rate (new VUs, the previous step's
  // queue) makes a burst that says nothing about the new rate.
  rampSettle: 2,
  // A ramp's warm-up: 15 s at its first step's rate. Both servers start cold (a fresh PM2 cluster):
  // at 100/s for 5 s the bidder, with far more code to compile than the bare baseline, was still
  // warming up in the first step (p99 11.5 ms at 500/s, then 6.5 ms after 20 s of warm-up).
  rampWarmupDuration: 15,
  // Soak: the reference rate for 30 minutes (issue 26).
  soakDuration: 1800,
  // The first seconds of the measured phase, reported against the rest of it: the jump from the
  // warm-up's rate (new VUs, code the warm-up did not make hot, a young generation still small)
  // must not cost latency that the rest of the phase does not show.
  head: 5,
};

/** Settings from k6's __ENV (or process.env) with defaults applied. */
export function settings(env) {
  const num = (k, d) => (env[k] === undefined || env[k] === '' ? d : Number(env[k]));
  const dur = (k, d) => (env[k] === undefined || env[k] === '' ? d : seconds(env[k]));
  const ramp = env.SCENARIO === 'ramp';
  const s = {
    scenario: env.SCENARIO || 'reference',
    warmupRate: num('WARMUP_RATE', ramp ? num('RAMP_START', DEFAULTS.rampStart) : DEFAULTS.warmupRate),
    warmupDuration: dur('WARMUP_DURATION', ramp ? DEFAULTS.rampWarmupDuration : DEFAULTS.warmupDuration),
    rate: num('RATE', DEFAULTS.rate),
    duration: dur('DURATION', env.SCENARIO === 'soak' ? DEFAULTS.soakDuration : DEFAULTS.duration),
    preAllocatedVUs: num('VUS', DEFAULTS.preAllocatedVUs),
    maxVUs: num('MAX_VUS', DEFAULTS.maxVUs),
    p99: num('P99_MS', DEFAULTS.p99),
    avg: num('AVG_MS', DEFAULTS.avg),
    maxErrorRate: num('MAX_ERROR_RATE', DEFAULTS.maxErrorRate),
    rampStart: num('RAMP_START', DEFAULTS.rampStart),
    rampStep: num('RAMP_STEP', DEFAULTS.rampStep),
    rampMax: num('RAMP_MAX', DEFAULTS.rampMax),
    rampStepDuration: dur('RAMP_STEP_DURATION', DEFAULTS.rampStepDuration),
    rampP99: num('RAMP_P99_MS', DEFAULTS.rampP99),
    rampMaxDropped: num('RAMP_MAX_DROPPED', DEFAULTS.rampMaxDropped),
    rampMaxErrors: num('RAMP_MAX_ERRORS', DEFAULTS.rampMaxErrors),
    rampMaxShed: num('RAMP_MAX_SHED', DEFAULTS.rampMaxShed),
    rampSettle: dur('RAMP_SETTLE', DEFAULTS.rampSettle),
    bucket: env.BUCKET ? seconds(env.BUCKET) : 0,
    head: dur('HEAD', DEFAULTS.head),
  };
  if (!SCENARIOS.includes(s.scenario)) throw new Error(`SCENARIO must be one of ${SCENARIOS.join(', ')}, not ${s.scenario}`);
  for (const [k, v] of Object.entries(s)) {
    if (typeof v === 'number' && !(v >= 0)) throw new Error(`bad value for ${k}: ${v}`);
  }
  return s;
}

/**
 * reference: the reference load; ramp: rising steps until one is not sustained; overload: one rate,
 * judged by nothing (issue 16); soak: the reference rate for long, judged on memory and the bid log
 * by tools/lib/loadtest-soak.js (k6 judges only the answers' correctness).
 */
export const SCENARIOS = ['reference', 'ramp', 'overload', 'soak'];

/** The ramp's steps: [{name, rate, start, duration}] (start in seconds from the test's start). */
export function rampSteps(s) {
  const steps = [];
  let i = 0;
  for (let rate = s.rampStart; rate <= s.rampMax; rate += s.rampStep) {
    i++;
    steps.push({
      name: `step_${String(i).padStart(2, '0')}`,
      rate,
      start: s.warmupDuration + (i - 1) * s.rampStepDuration,
      duration: s.rampStepDuration,
    });
    if (s.rampStep <= 0) break;
  }
  return steps;
}

/** The name of the measured phase of `reference`, `overload` and `soak`: r1300, o4000, s1300. */
export function mainPhaseName(s) {
  return `${s.scenario === 'overload' ? 'o' : s.scenario === 'soak' ? 's' : 'r'}${s.rate}`;
}

/** The two parts of a measured phase with a head (`part` tag): its first `head` seconds and the rest. */
export const PARTS = ['head', 'rest'];

/** The custom Trend of a phase: latency of its bid requests that were answered (not shed). */
export function answeredMetric(phaseName) {
  return `answered_${phaseName}`;
}

/**
 * Time buckets of a phase: `bucket` seconds each from the phase's start, the last one shorter when
 * the phase's length is not a multiple. Buckets never straddle two phases, so each is one phase's.
 */
function phaseBuckets(phase, bucket, first) {
  const out = [];
  for (let t = 0, i = first; t < phase.duration - 1e-9; t += bucket, i++) {
    out.push({ index: i, t: phase.start + t, length: Math.min(bucket, phase.duration - t), phase: phase.name });
  }
  return out;
}

/**
 * The whole plan: phases, time buckets, k6 scenarios and thresholds.
 *
 * Per-interval figures come out of k6's own end-of-test summary, not a per-sample output file
 * (whose writing would cost the generator CPU on the cores it shares with the server): each VU
 * tags its requests with the time bucket (`tb`) and each bucket is a sub-metric named in a
 * threshold that cannot fail.
 *
 * Metrics (k6/bid.js): the built-in http_reqs, http_req_duration and dropped_iterations; per phase
 * a Trend answered_<phase> (latency of the bid requests that were not shed: one sample per
 * request, kept out of thresholds so that k6 does not sort it every 2 s as it does a Trend with
 * thresholds); the counters bid_invalid, bid_shed and notice_failed, which get a sample only when
 * that happens; notice_duration, the latency of win notices and impression trackers.
 */
export function makePlan(s) {
  const scenarios = {};
  const thresholds = {};
  const phases = [];
  const warm = {
    executor: 'constant-arrival-rate',
    rate: s.warmupRate,
    timeUnit: '1s',
    duration: `${s.warmupDuration}s`,
    preAllocatedVUs: DEFAULTS.warmupVUs,
    maxVUs: s.maxVUs,
    startTime: '0s',
    gracefulStop: '2s',
  };
  if (s.warmupDuration > 0) {
    scenarios.warm_up = warm;
    phases.push({ name: 'warm_up', rate: s.warmupRate, start: 0, duration: s.warmupDuration, measured: false });
  }
  let total;
  if (s.scenario === 'reference' || s.scenario === 'overload' || s.scenario === 'soak') {
    const name = mainPhaseName(s);
    const overload = s.scenario === 'overload';
    scenarios[name] = {
      executor: 'constant-arrival-rate',
      rate: s.rate,
      timeUnit: '1s',
      duration: `${s.duration}s`,
      // Under overload a request may wait up to the bidder's shedding budget (~200 ms).
      preAllocatedVUs: overload ? Math.max(s.preAllocatedVUs, Math.ceil(s.rate / 20)) : s.preAllocatedVUs,
      maxVUs: overload ? Math.max(s.maxVUs, Math.ceil(s.rate / 4)) : s.maxVUs,
      startTime: `${s.warmupDuration}s`,
      gracefulStop: '5s',
    };
    // Its first `head` seconds are tagged `part:head`, the rest `part:rest` (k6/bid.js), when both exist.
    const head = s.head > 0 && s.head < s.duration ? s.head : 0;
    phases.push({ name, rate: s.rate, start: s.warmupDuration, duration: s.duration, measured: true, head });
    total = s.warmupDuration + s.duration;
    if (!overload) {
      const scheduled = s.warmupRate * s.warmupDuration + s.rate * s.duration;
      thresholds.bid_invalid = [`count<=${Math.floor(scheduled * s.maxErrorRate)}`];
      // A soak's latency and drops over half an hour on a shared machine say more about the machine
      // than about leaks: it is judged on its answers here, and on memory and the log afterwards.
      if (s.scenario === 'reference') {
        thresholds[`http_req_duration{scenario:${name},kind:bid}`] = [`p(99)<${s.p99}`, `avg<${s.avg}`];
        thresholds[`dropped_iterations{scenario:${name}}`] = ['count<1'];
      }
    }
  } else {
    const steps = rampSteps(s);
    for (const st of steps) {
      scenarios[st.name] = {
        executor: 'constant-arrival-rate',
        rate: st.rate,
        timeUnit: '1s',
        duration: `${st.duration}s`,
        // k6 initializes the preallocated VUs of the busiest moment before the test (~1 MB each;
        // two steps overlap during a graceful stop); more are added while it runs, up to maxVUs
        // (50 ms of arrivals), but it drops iterations while adding them. A stall of a few tens of
        // ms (GC, a descheduled VM: seen here) must not end the ramp through drops alone.
        preAllocatedVUs: Math.max(s.preAllocatedVUs, Math.ceil(st.rate / 100)),
        maxVUs: Math.max(s.maxVUs, Math.ceil(st.rate / 20)),
        startTime: `${st.start}s`,
        gracefulStop: '2s',
      };
      phases.push({ name: st.name, rate: st.rate, start: st.start, duration: st.duration, measured: true, settle: s.rampSettle });
      // Stop the ramp once a step is not sustained. Requests are tagged `step` with the step's name
      // once it has run for rampSettle seconds ('settling' before): the step is judged on those.
      // Evaluate from the middle of the judged part on, so that a few samples do not decide.
      const delay = `${Math.ceil(st.start + s.rampSettle + Math.max(2, (st.duration - s.rampSettle) / 2))}s`;
      const abort = (threshold) => ({ threshold, abortOnFail: true, delayAbortEval: delay });
      const scheduled = st.rate * st.duration;
      const judged = st.rate * Math.max(0, st.duration - s.rampSettle);
      thresholds[`${answeredMetric(st.name)}{step:${st.name}}`] = [abort(`p(99)<${s.rampP99}`)];
      thresholds[`dropped_iterations{scenario:${st.name}}`] = [abort(`count<=${Math.floor(scheduled * s.rampMaxDropped)}`)];
      thresholds[`bid_invalid{step:${st.name}}`] = [abort(`count<=${Math.floor(judged * s.rampMaxErrors)}`)];
      thresholds[`bid_shed{step:${st.name}}`] = [abort(`count<=${Math.floor(judged * s.rampMaxShed)}`)];
      thresholds[`http_reqs{step:${st.name},kind:bid}`] = ['count>=0'];
      thresholds[`http_req_duration{step:${st.name},kind:bid}`] = ['max>=0'];
    }
    total = steps.length ? steps[steps.length - 1].start + steps[steps.length - 1].duration : s.warmupDuration;
  }
  // The ramp's plot follows its steps: two intervals a step.
  const auto = s.scenario === 'ramp' ? Math.max(1, s.rampStepDuration / 2) : total <= 40 ? 1 : total <= 200 ? 5 : 10;
  const bucket = s.bucket > 0 ? s.bucket : auto;
  const buckets = [];
  for (const p of phases) {
    p.buckets = phaseBuckets(p, bucket, buckets.length);
    buckets.push(...p.buckets);
  }
  // Every phase's sub-metrics must be named in thresholds to appear in the summary; these never fail.
  const observe = (key, expr) => {
    if (!thresholds[key]) thresholds[key] = [expr];
  };
  for (const p of phases) {
    observe(`http_reqs{scenario:${p.name}}`, 'count>=0');
    observe(`http_reqs{scenario:${p.name},kind:bid}`, 'count>=0');
    observe(`http_req_duration{scenario:${p.name},kind:bid}`, 'max>=0');
    observe(`bid_invalid{scenario:${p.name}}`, 'count>=0');
    observe(`bid_shed{scenario:${p.name}}`, 'count>=0');
    observe(`dropped_iterations{scenario:${p.name}}`, 'count>=0');
    for (const b of p.buckets) observe(`${answeredMetric(p.name)}{tb:${b.index}}`, 'max>=0');
    if (p.head) {
      for (const part of PARTS) {
        observe(`${answeredMetric(p.name)}{part:${part}}`, 'max>=0');
        observe(`bid_shed{scenario:${p.name},part:${part}}`, 'count>=0');
      }
    }
  }
  for (const b of buckets) observe(`bid_shed{tb:${b.index}}`, 'count>=0');
  // Bids (200) among all answers, without a custom metric sample per request.
  observe('http_reqs{kind:bid}', 'count>=0');
  observe('http_reqs{kind:bid,status:200}', 'count>=0');
  observe('http_reqs{kind:bid,status:204}', 'count>=0');
  // Win notices and impression trackers fired for a share of bids (k6/bid.js): none may fail.
  observe('http_reqs{kind:notice}', 'count>=0');
  thresholds.notice_failed = ['count<1'];
  return { scenario: s.scenario, phases, bucket, buckets, nBuckets: buckets.length, total, scenarios, thresholds, settings: s };
}

/**
 * k6 options for a plan, shared by k6/bid.js and the minimal script (k6/minimal.js) so that the
 * two differ only in what the script does. Tuned for the least CPU per request: only the system
 * tags the report reads, response bodies discarded unless a request asks for its body, no cookie
 * jar reset per iteration. `thresholds: 'phases'` keeps of the plan's thresholds (and so of its
 * sub-metrics) only the requests and drops per phase.
 */
export function k6Options(plan, { thresholds }) {
  let th = plan.thresholds;
  if (thresholds === 'phases') {
    th = {};
    for (const p of plan.phases) {
      th[`http_reqs{scenario:${p.name}}`] = ['count>=0'];
      th[`http_reqs{scenario:${p.name},kind:bid}`] = ['count>=0'];
      th[`dropped_iterations{scenario:${p.name}}`] = ['count>=0'];
    }
  }
  return {
    scenarios: plan.scenarios,
    thresholds: th,
    summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(70)', 'p(80)', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)', 'count'],
    systemTags: ['status', 'scenario'],
    // Every request is a bid request unless it says otherwise (the notices: kind `notice`).
    tags: { kind: 'bid' },
    discardResponseBodies: true,
    noCookiesReset: true,
    noConnectionReuse: false,
    insecureSkipTLSVerify: true,
    setupTimeout: '30s',
  };
}

/** Reads a k6 summary's trend values into {avg, p70, p80, p95, p99, p999, med, min, max}. */
export function trend(values) {
  if (!values) return null;
  const g = (k) => (values[k] === undefined ? null : values[k]);
  return {
    avg: g('avg'),
    min: g('min'),
    med: g('med'),
    p70: g('p(70)'),
    p80: g('p(80)'),
    p90: g('p(90)'),
    p95: g('p(95)'),
    p99: g('p(99)'),
    p999: g('p(99.9)'),
    max: g('max'),
  };
}

function metric(data, name) {
  const m = data.metrics[name];
  return m ? m.values : null;
}

function count(data, name) {
  const v = metric(data, name);
  return v && v.count ? v.count : 0;
}

/** Latency (answered bid requests), throughput and shed answers per time bucket, from a k6 summary produced with `plan`. */
export function buckets(data, plan) {
  const out = [];
  for (const b of plan.buckets) {
    const answered = metric(data, `${answeredMetric(b.phase)}{tb:${b.index}}`);
    const shed = count(data, `bid_shed{tb:${b.index}}`);
    const n = (answered && answered.count ? answered.count : 0) + shed;
    if (!n) continue;
    const phase = plan.phases.find((p) => p.name === b.phase);
    out.push({ t: b.t, length: b.length, count: n, rps: n / b.length, offered: phase ? phase.rate : 0, shed, shedShare: shed / n, latency: trend(answered) });
  }
  return out;
}

/**
 * Summary of one phase (a scenario of the plan). A ramp step's latency, errors and shed answers are
 * those of its settled part (tag `step`); requests, throughput and drops are the whole step's.
 * `latency` is that of every bid request, `answered` that of the ones that were not shed.
 */
export function phaseStats(data, phase) {
  const by = phase.settle ? `step:${phase.name}` : `scenario:${phase.name}`;
  const requests = count(data, `http_reqs{scenario:${phase.name},kind:bid}`);
  const judged = count(data, `http_reqs{${by},kind:bid}`);
  const invalid = count(data, `bid_invalid{${by}}`);
  const shed = count(data, `bid_shed{${by}}`);
  const answered = metric(data, phase.settle ? `${answeredMetric(phase.name)}{${by}}` : answeredMetric(phase.name));
  return {
    name: phase.name,
    offered: phase.rate,
    start: phase.start,
    duration: phase.duration,
    settle: phase.settle || 0,
    measured: phase.measured,
    requests,
    // Bid requests and the notices sent after them: every HTTP request k6 made in the phase.
    httpRequests: count(data, `http_reqs{scenario:${phase.name}}`),
    judgedRequests: judged,
    rps: requests / phase.duration,
    latency: trend(metric(data, `http_req_duration{${by},kind:bid}`)),
    answered: trend(answered),
    invalid,
    errorRate: judged ? invalid / judged : null,
    shed,
    shedShare: judged ? shed / judged : null,
    dropped: count(data, `dropped_iterations{scenario:${phase.name}}`),
    parts: phase.head ? partStats(data, phase) : null,
  };
}

/**
 * A phase's first `head` seconds and the rest of it (tag `part`): the latency of the bid requests
 * answered (not shed) in each, their count and the shed ones ({seconds, head, rest}); null when k6
 * recorded no part.
 */
function partStats(data, phase) {
  const out = { seconds: phase.head };
  for (const part of PARTS) {
    const answered = metric(data, `${answeredMetric(phase.name)}{part:${part}}`);
    if (!answered || !answered.count) return null;
    const shed = count(data, `bid_shed{scenario:${phase.name},part:${part}}`);
    out[part] = { answered: trend(answered), requests: answered.count + shed, shed };
  }
  return out;
}

/**
 * The ramp's verdict per step and the highest sustained rate: a step is sustained when it ran to
 * the end (≥ 95 % of its scheduled requests were sent or dropped), at most rampMaxDropped of them
 * were dropped, and once settled the p99 of its answered requests ≤ the limit, its errors and
 * invalid responses stayed within rampMaxErrors and its shed answers within rampMaxShed. The ramp
 * stops at the first step that is not.
 */
export function rampResult(data, plan) {
  const s = plan.settings;
  const steps = [];
  let sustained = 0;
  let stopped = false;
  for (const p of plan.phases) {
    if (!p.measured) continue;
    const st = phaseStats(data, p);
    if (st.requests === 0 && st.dropped === 0) break; // never started
    const scheduled = p.rate * p.duration;
    st.ran = st.requests + st.dropped >= 0.95 * scheduled;
    const why = [];
    if (stopped) why.push('started as the ramp stopped');
    else {
      if (!st.ran) why.push('did not run to the end');
      if (st.judgedRequests > 0) {
        if (st.answered && st.answered.p99 !== null && st.answered.p99 > s.rampP99) why.push(`p99 ${st.answered.p99.toFixed(2)} ms > ${s.rampP99} ms`);
        if (st.errorRate !== null && st.errorRate > s.rampMaxErrors) why.push(`${(st.errorRate * 100).toFixed(2)} % errors or invalid responses`);
        if (st.shedShare !== null && st.shedShare > s.rampMaxShed) why.push(`${(st.shedShare * 100).toFixed(2)} % shed`);
      }
      if (st.dropped > scheduled * s.rampMaxDropped) why.push(`${st.dropped} dropped iterations`);
    }
    if (st.judgedRequests === 0) {
      st.latency = null;
      st.answered = null;
      st.errorRate = null;
      st.shedShare = null;
    }
    st.sustained = why.length === 0;
    st.why = why.join(', ');
    steps.push(st);
    if (!stopped && st.sustained) sustained = p.rate;
    if (!st.sustained) stopped = true;
  }
  return { p99Limit: s.rampP99, sustained, steps };
}

function ms(x) {
  return x === null || x === undefined ? '-' : x.toFixed(2);
}

function pct(x) {
  return x === null || x === undefined ? '-' : `${(x * 100).toFixed(3)} %`;
}

/** k6's console summary of a run of `plan`: one line per phase (reference, overload) or step (ramp). */
export function textSummary(data, plan, title) {
  const lines = [`scenario ${plan.scenario}, ${title}`];
  if (plan.scenario !== 'ramp') {
    for (const p of plan.phases) {
      const st = phaseStats(data, p);
      const l = st.latency || {};
      const a = st.answered || {};
      lines.push(
        `${p.name.padEnd(8)} ${String(p.rate).padStart(5)}/s ${st.requests} reqs ${st.rps.toFixed(0)} req/s  avg ${ms(l.avg)}  p70 ${ms(l.p70)}  p80 ${ms(l.p80)}  p95 ${ms(l.p95)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)} ms  ` +
          `errors ${pct(st.errorRate)}  shed ${pct(st.shedShare)} (answered p99 ${ms(a.p99)} ms)  dropped ${st.dropped}`,
      );
    }
  } else {
    const r = rampResult(data, plan);
    for (const st of r.steps) {
      const l = st.answered || {};
      lines.push(
        `${st.name} ${String(st.offered).padStart(6)}/s sent ${st.rps.toFixed(0).padStart(6)}/s  p50 ${ms(l.med)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)} ms  shed ${pct(st.shedShare)}  dropped ${st.dropped}  ${st.sustained ? 'ok' : 'NOT sustained: ' + st.why}`,
      );
    }
    lines.push(`highest sustained rate (p99 <= ${plan.settings.rampP99} ms): ${r.sustained}/s`);
  }
  const failed = [];
  for (const [name, m] of Object.entries(data.metrics)) {
    if (!m.thresholds) continue;
    for (const [expr, t] of Object.entries(m.thresholds)) if (!t.ok) failed.push(`${name}: ${expr}`);
  }
  lines.push(failed.length ? `thresholds crossed: ${failed.join('; ')}` : 'all thresholds passed');
  return lines.join('\n') + '\n';
}
