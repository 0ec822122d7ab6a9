'use strict';
// The command line of `npm run loadtest` (tools/loadtest.js): its usage text and its reader.
const { parseArgs: utilParseArgs } = require('node:util');

const HELP = `usage: npm run loadtest -- [options]

  --scenario reference|ramp|overload|soak
                              reference: 100/s for 5 s, then 1300/s for 3 min (default)
                              ramp: raise the rate step by step until p99, drops, errors or
                              shedding fail, then run at --overload x the highest sustained rate
                              overload: --rate for --duration, judged by nothing
                              soak: 1300/s for 30 min against the bidder (shipper on), sampling
                              memory, Redis and the bid log backlog; judged on RSS growth, Redis
                              memory and the bid log's records
  --duration <d>              reference, overload, soak: length of the measured phase (e.g. 30s,
                              3m; soak default 30m); ramp: length of each step (default 10s)
  --sample-interval <d>       soak: how often memory and the backlog are sampled (default 10s)
  --rate <n>                  reference, overload, soak: rate of the measured phase (default 1300)
  --warmup <d>                warm-up length (default 5s; ramp 15s); --warmup-rate <n> (default
                              100; ramp: its first step's rate)
  --workers <n>               PM2 workers for the bidder and the baseline (default 2)
  --p99 <ms> --avg <ms>       reference thresholds of the measured phase (default 3 and 1.2)
  --ramp-start <n> --ramp-step <n> --ramp-max <n> --ramp-p99 <ms>
                              ramp settings (defaults 500, 500, 20000, 10 ms)
  --overload <factor>         ramp: after the ramp, a run at factor x the highest sustained rate
                              (default 2, 0 for none); --overload-duration <d> (default 20s)
  --notices <share>           share of bid requests followed by a win notice and an impression (default 0.1)
  --validate                  validate every response in full (default: 1 % of them; the rest get
                              a status and id check)
  --target both|bidder|baseline|<url>
                              what to load (default both: the bidder, then the baseline); a URL
                              (http://host:port) runs only k6 and the report against a bidder
                              deployed elsewhere
  --cpu-rounds <n>            reference, both targets: after the two main runs, n rounds of short
                              runs alternating bidder and baseline (both clusters up) for a CPU
                              ratio that machine noise moves less (default 4 for a full-length
                              run, else 0)
  --cpu-round-duration <d>    measured length of each of those runs (default 20s, at --rate)
  --generator-rounds <n>      rounds of the minimal k6 script and k6/bid.js at the measured rate,
                              alternating, for k6's own CPU per request (default 2 for a
                              full-length run, else 1; 0 for none)
  --generator-round-duration <d>
                              measured length of each of those runs (default 20s)
  --no-pin                    with 4 cores or more, k6 and the servers are pinned to separate
                              cores (taskset); this leaves them unpinned
  --out <dir>                 report directory (default k6/results/<timestamp>-<scenario>)
  --results-md | --no-results-md
                              update bench/RESULTS.md (default: only for full-length runs)
  --keep-logs                 keep the run's log list in Redis (a list the load test created)
  --redis-cluster             the bidder on a Redis Cluster (REDIS_MODE=cluster): the one of
                              REDIS_CLUSTER_NODES, else a local one of 3 masters with a replica each
                              that the run starts and stops (its nodes' CPU is Redis's CPU)
  --log-wait <s>              how long to wait for log records from a cluster it did not start (default 40)

Environment passed on: PORT (bidder port when it starts the cluster), PM2_HOME, REDIS_URL
(else a private Redis is started), REDIS_CLUSTER_NODES (a Redis Cluster, as --redis-cluster),
LOG_REDIS_KEY, K6 (path of a k6 binary).
Exit status: 0 when the bidder met the scenario's thresholds and no log record was lost,
1 when not, 2 when the run could not be made; a soak that failed a criterion: 8 + 1 (worker RSS
grew) + 2 (Redis memory not bounded) + 4 (bid log records missing), e.g. 9 for RSS alone.`;

