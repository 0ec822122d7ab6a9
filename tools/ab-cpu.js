'use strict';
// `npm run ab -- --against <dir>`: the CPU per bid request of two bidder builds measured side by side
// (bench/README.md, "npm run ab"). This checkout's build (A, or the one in `--a <dir>`) and the one in <dir> (B: a
// worktree of another commit, built, with node_modules) run at the same time, pinned to the same
// CPU, each under its own open-loop load of the same rate and mix (tools/profile.js's generator,
// with notices), with one Redis. Every round reads both processes' CPU from /proc over the same
// window, so the machine's noise (other tenants, steal, the hypervisor) falls on both alike, where
// two runs in turn differ by ±10 % on this kind of VM. `--against .` compares the build with itself:
// the spread of that ratio is what the method can resolve. `--against baseline` runs the bare-Fastify
// baseline (tools/bench/baseline/server.js) as B.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { startLoad, startTarget, cpuSeconds, cliOptions, canPin, pinTo, onInterrupt } = require('./profile');
const { startRedis } = require('../scripts/lib/redis');

const ROOT = path.resolve(__dirname, '..');
const USAGE = `usage: npm run ab -- [--a <dir>] --against <dir>|baseline [--rounds 8] [--seconds 10] [--warmup 25] [--rate 650]
       [--mix samples|loadtest] [--notices 0.1] [--idle 0] [--node-args="<flags>"] [--node-args-b="<flags>"]
       [--env-b NAME=value ...] [--json <file>] [--out <dir>] [--no-pin]`;

