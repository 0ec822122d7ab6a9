// The least a k6 script can do to send the load test's load: one fixed bid request, no checks, no
// tags or metrics of its own, responses discarded. `npm run loadtest` runs it beside k6/bid.js at the
// same rate, with the same plan and k6 options, to measure what the generator's own work costs
// (docs/loadtest.md, "Generator cost"). Environment: the plan's variables (k6/lib/plan.js),
// TARGET_URL, RUN_ID (the fixed request's id), SEED, SUMMARY_JSON.
import http from 'k6/http';
import { buildPool, bodyFor } from './lib/generator.js';
import { settings, makePlan, k6Options, textSummary } from './lib/plan.js';

const PLAN = makePlan(settings(__ENV));
const TARGET = __ENV.TARGET_URL || 'http://127.0.0.1:8080/openrtb2/bid';
const RUN_ID = __ENV.RUN_ID || 'k6-minimal';
// The first request of the pool: an ordinary banner request that the bidder bids on.
const BODY = bodyFor(buildPool(1, Number(__ENV.SEED || 20240501))[0], RUN_ID);
const PARAMS = { headers: { 'Content-Type': 'application/json', 'x-openrtb-version': '2.6' } };
// As in k6/bid.js: the function is looked up once, not by name at every request.
const post = http.post;

export const options = k6Options(PLAN, { thresholds: 'phases' });

http.setResponseCallback(null);

export function setup() {
  const res = http.post(TARGET, BODY, PARAMS);
  if (res.status === 0) throw new Error(`nothing answers at ${TARGET}: ${res.error}`);
  const start = Date.now();
  console.log(`LOADTEST_T0 ${start}`);
  return { t0: start };
}

export default function minimal() {
  post(TARGET, BODY, PARAMS);
}

export function handleSummary(data) {
  const out = { stdout: textSummary(data, PLAN, `minimal script, target ${TARGET}`) };
  data.loadtest = { script: 'minimal', runId: RUN_ID, target: TARGET, plan: PLAN };
  if (__ENV.SUMMARY_JSON) out[__ENV.SUMMARY_JSON] = JSON.stringify(data, null, 1);
  return out;
}