// Each option: its node:util.parseArgs type, the field it sets, and for numbers what they must be.
const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  scenario: { type: 'string', key: 'scenario' },
  duration: { type: 'string', key: 'duration' },
  rate: { type: 'string', key: 'rate', number: 'any' },
  warmup: { type: 'string', key: 'warmup' },
  'warmup-rate': { type: 'string', key: 'warmupRate', number: 'any' },
  workers: { type: 'string', key: 'workers', number: 'workers' },
  p99: { type: 'string', key: 'p99', number: 'any' },
  avg: { type: 'string', key: 'avg', number: 'any' },
  'ramp-start': { type: 'string', key: 'rampStart', number: 'any' },
  'ramp-step': { type: 'string', key: 'rampStep', number: 'any' },
  'ramp-max': { type: 'string', key: 'rampMax', number: 'any' },
  'ramp-p99': { type: 'string', key: 'rampP99', number: 'any' },
  notices: { type: 'string', key: 'notices', number: 'any' },
  target: { type: 'string', key: 'target' },
  out: { type: 'string', key: 'out' },
  'log-wait': { type: 'string', key: 'logWait', number: 'any' },
  'cpu-rounds': { type: 'string', key: 'cpuRounds', number: 'integer' },
  'cpu-round-duration': { type: 'string', key: 'cpuRoundDuration' },
  'generator-rounds': { type: 'string', key: 'generatorRounds', number: 'integer' },
  'generator-round-duration': { type: 'string', key: 'generatorRoundDuration' },
  overload: { type: 'string', key: 'overload', number: 'any' },
  'overload-duration': { type: 'string', key: 'overloadDuration' },
  'sample-interval': { type: 'string', key: 'sampleInterval' },
  'results-md': { type: 'boolean', key: 'resultsMd', value: true },
  'no-results-md': { type: 'boolean', key: 'resultsMd', value: false },
  'keep-logs': { type: 'boolean', key: 'keepLogs', value: true },
  'redis-cluster': { type: 'boolean', key: 'redisCluster', value: true },
  validate: { type: 'boolean', key: 'validate', value: true },
  'no-pin': { type: 'boolean', key: 'pin', value: false },
};

/** A number of the kind `kind` ('any': >= 0, 'integer': a whole number >= 0, 'workers': a whole number >= 1), or null. */
function numberOf(text, kind) {
  const n = Number(text);
  if (!(n >= 0)) return null;
  if (kind !== 'any' && !Number.isInteger(n)) return null;
  if (kind === 'workers' && n < 1) return null;
  return n;
}

/**
 * The options of argv (see HELP), or `{help: true}`. Throws an Error whose message the caller
 * prints. parseArgs runs unstrict, in tokens, and the checks are made here: its strict mode
 * refuses a value that starts with '-' and words its errors for a generic program.
 */
function parseArgs(argv) {
  const o = {
    scenario: 'reference',
    duration: null,
    rate: null,
    warmup: null,
    warmupRate: null,
    workers: 2,
    p99: null,
    avg: null,
    rampStart: null,
    rampStep: null,
    rampMax: null,
    rampP99: null,
    notices: null,
    target: 'both',
    out: null,
    resultsMd: null,
    keepLogs: false,
    redisCluster: false,
    logWait: 40,
    cpuRounds: null,
    cpuRoundDuration: '20s',
    generatorRounds: null,
    generatorRoundDuration: '20s',
    overload: 2,
    overloadDuration: '20s',
    validate: false,
    pin: true,
    remote: null,
    sampleInterval: '10s',
    help: false,
  };
  const { tokens } = utilParseArgs({ args: argv, options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
  for (const t of tokens) {
    if (t.kind === 'option-terminator') continue;
    const spec = t.kind === 'option' && Object.hasOwn(OPTIONS, t.name) ? OPTIONS[t.name] : undefined;
    if (spec === undefined) throw new Error(`unknown option ${argv[t.index]} (see --help)`);
    if (t.name === 'help') {
      o.help = true;
      return o;
    }
    if (spec.type === 'boolean') {
      if (t.value !== undefined) throw new Error(`${t.rawName} takes no value`);
      o[spec.key] = spec.value;
      continue;
    }
    if (t.value === undefined) throw new Error(`${t.rawName} needs a value`);
    if (spec.number !== undefined) {
      const n = numberOf(t.value, spec.number);
      if (n === null) throw new Error(`bad value for ${t.rawName}: ${t.value}`);
      o[spec.key] = n;
    } else o[spec.key] = t.value;
  }
  if (!['reference', 'ramp', 'overload', 'soak'].includes(o.scenario)) throw new Error(`--scenario must be reference, ramp, overload or soak`);
  // A soak watches the bidder's processes and Redis: only a bidder this machine runs.
  if (o.scenario === 'soak') {
    if (o.target === 'both') o.target = 'bidder';
    if (o.target !== 'bidder') throw new Error('--scenario soak runs against the bidder only (its memory and Redis are sampled here): --target bidder');
  }
  if (/^https?:\/\//.test(o.target)) {
    let u;
    try {
      u = new URL(o.target);
    } catch {
      throw new Error(`--target ${o.target}: not a URL`);
    }
    // A bare http://host:port means the bidder's own route; a path is taken as the bid endpoint.
    o.remote = u.pathname === '/' ? `${u.origin}/openrtb2/bid` : `${u.origin}${u.pathname}`;
  } else if (!['both', 'bidder', 'baseline'].includes(o.target)) throw new Error(`--target must be both, bidder, baseline or a URL (http://host:port)`);
  if (o.notices !== null && o.notices > 1) throw new Error(`--notices is a share between 0 and 1, not ${o.notices}`);
  if (o.cpuRounds > 0 && (o.scenario !== 'reference' || o.target !== 'both')) throw new Error('--cpu-rounds needs the reference scenario and both targets');
  return o;
}

module.exports = { HELP, parseArgs };
