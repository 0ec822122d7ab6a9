// k6 load test of POST /openrtb2/bid. Usually run through `npm run loadtest`, which also starts
// the cluster, measures server and generator CPU, checks the bid log and compares with a bare
// Fastify baseline (docs/loadtest.md). Standalone:
//
//   k6 run -e SCENARIO=reference -e TARGET_URL=http://127.0.0.1:8080/openrtb2/bid k6/bid.js
//   k6 run -e SCENARIO=ramp -e RAMP_P99_MS=10 k6/bid.js
//
// Written for the least generator CPU per request, since the generator usually shares the
// servers' cores: bodies are spliced from pre-serialized templates (no JSON work per request),
// every answer gets a cheap check and only a sample (VALIDATE_SHARE) the full validation, tags
// are set on the VU when they change rather than passed with each request, and metrics are
// sampled only where the report needs them (a counter is touched only on an invalid or shed answer).
//
// Environment: the plan's variables (k6/lib/plan.js: SCENARIO, RATE, DURATION, ...), TARGET_URL,
// RUN_ID (prefix of every request id), STRICT (1: hold responses to the bidder's rules, 0: any
// well-formed bid), VALIDATE_SHARE (share of answers fully validated, default 0.01; 1 for all),
// POOL_SIZE, SEED, SUMMARY_JSON (where handleSummary writes the full summary), NOTICE_SHARE (share
// of bid requests followed by the win notice and impression tracker of the bid, or of the last bid
// seen after a no-bid, as an exchange and a browser would call them; default 0.1).
import http from 'k6/http';
import exec from 'k6/execution';
import { SharedArray } from 'k6/data';
import { Counter, Trend } from 'k6/metrics';
import { buildPool } from './lib/generator.js';
import { SHED_HEADER, WINDOW, Cursor, tailOf, idPrefix as prefixOf, requestBody, checkAnswer, winNotice, impressionTracker } from './lib/lean.js';
import { settings, makePlan, k6Options, textSummary, answeredMetric } from './lib/plan.js';

const S = settings(__ENV);
const PLAN = makePlan(S);
const TARGET = __ENV.TARGET_URL || 'http://127.0.0.1:8080/openrtb2/bid';
const RUN_ID = __ENV.RUN_ID || `k6${Date.now().toString(36)}`;
const STRICT = __ENV.STRICT !== '0';
const POOL_SIZE = Number(__ENV.POOL_SIZE || 2048);
const SEED = Number(__ENV.SEED || 20240501);
const VALIDATE_SHARE = Number(__ENV.VALIDATE_SHARE === undefined || __ENV.VALIDATE_SHARE === '' ? 0.01 : __ENV.VALIDATE_SHARE);
// Both the bidder and the baseline get them (the baseline's notice URLs point at its own /t/* routes).
const NOTICE_SHARE = Number(__ENV.NOTICE_SHARE === undefined || __ENV.NOTICE_SHARE === '' ? 0.1 : __ENV.NOTICE_SHARE);
// Secure imps get https tracking URLs; a target spoken to over plain HTTP gets its notices that way too.
const PLAIN_HTTP = TARGET.startsWith('http://');
const RAMP = S.scenario === 'ramp';
const SETTLE_MS = S.rampSettle * 1000;
const BUCKET_MS = PLAN.bucket * 1000;
const PHASES = {};
for (const p of PLAN.phases) PHASES[p.name] = p;
if (!(VALIDATE_SHARE >= 0 && VALIDATE_SHARE <= 1)) throw new Error(`VALIDATE_SHARE must be between 0 and 1, not ${__ENV.VALIDATE_SHARE}`);

// Tails and metas apart: a request reads only its tail; the meta is deserialized only for the
// sampled validation. A tail is kept in a one-element array: reading a SharedArray element
// deep-freezes it, and a bare string would be frozen character by character (~0.5 ms for 1.5 KB).
let built = null;
const pool = () => (built === null ? (built = buildPool(POOL_SIZE, SEED)) : built);
const tails = new SharedArray('bid request tails', () => pool().map((e) => [tailOf(e)]));
const metas = new SharedArray('bid request metas', () => pool().map((e) => e.meta));

// Touched only on the rare event, never per request: invalid answers (tag `why`), shed answers
// (204 with x-bidder-shed: 1), failed notices. Per phase, the latency of the bid requests that
// were not shed (k6/lib/plan.js).
const invalid = new Counter('bid_invalid');
const shed = new Counter('bid_shed');
const noticeFailed = new Counter('notice_failed');
const noticeDuration = new Trend('notice_duration', true);
const ANSWERED = {};
for (const p of PLAN.phases) ANSWERED[p.name] = new Trend(answeredMetric(p.name), true);

export const options = k6Options(PLAN, { thresholds: 'all' });

// k6 marks no response as failed (http_req_failed is not emitted): the checks below count errors.
http.setResponseCallback(null);

// Imported bindings and the http module's functions are looked up by name at every use; the
// request path uses these module constants instead.
const post = http.post;
const get = http.get;
const splice = requestBody;
const judge = checkAnswer;
const SHED = SHED_HEADER;

const BID_PARAMS = { headers: { 'Content-Type': 'application/json', 'x-openrtb-version': '2.6' }, responseType: 'text' };
// Notices are requests of their own, tagged apart (kind `notice`; bid requests have kind `bid`,
// k6Options) so that the bid figures (latency, rates, CPU per bid request) count bid requests only.
const NOTICE_PARAMS = { tags: { kind: 'notice' }, responseType: 'none' };

