// k6 load test of POST /openrtb2/bid. Usually run through `npm run loadtest`, which also starts
// the cluster, measures server CPU and memory, checks the bid log and compares with a bare Fastify
// baseline (docs/loadtest.md). Standalone:
//
//   k6 run -e SCENARIO=reference -e TARGET_URL=http://127.0.0.1:8080/openrtb2/bid k6/bid.js
//   k6 run -e SCENARIO=ramp -e RAMP_P99_MS=10 k6/bid.js
//
// Environment: SCENARIO (reference | ramp), TARGET_URL, RATE, DURATION (the measured phase of
// `reference`), WARMUP_RATE, WARMUP_DURATION, VUS, MAX_VUS, P99_MS, AVG_MS, MAX_ERROR_RATE,
// RAMP_START, RAMP_STEP, RAMP_MAX, RAMP_STEP_DURATION, RAMP_P99_MS, RUN_ID (prefix of every
// request id), STRICT (1: hold responses to the bidder's rules, 0: any well-formed bid),
// POOL_SIZE, SEED, SUMMARY_JSON (where handleSummary writes the full summary), NOTICE_SHARE (share
// of bid requests followed by the win notice and impression tracker of the bid, or of the last bid
// seen after a no-bid, as an exchange and a browser would call them; default 0.1).
import http from 'k6/http';
import exec from 'k6/execution';
import { check } from 'k6';
import { SharedArray } from 'k6/data';
import { buildPool, bodyFor } from './lib/generator.js';
import { validate } from './lib/validate.js';
import { settings, makePlan, phaseStats, rampResult } from './lib/plan.js';

const S = settings(__ENV);
const PLAN = makePlan(S);
const TARGET = __ENV.TARGET_URL || 'http://127.0.0.1:8080/openrtb2/bid';
const RUN_ID = __ENV.RUN_ID || `k6${Date.now().toString(36)}`;
const STRICT = __ENV.STRICT !== '0';
const POOL_SIZE = Number(__ENV.POOL_SIZE || 2048);
const SEED = Number(__ENV.SEED || 20240501);
const RAMP = S.scenario === 'ramp';
const SETTLE_MS = S.rampSettle * 1000;
// Both the bidder and the baseline get them (the baseline's notice URLs point at its own /t/* routes).
const NOTICE_SHARE = Number(__ENV.NOTICE_SHARE === undefined ? 0.1 : __ENV.NOTICE_SHARE);
// Notices are requests of their own: tagged apart (scenario `notices`, kind `notice`) so that the bid
// figures (latency, rates, CPU per bid request) count bid requests only.
const NOTICE_TAGS = { scenario: 'notices', kind: 'notice' };

const pool = new SharedArray('bid requests', () => buildPool(POOL_SIZE, SEED));

// Reading a SharedArray element deserializes it (tens of µs in k6's JS engine), so each
// VU keeps a window of LOCAL templates, starting at its own offset, and slides it along the pool
// by one template every 8 iterations: every template still gets used, at 1/8 of the cost.
const LOCAL = 64;
let local = null;
let k = 0;
let next = 0;
function template() {
  if (local === null) {
    local = new Array(LOCAL);
    next = ((exec.vu.idInTest - 1) * LOCAL) % POOL_SIZE;
    for (let i = 0; i < LOCAL; i++) local[i] = pool[next++ % POOL_SIZE];
  }
  k++;
  if ((k & 7) === 0) local[(k >> 3) % LOCAL] = pool[next++ % POOL_SIZE];
  return local[k % LOCAL];
}

export const options = {
  scenarios: PLAN.scenarios,
  thresholds: PLAN.thresholds,
  summaryTrendStats: ['avg', 'min', 'med', 'max', 'p(70)', 'p(80)', 'p(90)', 'p(95)', 'p(99)', 'p(99.9)', 'count'],
  // Only the tags the report reads (plus `tb`, the time interval): fewer tags, less work per sample.
  systemTags: ['status', 'method', 'scenario', 'expected_response', 'check', 'error_code'],
  discardResponseBodies: false,
  noConnectionReuse: false,
  insecureSkipTLSVerify: true,
  setupTimeout: '30s',
};

const HEADERS = { 'Content-Type': 'application/json', 'x-openrtb-version': '2.6' };
// A short code per scenario keeps ids unique across scenarios: warm_up -> w, r1300 -> r, step_07 -> s07.
const CODES = {};
for (const name of Object.keys(PLAN.scenarios)) CODES[name] = name[0] + name.replace(/\D/g, '').slice(name[0] === 'r' ? 99 : 0);
let warned = 0;

export function setup() {
  // Fails fast with a clear message when nothing listens at TARGET_URL.
  const res = http.post(TARGET, bodyFor(pool[0], `${RUN_ID}-probe`), { headers: HEADERS, tags: { tb: 'probe', kind: 'bid' } });
  if (res.status === 0) throw new Error(`nothing answers at ${TARGET}: ${res.error}`);
  const t0 = Date.now();
  // The scenarios start now: `npm run loadtest` aligns its CPU samples with the phases on this line.
  console.log(`LOADTEST_T0 ${t0}`);
  return { t0 };
}