function parse(argv) {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      a: { type: 'string' },
      against: { type: 'string' },
      rounds: { type: 'string', default: '8' },
      seconds: { type: 'string', default: '10' },
      warmup: { type: 'string', default: '25' },
      rate: { type: 'string', default: '650' },
      mix: { type: 'string', default: 'samples' },
      notices: { type: 'string', default: '0.1' },
      idle: { type: 'string', default: '0' },
      'node-args': { type: 'string', default: '' },
      'node-args-b': { type: 'string' },
      'env-b': { type: 'string', multiple: true, default: [] },
      json: { type: 'string' },
      out: { type: 'string' },
      'no-pin': { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (v.help) return { help: true };
  if (!v.against) throw new Error('--against <dir> is required (a checkout of the other build, . for this one, or baseline)');
  const num = (k, lo, hi) => {
    const n = Number(v[k]);
    if (!Number.isFinite(n) || n < lo || n > hi) throw new Error(`--${k} ${v[k]}: expected a number from ${lo} to ${hi}`);
    return n;
  };
  if (v.mix !== 'samples' && v.mix !== 'loadtest') throw new Error(`--mix ${v.mix}: expected samples or loadtest`);
  const args = (s) => s.split(/\s+/).filter(Boolean);
  const envB = {};
  for (const kv of v['env-b']) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(kv);
    if (!m) throw new Error(`--env-b ${kv}: expected NAME=value`);
    envB[m[1]] = m[2];
  }
  return {
    a: v.a ? path.resolve(v.a) : ROOT,
    against: v.against === 'baseline' ? 'baseline' : path.resolve(v.against),
    rounds: num('rounds', 1, 1000),
    seconds: num('seconds', 1, 600),
    warmup: num('warmup', 0, 600),
    rate: num('rate', 1, 20000),
    mix: v.mix,
    notices: num('notices', 0, 1),
    idle: num('idle', 0, 3600),
    nodeArgsA: args(v['node-args']),
    nodeArgsB: args(v['node-args-b'] ?? v['node-args']),
    envB,
    json: v.json ? path.resolve(v.json) : null,
    out: v.out ? path.resolve(v.out) : null,
    pin: !v['no-pin'],
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

/** One side's counters and CPU at an instant. */
function reading(side) {
  return { cpu: cpuSeconds(side.target.pid), ...side.load.snapshot() };
}

/** What a side did between two readings. */
function delta(a, b) {
  const bids = b.bidRequests - a.bidRequests;
  const cpu = b.cpu - a.cpu;
  return { bidRequests: bids, bids: b.bids - a.bids, shed: b.shed - a.shed, errors: b.errors - a.errors, notices: b.notices - a.notices, cpuSeconds: +cpu.toFixed(2), usPerBidRequest: bids > 0 ? +((cpu / bids) * 1e6).toFixed(1) : NaN };
}

async function main() {
  const o = cliOptions('ab', USAGE, parse);
  if (o === null) return;
  for (const root of o.against === 'baseline' ? [o.a] : [o.a, o.against]) {
    if (!fs.existsSync(path.join(root, 'dist', 'main.js'))) {
      console.error(`ab: ${path.join(root, 'dist', 'main.js')} is missing: npm run build there first`);
      process.exit(2);
    }
  }
  const log = (s) => console.error(s);
  const dir = o.out || fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-ab-'));
  fs.mkdirSync(dir, { recursive: true });
  const pin = canPin(o.pin);
  if (pin) {
    pinTo(process.pid, 1);
    log('ab: both builds pinned to CPU 0, the load generators and Redis to CPU 1 (--no-pin to leave them free)');
  }
  const sides = [];
  let redis = null;
  const cleanup = async () => {
    for (const s of sides) await s.load?.stop();
    for (const s of sides) await s.target?.stop();
    if (redis) await redis.stop();
    if (!o.out) fs.rmSync(dir, { recursive: true, force: true });
  };
  const uninterruptible = onInterrupt('ab', cleanup);
  try {
    redis = await startRedis({ dir: path.join(dir, 'redis'), log });
    if (pin) pinTo(redis.pid, 1);
    const baseline = o.against === 'baseline';
    for (const [name, root, nodeArgs, env, kind] of [
      ['a', o.a, o.nodeArgsA, {}, 'bidder'],
      ['b', baseline ? ROOT : o.against, o.nodeArgsB, o.envB, baseline ? 'baseline' : 'bidder'],
    ]) {
      const sideDir = path.join(dir, name);
      fs.mkdirSync(sideDir, { recursive: true });
      const side = { name, root, nodeArgs, target: null, load: null };
      sides.push(side);
      side.target = await startTarget(name, { kind, root, redisUrl: redis.url, nodeArgs, cpu: pin ? 0 : null, dir: sideDir, perfMap: false, env });
    }
    // The generator started first sends first in every millisecond's batch. While A's always did,
    // the build against itself read B at 1.022 and 1.018 of A (0.988 once the order alternated):
    // the order may favour one side, so it is swapped each round.
    const startLoads = async (first) => {
      for (const s of sides) await s.load?.stop();
      for (const s of first === 0 ? sides : [...sides].reverse()) s.load = startLoad({ url: s.target.url, rate: o.rate, mix: o.mix, notices: o.notices });
    };
    await startLoads(0);
    log(`ab: A ${o.a} (pid ${sides[0].target.pid}), B ${o.against} (pid ${sides[1].target.pid}), ${o.rate}/s each; warm-up ${o.warmup} s`);
    await sleep(o.warmup * 1000);
    const rounds = [];
    for (let i = 0; i < o.rounds; i++) {
      const first = i % 2;
      let pausedMs = 0;
      if (i > 0) {
        if (o.idle > 0) {
          const t0 = Date.now();
          // Both builds idle (no load) before each round after the first: what traffic resuming
          // after a lull costs, e.g. with V8's memory reducer shrinking the heap meanwhile.
          for (const s of sides) await s.load?.stop();
          for (const s of sides) s.load = null;
          await sleep(o.idle * 1000);
          pausedMs = Date.now() - t0;
        }
        await startLoads(first);
        await sleep(2000);
      }
      const before = sides.map(reading);
      await sleep(o.seconds * 1000);
      const after = sides.map(reading);
      const [a, b] = [delta(before[0], after[0]), delta(before[1], after[1])];
      rounds.push({ first: first === 0 ? 'A' : 'B', pausedMs, a, b, ratio: +(b.usPerBidRequest / a.usPerBidRequest).toFixed(3) });
      log(`ab: round ${i + 1} (${rounds[i].first}'s requests sent first): A ${a.usPerBidRequest} µs, B ${b.usPerBidRequest} µs per bid request, B/A ${rounds[i].ratio}`);
    }
    const pooled = (k) => {
      const cpu = rounds.reduce((t, r) => t + r[k].cpuSeconds, 0);
      const n = rounds.reduce((t, r) => t + r[k].bidRequests, 0);
      return n > 0 ? (cpu / n) * 1e6 : NaN;
    };
    const summary = {
      medianRatio: median(rounds.map((r) => r.ratio)),
      minRatio: Math.min(...rounds.map((r) => r.ratio)),
      maxRatio: Math.max(...rounds.map((r) => r.ratio)),
      pooledA: +pooled('a').toFixed(1),
      pooledB: +pooled('b').toFixed(1),
    };
    summary.pooledRatio = +(summary.pooledB / summary.pooledA).toFixed(3);
    const lines = [
      `ab: ${o.rounds} rounds of ${o.seconds} s after ${o.warmup} s of warm-up${o.idle > 0 ? `, each after the first preceded by ${o.idle} s without load and 2 s with it` : ''}, ${o.rate} bid requests/s to each build at once, ` +
        `${o.mix === 'samples' ? 'the sample requests of tools/bench/ab-http.js' : "the load test's generated requests"}, notices for ${o.notices * 100} % of them; ` +
        `Node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`,
      `A: ${o.a}${o.nodeArgsA.length ? ` (${o.nodeArgsA.join(' ')})` : ''}`,
      `B: ${o.against}${o.nodeArgsB.length ? ` (${o.nodeArgsB.join(' ')})` : ''}${Object.keys(o.envB).length ? `, with ${Object.entries(o.envB).map(([k, x]) => `${k}=${x}`).join(' ')}` : ''}`,
      '',
      '| round | sent first | A, µs of CPU per bid request | B | B / A | bid requests A / B | shed or failed A / B |',
      '|---|---|---:|---:|---:|---:|---:|',
      ...rounds.map((r, i) => `| ${i + 1} | ${r.first} | ${r.a.usPerBidRequest} | ${r.b.usPerBidRequest} | ${r.ratio.toFixed(3)} | ${r.a.bidRequests} / ${r.b.bidRequests} | ${r.a.shed + r.a.errors} / ${r.b.shed + r.b.errors} |`),
      '',
      `B / A: median ${summary.medianRatio.toFixed(3)} (${summary.minRatio.toFixed(3)}–${summary.maxRatio.toFixed(3)} over ${o.rounds} rounds); pooled ${summary.pooledB} / ${summary.pooledA} µs = ${summary.pooledRatio.toFixed(3)}`,
    ];
    console.log(lines.join('\n'));
    if (o.json) fs.writeFileSync(o.json, `${JSON.stringify({ options: o, rounds, summary }, null, 2)}\n`);
  } finally {
    uninterruptible();
    await cleanup();
  }
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`ab: ${e.stack || e.message}`);
    process.exit(1);
  });
}

module.exports = { parse };