// Per VU (each VU runs its own copy of this module).
let cursor = null;
let idPrefix = '';
let n = 0;
let tags = null;
let activation = null;
let phase = null;
let answered = null;
let scenarioStart = 0;
let edge = 0;
let warned = 0;
let lastWin = null;
let lastImp = null;

function metaOf() {
  return metas[cursor.index];
}

export function setup() {
  // Fails fast with a clear message when nothing listens at TARGET_URL.
  const res = http.post(TARGET, requestBody(`${RUN_ID}-probe`, tails[0][0]), { headers: BID_PARAMS.headers, tags: { tb: 'probe' } });
  if (res.status === 0) throw new Error(`nothing answers at ${TARGET}: ${res.error}`);
  const start = Date.now();
  // The scenarios start now: `npm run loadtest` aligns its CPU samples with the phases on this line.
  console.log(`LOADTEST_T0 ${start}`);
  return { t0: start };
}

/**
 * Once per scenario a VU runs in: k6 resets a VU's tags when it activates it for a scenario (and
 * hands it a new __ENV object, which is how this is noticed without asking k6 every request).
 */
function activate() {
  activation = __ENV;
  if (cursor === null) {
    const vu = exec.vu;
    idPrefix = prefixOf(RUN_ID, vu.idInTest);
    tags = vu.metrics.tags;
    cursor = new Cursor((i) => tails[i][0], POOL_SIZE, (vu.idInTest - 1) * WINDOW);
  }
  const sc = exec.scenario;
  phase = PHASES[sc.name];
  answered = ANSWERED[sc.name];
  scenarioStart = sc.startTime;
  edge = 0;
}

/**
 * The phase's time bucket (`tb`), in a measured phase with a head whether its first seconds are
 * over (`part`: head, rest) and, in a ramp, whether the step has settled (`step`): set on the VU
 * when they change, not passed with each request.
 */
function retag(now) {
  const last = phase.buckets.length - 1;
  const j = Math.max(0, Math.min(last, Math.floor((now - scenarioStart) / BUCKET_MS)));
  tags.tb = String(phase.buckets[j].index);
  edge = j === last ? Infinity : scenarioStart + (j + 1) * BUCKET_MS;
  if (phase.head) {
    const headEnd = scenarioStart + phase.head * 1000;
    if (now < headEnd) {
      tags.part = 'head';
      if (headEnd < edge) edge = headEnd;
    } else tags.part = 'rest';
  }
  if (RAMP) {
    const settled = scenarioStart + SETTLE_MS;
    if (now >= settled) tags.step = phase.name;
    else {
      tags.step = 'settling';
      if (settled < edge) edge = settled;
    }
  }
}

export default function bid() {
  if (activation !== __ENV) activate();
  const now = Date.now();
  if (now >= edge) retag(now);
  const id = idPrefix + ++n;
  const res = post(TARGET, splice(id, cursor.take()), BID_PARAMS);
  const status = res.status;
  if (status === 204 && res.headers[SHED] === '1') {
    shed.add(1);
    return;
  }
  answered.add(res.timings.duration);
  const body = status === 200 ? res.body : null;
  const sampled = VALIDATE_SHARE >= 1 || (VALIDATE_SHARE > 0 && Math.random() < VALIDATE_SHARE);
  const bad = judge(status, body, id, STRICT, sampled, metaOf);
  if (bad !== null) {
    invalid.add(1, { why: bad.why });
    if (warned < 3) {
      warned++;
      console.warn(`invalid response to ${id} (${phase.name}): ${bad.reason}${res.error ? ` [${res.error}]` : ''}`);
    }
    return;
  }
  // Notices for a share of the *requests*, the same share on every server: when this request got no
  // bid, the notices of the last bid this VU saw are sent again (as an exchange's late or repeated
  // notices would be), so that a server that bids less often does not get fewer notices.
  if (NOTICE_SHARE > 0 && Math.random() < NOTICE_SHARE) {
    if (body !== null) {
      const win = winNotice(body);
      const imp = impressionTracker(body);
      if (win !== null && imp !== null) {
        lastWin = PLAIN_HTTP ? win.replace('https://', 'http://') : win;
        lastImp = PLAIN_HTTP ? imp.replace('https://', 'http://') : imp;
      }
    }
    if (lastWin !== null && lastImp !== null) notices(lastWin, lastImp);
  }
}

/** The exchange's win notice and the impression tracker a browser would call. */
function notices(win, imp) {
  const w = get(win, NOTICE_PARAMS);
  noticeDuration.add(w.timings.duration);
  if (w.status !== 204) noticeFailed.add(1);
  const i = get(imp, NOTICE_PARAMS);
  noticeDuration.add(i.timings.duration);
  if (i.status !== 200) noticeFailed.add(1);
}

export function handleSummary(data) {
  const out = { stdout: textSummary(data, PLAN, `target ${TARGET}, run id ${RUN_ID}`) };
  data.loadtest = { script: 'bid', runId: RUN_ID, target: TARGET, strict: STRICT, validateShare: VALIDATE_SHARE, poolSize: POOL_SIZE, seed: SEED, plan: PLAN };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 1);
  return out;
}