export default function bid(data) {
  const sc = exec.scenario;
  const n = sc.iterationInTest;
  const id = `${RUN_ID}-${CODES[sc.name]}-${n}`;
  const entry = template();
  const now = Date.now();
  const tags = { tb: String(Math.floor((now - data.t0) / 1000 / PLAN.bucket)), kind: 'bid' };
  // Ramp steps are judged once settled (k6/lib/plan.js).
  if (RAMP) tags.step = now - sc.startTime >= SETTLE_MS ? sc.name : 'settling';
  const res = http.post(TARGET, bodyFor(entry, id), { headers: HEADERS, tags });
  const reason = validate(res.status, res.body, id, entry.meta, STRICT);
  check(res, { 'status 200 with a valid bid, or 204': () => reason === '' }, RAMP ? { step: tags.step } : undefined);
  if (reason !== '' && warned < 3) {
    warned++;
    console.warn(`invalid response to ${id} (${sc.name}): ${reason}${res.error ? ` [${res.error}]` : ''}`);
  }
  // Notices for a share of the *requests*, the same share on every server: when this request got no
  // bid, the notices of the last bid this VU saw are sent again (as an exchange's late or repeated
  // notices would be), so that a server that bids less often does not get fewer notices.
  if (reason === '' && NOTICE_SHARE > 0 && Math.random() < NOTICE_SHARE) {
    if (res.status === 200) lastBid = JSON.parse(res.body).seatbid[0].bid[0];
    if (lastBid !== null) notices(lastBid);
  }
}

let lastBid = null;

/**
 * The exchange's win notice (nurl, clearing price substituted) and the impression tracker of a
 * bid (the first of a response). Every URL of a bid carries the same signed payload, so the tracker is the nurl's
 * payload on /t/imp. The load test talks plain HTTP to 127.0.0.1: https URLs (secure imps) are
 * called over http.
 */
function notices(bid) {
  const nurl = bid.nurl.replace('https://', 'http://');
  const win = nurl.replace('${AUCTION_PRICE}', (bid.price * 0.8).toFixed(4)).replace('${AUCTION_CURRENCY}', 'USD');
  const imp = nurl.slice(0, nurl.indexOf('&price=')).replace('/t/win?', '/t/imp?');
  const responses = http.batch([
    ['GET', win, null, { tags: NOTICE_TAGS }],
    ['GET', imp, null, { tags: NOTICE_TAGS }],
  ]);
  check(responses[0], { 'win notice 204': (r) => r.status === 204 }, NOTICE_TAGS);
  check(responses[1], { 'impression tracker 200': (r) => r.status === 200 }, NOTICE_TAGS);
}

function ms(x) {
  return x === null || x === undefined ? '-' : x.toFixed(2);
}

function textSummary(data) {
  const lines = [];
  lines.push(`scenario ${S.scenario}, target ${TARGET}, run id ${RUN_ID}`);
  if (S.scenario === 'reference') {
    for (const p of PLAN.phases) {
      const st = phaseStats(data, p);
      const l = st.latency || {};
      lines.push(
        `${p.name.padEnd(8)} ${String(p.rate).padStart(5)}/s ${st.requests} reqs ${st.rps.toFixed(0)} req/s  avg ${ms(l.avg)}  p70 ${ms(l.p70)}  p80 ${ms(l.p80)}  p95 ${ms(l.p95)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)} ms  errors ${st.errorRate === null ? '-' : (st.errorRate * 100).toFixed(3) + ' %'}  dropped ${st.dropped}`,
      );
    }
  } else {
    const r = rampResult(data, PLAN);
    for (const st of r.steps) {
      const l = st.latency || {};
      lines.push(
        `${st.name} ${String(st.offered).padStart(6)}/s sent ${st.rps.toFixed(0).padStart(6)}/s  p50 ${ms(l.med)}  p99 ${ms(l.p99)}  p99.9 ${ms(l.p999)} ms  dropped ${st.dropped}  ${st.sustained ? 'ok' : 'NOT sustained: ' + st.why}`,
      );
    }
    lines.push(`highest sustained rate (p99 <= ${S.rampP99} ms): ${r.sustained}/s`);
  }
  const failed = [];
  for (const [name, m] of Object.entries(data.metrics)) {
    if (!m.thresholds) continue;
    for (const [expr, t] of Object.entries(m.thresholds)) if (!t.ok) failed.push(`${name}: ${expr}`);
  }
  lines.push(failed.length ? `thresholds crossed: ${failed.join('; ')}` : 'all thresholds passed');
  return lines.join('\n') + '\n';
}

export function handleSummary(data) {
  const out = { stdout: textSummary(data) };
  data.loadtest = { runId: RUN_ID, target: TARGET, strict: STRICT, poolSize: POOL_SIZE, seed: SEED, plan: PLAN };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 1);
  return out;
}
