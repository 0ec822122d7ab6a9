'use strict';
// The load test's report: a JSON summary, a Markdown table in the format of the published NestJS /
// Go bidder comparison this project started from, SVG plots and an HTML page that holds them all,
// plus bench/RESULTS.md.
const fs = require('node:fs');
const path = require('node:path');
const { lineChart, barChart } = require('./loadtest-svg');
const soakLib = require('./loadtest-soak');

// The published comparison's k6 latencies at 1300/s (avg, p70, p80, p95, p99), on its own machine.
const PUBLISHED = [
  ['reference Node/Nest, with the async zstd→Redis log', [2.88, 1.99, 2.45, 7.44, 19.63]],
  ['reference Go/Gin, with the async log', [2.17, 2.0, 2.14, 3.41, 11.4]],
];

// Targets of issue 5 (2 cores, generator on the same machine, PM2 with 2 workers), and of issue 16:
// k6/bid.js may cost at most 1.25x the k6 CPU per request of the minimal script.
const TARGETS = { p99: 3, avg: 1.2, cpuRatio: 1.4, rampShare: 0.5, generatorRatio: 1.25 };

// A phase is "saturated" when the machine's cores were at least this busy: requests then wait for
// a core, and that wait is in the latencies.
const SATURATED_SHARE = 0.9;
const MACHINE_LATENCY = "latencies are then the machine's, not the bidder's";

function failedThresholds(data) {
  const out = [];
  if (!data) return out;
  for (const [name, m] of Object.entries(data.metrics)) {
    if (!m.thresholds) continue;
    for (const [expr, t] of Object.entries(m.thresholds)) if (!t.ok) out.push(`${name}: ${expr}`);
  }
  return out;
}

function values(data, name) {
  return data && data.metrics[name] ? data.metrics[name].values : null;
}

function countOf(data, name) {
  const v = values(data, name);
  return v && v.count ? v.count : 0;
}

/** CPU figures of one phase: per bid request, per HTTP request (bid requests and notices), cores. */
function phaseCpu(c, st, cpus) {
  const per = (x, n) => (x === null || !n ? null : (x / n) * 1e6);
  const busyShare = c.machineBusy / c.seconds / cpus;
  const out = {
    seconds: c.seconds,
    serverUsPerReq: per(c.serverCpu, st.requests),
    redisUsPerReq: per(c.redisCpu, st.requests),
    k6UsPerReq: per(c.k6Cpu, st.requests),
    k6UsPerHttpReq: per(c.k6Cpu, st.httpRequests),
    serverCores: c.serverCpu === null ? null : c.serverCpu / c.seconds,
    daemonCores: c.daemonCpu === null ? null : c.daemonCpu / c.seconds,
    shipperUsPerReq: per(c.helpersCpu === undefined ? null : c.helpersCpu, st.requests),
    shipperCores: c.helpersCpu === null || c.helpersCpu === undefined ? null : c.helpersCpu / c.seconds,
    workerCores: c.workersCpu.map((x) => (x === null ? null : x / c.seconds)),
    redisCores: c.redisCpu === null ? null : c.redisCpu / c.seconds,
    k6Cores: c.k6Cpu === null ? null : c.k6Cpu / c.seconds,
    machineCores: c.machineBusy / c.seconds,
    machineBusyShare: busyShare,
    stealCores: c.steal / c.seconds,
    // Busy CPU that is neither the server, Redis nor k6: the noise of a shared machine.
    otherCores: (c.machineBusy - (c.serverCpu || 0) - (c.redisCpu || 0) - (c.k6Cpu || 0)) / c.seconds,
  };
  // Whether the phase's latencies describe the server: not when the machine had no core to spare,
  // nor when the generator, on the same cores, cost more per request than the server.
  const why = [];
  if (busyShare >= SATURATED_SHARE) why.push(`the machine was saturated (${f(out.machineCores)} of ${cpus} cores busy)`);
  if (out.k6UsPerReq !== null && out.serverUsPerReq !== null && out.k6UsPerReq > out.serverUsPerReq) {
    why.push(`the generator took more CPU per request than the server (${f(out.k6UsPerReq, 0)} µs against ${f(out.serverUsPerReq, 0)} µs)`);
  }
  out.saturated = busyShare >= SATURATED_SHARE;
  out.latencyValid = why.length === 0;
  out.why = why;
  return out;
}

/** One run's figures (bidder, baseline, remote, or a round), from its k6 summary and CPU samples. */
function target(run, lib, cpus) {
  const data = run.data;
  const plan = run.plan;
  const t = {
    url: run.url,
    script: run.script || 'bid',
    server: run.server || null,
    k6ExitCode: run.exitCode,
    completed: Boolean(data),
    failedThresholds: failedThresholds(data),
    requests: 0,
    httpRequests: 0,
    notices: null,
    // Answers that were neither a 204 nor a 200 passing the checks (transport errors and 4xx/5xx included).
    errors: 0,
    shed: 0,
    shedShare: null,
    dropped: 0,
    bidRate: null,
    phases: [],
    main: null,
    buckets: [],
    ramp: null,
    memory: run.memoryByWorker,
    restarts: run.restarts,
    idleServerCores: run.idleCores,
    logs: run.logs || null,
  };
  if (!data) return t;
  // Bid requests only: win notices and impression trackers are reported apart (`notices`).
  t.requests = countOf(data, 'http_reqs{kind:bid}') || countOf(data, 'http_reqs');
  t.httpRequests = countOf(data, 'http_reqs');
  const notices = countOf(data, 'http_reqs{kind:notice}');
  const noticeLatency = values(data, 'notice_duration');
  t.notices = notices > 0 ? { count: notices, failed: countOf(data, 'notice_failed'), p99: noticeLatency ? noticeLatency['p(99)'] : null } : null;
  t.errors = countOf(data, 'bid_invalid');
  t.shed = countOf(data, 'bid_shed');
  t.shedShare = t.requests ? t.shed / t.requests : null;
  t.dropped = countOf(data, 'dropped_iterations');
  const bids = countOf(data, 'http_reqs{kind:bid,status:200}');
  t.bidRate = t.script === 'bid' && t.requests ? bids / t.requests : null;
  for (const p of plan.phases) {
    const st = lib.phaseStats(data, p);
    const c = run.cpu && run.cpu[p.name];
    st.cpu = c ? phaseCpu(c, st, cpus) : null;
    t.phases.push(st);
  }
  t.buckets = lib.buckets(data, plan);
  if (plan.scenario !== 'ramp') t.main = t.phases.find((p) => p.name === lib.mainPhaseName(plan.settings)) || null;
  else {
    t.ramp = lib.rampResult(data, plan);
    for (const st of t.ramp.steps) {
      const ph = t.phases.find((p) => p.name === st.name);
      st.cpu = ph ? ph.cpu : null;
    }
  }
  return t;
}

function ratio(a, b) {
  return a === null || a === undefined || !b ? null : a / b;
}

function median(xs) {
  const v = [...xs].sort((a, b) => a - b);
  const m = v.length >> 1;
  return v.length === 0 ? null : v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

/** One short run (a CPU round or a generator round): its measured phase's cost and latency. */
function roundRun(run, lib, cpus) {
  if (!run) return null;
  const t = target(run, lib, cpus);
  const m = t.main;
  const c = m && m.cpu;
  return {
    completed: t.completed,
    errors: t.errors,
    dropped: m ? m.dropped : null,
    // Requests of the measured phase, and bid requests of the whole run (warm-up and probe included).
    requests: m ? m.requests : 0,
    httpRequests: m ? m.httpRequests : 0,
    bidRequests: t.requests,
    rate: m ? m.offered : null,
    seconds: c ? c.seconds : null,
    serverUsPerReq: c ? c.serverUsPerReq : null,
    k6UsPerReq: c ? c.k6UsPerReq : null,
    k6UsPerHttpReq: c ? c.k6UsPerHttpReq : null,
    k6Cores: c ? c.k6Cores : null,
    machineBusyShare: c ? c.machineBusyShare : null,
    p99: m && m.latency ? m.latency.p99 : null,
    otherCores: c ? c.otherCores : null,
    stealCores: c ? c.stealCores : null,
  };
}

/** The alternating rounds: each pair's ratio, their median and range, and the ratio of the pooled CPU. */
function rounds(ctx, lib, cpus) {
  const list = (ctx.rounds || []).map((pair, i) => {
    const bidder = roundRun(pair.bidder, lib, cpus);
    const baseline = roundRun(pair.baseline, lib, cpus);
    return { round: i + 1, bidder, baseline, ratio: ratio(bidder && bidder.serverUsPerReq, baseline && baseline.serverUsPerReq) };
  });
  const ratios = list.map((r) => r.ratio).filter((x) => x !== null);
  const pooled = (side) => {
    let cpu = 0;
    let reqs = 0;
    for (const r of list) {
      const x = r[side];
      if (!x || x.serverUsPerReq === null || !x.requests || r.ratio === null) continue;
      cpu += x.serverUsPerReq * x.requests;
      reqs += x.requests;
    }
    return reqs ? cpu / reqs : null;
  };
  return {
    list,
    summary: ratios.length
      ? { n: ratios.length, median: median(ratios), min: Math.min(...ratios), max: Math.max(...ratios), pooled: ratio(pooled('bidder'), pooled('baseline')) }
      : null,
  };
}

/**
 * The generator rounds: k6's CPU per request for the minimal script and for k6/bid.js in the same
 * round, at the same rate against the same server. The ratio is per HTTP request, since the
 * minimal script sends no notices (k6/bid.js sends NOTICE_SHARE x 2 after its bid requests);
 * the ratio per bid request is given beside it.
 */
function generator(ctx, lib, cpus) {
  const list = (ctx.generator || []).map((pair, i) => {
    const minimal = roundRun(pair.minimal, lib, cpus);
    const bid = roundRun(pair.bid, lib, cpus);
    return {
      round: i + 1,
      minimal,
      bid,
      ratio: ratio(bid && bid.k6UsPerHttpReq, minimal && minimal.k6UsPerHttpReq),
      ratioPerBid: ratio(bid && bid.k6UsPerReq, minimal && minimal.k6UsPerReq),
    };
  });
  const ratios = list.map((r) => r.ratio).filter((x) => x !== null);
  const perBid = list.map((r) => r.ratioPerBid).filter((x) => x !== null);
  const med = (side, k) => median(list.map((r) => r[side] && r[side][k]).filter((x) => x !== null && x !== undefined));
  return {
    list,
    summary: ratios.length
      ? {
          n: ratios.length,
          median: median(ratios),
          min: Math.min(...ratios),
          max: Math.max(...ratios),
          medianPerBid: median(perBid),
          minimalUsPerReq: med('minimal', 'k6UsPerHttpReq'),
          bidUsPerHttpReq: med('bid', 'k6UsPerHttpReq'),
          bidUsPerReq: med('bid', 'k6UsPerReq'),
          rate: list[0].bid ? list[0].bid.rate : list[0].minimal ? list[0].minimal.rate : null,
        }
      : null,
  };
}

/** The overload run after a ramp: its measured phase at twice (--overload) the highest sustained rate. */
function overloadRun(run, lib, cpus) {
  const t = target(run, lib, cpus);
  const m = t.main;
  return {
    sustained: run.sustained,
    offered: m ? m.offered : null,
    rps: m ? m.rps : null,
    requests: m ? m.requests : 0,
    answered: m ? m.answered : null,
    latency: m ? m.latency : null,
    shedShare: m ? m.shedShare : null,
    errors: m ? m.invalid : null,
    dropped: m ? m.dropped : null,
    cpu: m ? m.cpu : null,
    completed: t.completed,
  };
}

/** The report object (written as summary.json). */
function build(ctx) {
  const lib = ctx.planLib;
  const cpus = ctx.machine.cpus;
  const remote = Boolean(ctx.remote);
  const rep = {
    schema: 2,
    runId: ctx.runId,
    scenario: ctx.plan.scenario,
    startedAt: ctx.startedAt.toISOString(),
    finishedAt: ctx.finishedAt.toISOString(),
    command: `npm run loadtest${ctx.argv.length ? ` -- ${ctx.argv.join(' ')}` : ''}`,
    environment: {
      machine: ctx.machine,
      node: ctx.node,
      k6: ctx.k6 ? ctx.k6.version : null,
      gogc: ctx.gogc,
      commit: ctx.git.commit,
      commitShort: ctx.git.short,
      commitSubject: ctx.git.subject,
      dirty: ctx.git.dirty,
      generatorOnSameMachine: !remote,
      remoteTarget: remote ? ctx.remote : null,
      pinning: ctx.pinning || null,
      validateShare: ctx.options && ctx.options.validate ? 1 : 0.01,
    },
    settings: ctx.plan.settings,
    fullLength: ctx.fullLength,
    plan: { phases: ctx.plan.phases, bucket: ctx.plan.bucket },
    targets: {},
    overload: {},
    comparison: {},
    rounds: [],
    generator: [],
    warnings: [],
    notMeasured: remote ? ['server CPU and memory', 'Redis CPU', 'the bid log', 'the baseline comparison'] : [],
    verdicts: [],
    exitCode: 0,
  };
  for (const [name, run] of Object.entries(ctx.targets)) rep.targets[name] = target(run, lib, cpus);
  for (const [name, run] of Object.entries(ctx.overload || {})) rep.overload[name] = overloadRun(run, lib, cpus);
  const alternating = rounds(ctx, lib, cpus);
  rep.rounds = alternating.list;
  const gen = generator(ctx, lib, cpus);
  rep.generator = gen.list;
  const b = rep.targets.bidder || rep.targets.remote;
  const base = rep.targets.baseline;
  const v = (name, goal, measured, ok, unit = '') => rep.verdicts.push({ name, goal, measured: measured === null ? null : measured, unit, ok });

  if (rep.scenario !== 'ramp') {
    const bm = b && b.main;
    const basem = base && base.main;
    rep.comparison = {
      cpuPerRequestRatio: ratio(bm && bm.cpu && bm.cpu.serverUsPerReq, basem && basem.cpu && basem.cpu.serverUsPerReq),
      p99Ratio: ratio(bm && bm.latency && bm.latency.p99, basem && basem.latency && basem.latency.p99),
      avgRatio: ratio(bm && bm.latency && bm.latency.avg, basem && basem.latency && basem.latency.avg),
    };
    if (rep.scenario === 'reference' && bm && bm.latency) {
      v(`p99 at ${bm.offered}/s`, `≤ ${TARGETS.p99} ms`, bm.latency.p99, bm.latency.p99 <= TARGETS.p99, 'ms');
      v(`avg at ${bm.offered}/s`, `≤ ${TARGETS.avg} ms`, bm.latency.avg, bm.latency.avg <= TARGETS.avg, 'ms');
    }
    if (b && rep.scenario === 'reference') {
      v('errors (failed requests, invalid responses)', '0', b.errors, b.errors === 0);
      v('dropped iterations', '0', b.dropped, b.dropped === 0);
    }
  } else {
    rep.comparison = {
      bidderSustained: b && b.ramp ? b.ramp.sustained : null,
      baselineSustained: base && base.ramp ? base.ramp.sustained : null,
    };
    rep.comparison.sustainedRatio = ratio(rep.comparison.bidderSustained, rep.comparison.baselineSustained);
    if (rep.comparison.sustainedRatio !== null) {
      v(
        `highest sustained rate with p99 ≤ ${ctx.plan.settings.rampP99} ms, bidder / baseline`,
        `≥ ${TARGETS.rampShare}`,
        rep.comparison.sustainedRatio,
        rep.comparison.sustainedRatio >= TARGETS.rampShare,
      );
    }
  }
  if (b && b.logs) v('lost bid-log records', '0', b.logs.lost, b.logs.complete);
  if (rep.scenario === 'reference' && rep.comparison.cpuPerRequestRatio !== null) {
    v('server CPU per bid, bidder / baseline', `≤ ${TARGETS.cpuRatio}`, rep.comparison.cpuPerRequestRatio, rep.comparison.cpuPerRequestRatio <= TARGETS.cpuRatio);
  }
  if (alternating.summary) {
    const r = (rep.comparison.rounds = alternating.summary);
    v(`server CPU per bid, bidder / baseline, median of ${r.n} alternating rounds`, `≤ ${TARGETS.cpuRatio}`, r.median, r.median <= TARGETS.cpuRatio);
  }
  if (gen.summary) {
    const g = (rep.comparison.generator = gen.summary);
    v(`k6 CPU per HTTP request, k6/bid.js / minimal script, median of ${g.n} rounds`, `≤ ${TARGETS.generatorRatio}`, g.median, g.median <= TARGETS.generatorRatio);
  }
  warn(rep);

  // Exit status: the bidder's k6 thresholds (for ramp, crossing them is how it stops) and the log.
  let ok = true;
  if (b) {
    if (!b.completed) ok = false;
    if ((rep.scenario === 'reference' || rep.scenario === 'soak') && b.failedThresholds.length) ok = false;
    if (b.logs && !b.logs.complete) ok = false;
    if (b.restarts) ok = false;
  }
  if (base && !base.completed) ok = false;
  // A round's latency is not judged (its k6 thresholds are the main run's), its correctness is.
  for (const r of rep.rounds) {
    if (r.bidder && (!r.bidder.completed || r.bidder.errors > 0)) ok = false;
    if (r.baseline && !r.baseline.completed) ok = false;
  }
  for (const r of rep.generator) {
    if (!r.minimal || !r.minimal.completed || !r.bid || !r.bid.completed || r.bid.errors > 0) ok = false;
  }
  rep.exitCode = ok ? 0 : 1;
  soakVerdict(ctx, rep);
  return rep;
}

/** soak: the verdict on the bidder's samples (scripts/lib/loadtest-soak.js); a failed criterion sets the exit status. */
function soakVerdict(ctx, rep) {
  const run = ctx.targets.bidder;
  const t = rep.targets.bidder;
  if (rep.scenario !== 'soak' || !run || !t || !t.main) return;
  rep.soak = soakLib.verdict({ sampling: run.soak, t0: run.t0, phase: t.main, logs: t.logs });
  if (!rep.soak.ok) rep.exitCode = soakLib.exitCode(rep.soak);
}

/**
 * Plain warnings on what the latencies mean: a phase in which the machine was saturated or the
 * generator cost more CPU per request than the server, and a machine too small to give k6 and
 * the servers cores of their own.
 */
function warn(rep) {
  const cpus = rep.environment.machine.cpus;
  for (const [name, t] of Object.entries(rep.targets)) {
    // A step that did not run to its end (the one the ramp stopped in) says nothing either way.
    const phases = rep.scenario === 'ramp' ? (t.ramp ? t.ramp.steps.filter((st) => st.ran) : []) : t.main ? [t.main] : [];
    const flagged = phases.filter((p) => p.cpu && !p.cpu.latencyValid);
    t.latencyValid = phases.some((p) => p.cpu) ? flagged.length === 0 : null;
    if (flagged.length === 1) rep.warnings.push(`${name}, ${flagged[0].name} (${flagged[0].offered}/s): ${flagged[0].cpu.why.join('; ')}: ${MACHINE_LATENCY}.`);
    else if (flagged.length > 1) {
      const saturated = flagged.filter((p) => p.cpu.saturated).length;
      const heavier = flagged.length - flagged.filter((p) => p.cpu.why.length === 1 && p.cpu.saturated).length;
      const parts = [];
      if (saturated) parts.push(`the machine was saturated in ${saturated}`);
      if (heavier) parts.push(`the generator took more CPU per request than the server in ${heavier}`);
      rep.warnings.push(`${name}, ${flagged.length} steps (${flagged.map((p) => `${p.offered}/s`).join(', ')}): ${parts.join(', ')}: ${MACHINE_LATENCY}.`);
    }
  }
  const pin = rep.environment.pinning;
  if (rep.environment.generatorOnSameMachine && pin && !pin.pinned) {
    rep.warnings.push(
      cpus < 4
        ? `k6 and the servers shared this machine's ${cpus} cores: only the CPU figures and ratios are meaningful, not the latencies.`
        : `k6 and the servers were not pinned to separate cores (${pin.reason}): read the latencies with the machine's busy share.`,
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Markdown

function f(x, d = 2) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d);
}

function int(x) {
  return x === null || x === undefined ? '–' : String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function pct(x, d = 2) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : `${(x * 100).toFixed(d)} %`;
}

function label(name, rep) {
  const t = rep.targets[name];
  const w = t && t.server ? t.server.workers : '?';
  if (name === 'remote') return `remote bidder at ${rep.environment.remoteTarget}`;
  return name === 'bidder' ? `bidder, ${w} workers, with the zstd→Redis log` : `bare Fastify baseline, ${w} workers`;
}

function header(rep) {
  const e = rep.environment;
  const m = e.machine;
  const lines = [];
  const where = e.generatorOnSameMachine ? 'on the same machine as the servers' : `on this machine, against ${e.remoteTarget}`;
  lines.push(
    `Run \`${rep.runId}\` on ${rep.startedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}; commit \`${e.commitShort}\`${e.dirty ? ' (with uncommitted changes)' : ''}; ` +
      `Node ${e.node}; k6 ${e.k6} run with **GOGC=${e.gogc}** ${where}.`,
  );
  lines.push(`Machine: ${m.cpuModel}, ${m.cpus} CPUs, ${m.memoryGB} GB, ${m.kernel}.`);
  const pin = e.pinning;
  if (pin && pin.pinned) lines.push(`k6 ran on cores ${pin.k6Cpus} and the servers this run started on cores ${pin.serverCpus} (taskset)${pin.note ? `; ${pin.note}` : ''}.`);
  else if (pin && e.generatorOnSameMachine) lines.push(`k6 and the servers shared the machine's cores (not pinned: ${pin.reason}).`);
  lines.push(`Command: \`${rep.command}\``);
  lines.push(
    `Every answer was checked (status, and a 200 must start with the request's id and hold a seatbid); ` +
      `${e.validateShare >= 1 ? 'all of them were' : `${e.validateShare * 100} % of them were`} also validated in full (k6/lib/validate.js).`,
  );
  if (!rep.fullLength) lines.push('', '*A shortened run (options changed the load): fine for checking the tool, not for quoting.*');
  if (rep.notMeasured.length) lines.push('', `Not measured against a remote target: ${rep.notMeasured.join(', ')}.`);
  return lines;
}

function warnings(rep, lines, h) {
  const valid = Object.entries(rep.targets).filter(([, t]) => t.latencyValid !== null && t.latencyValid !== undefined);
  if (!rep.warnings.length && !valid.length) return;
  lines.push('', `${h} Are the latencies the server's?`, '');
  if (!rep.warnings.length) lines.push('Yes: the machine had cores to spare and the generator cost less CPU per request than the server.');
  else lines.push(...rep.warnings.map((w) => `- **${w}**`));
}

function mainTables(rep, lines, h) {
  const names = Object.keys(rep.targets);
  const main = names.length ? rep.targets[names[0]].main : null;
  const s = rep.settings;
  lines.push('');
  lines.push(
    `${h} Latency at ${s.rate}/s (k6, ms)`,
    '',
    `Measured phase \`${main ? main.name : '?'}\`: ${s.rate}/s for ${s.duration} s after a warm-up at ${s.warmupRate}/s for ${s.warmupDuration} s ` +
      `(constant arrival rate${rep.scenario === 'reference' ? ', as in the reference' : ''}). Latency of every bid request; "answered p99" leaves out ` +
      'the requests the server shed (a fast 204 with `x-bidder-shed: 1`).',
    '',
    '| server | avg | p70 | p80 | p95 | p99 | p99.9 | max | answered p99 | shed | throughput | errors | dropped |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const name of names) {
    const m = rep.targets[name].main;
    const l = (m && m.latency) || {};
    const a = (m && m.answered) || {};
    lines.push(
      `| ${label(name, rep)} | ${f(l.avg)} | ${f(l.p70)} | ${f(l.p80)} | ${f(l.p95)} | ${f(l.p99)} | ${f(l.p999)} | ${f(l.max, 1)} | ${f(a.p99)} | ${m ? pct(m.shedShare) : '–'} | ` +
        `${m ? `${f(m.rps, 0)} req/s` : '–'} | ${m ? int(m.invalid) : '–'} | ${m ? int(m.dropped) : '–'} |`,
    );
  }
  if (s.rate === 1300 && rep.scenario === 'reference') {
    // The published comparison this project started from (its machine, not this one).
    for (const [name, v] of PUBLISHED) lines.push(`| *${name} (published)* | ${v.map((x) => f(x)).join(' | ')} | – | – | – | – | – | – | – |`);
  }
  const bidder = rep.targets.bidder || rep.targets.remote;
  if (bidder && bidder.bidRate !== null) {
    lines.push(
      '',
      `The bidder answered ${f(bidder.bidRate * 100, 1)} % of the requests with a bid and the rest with 204 (no bid); ` +
        '"errors" counts every answer that was neither a valid bid nor a 204.',
    );
  }
  const withNotices = names.filter((name) => rep.targets[name].notices);
  if (withNotices.length > 0) {
    // Every target is listed, a target that got none too: the CPU ratio compares the same load only
    // when both got the same share of notices.
    const perBid = (name) => {
      const t = rep.targets[name];
      return t.notices && t.requests ? t.notices.count / t.requests : 0;
    };
    const counts = names.map((name) => {
      const n = rep.targets[name].notices;
      if (!n) return `${name}: none`;
      return `${name}: ${int(n.count)} notice requests (${f(perBid(name), 3)} per bid request), ${int(n.failed)} failed, p99 ${f(n.p99)} ms`;
    });
    const shares = names.map(perBid);
    const uneven = Math.max(...shares) > 0 && Math.min(...shares) < 0.8 * Math.max(...shares);
    lines.push(
      '',
      `After a share of the bid requests (NOTICE_SHARE, default 10 %) k6 called the win notice and the impression tracker, as an exchange and a browser would ` +
        `(${counts.join('; ')}). They are not counted as requests above; the server CPU they cost is included in the CPU per request below, ` +
        'for the baseline too (its bids\' notice URLs and impression trackers point at its own /t/* routes, in the bidder\'s shapes). The share is of requests, the same for both: after a no-bid, the notices of the last bid seen are sent again.',
    );
    if (uneven) lines.push('', '**The targets got different shares of notices: their CPU per request does not compare the same load.**');
  }
  lines.push('', `${h} CPU at ${s.rate}/s: servers and generator`, '');
  lines.push(
    '| server | server CPU per request (workers + PM2 daemon + shipper) | of which the shipper | cores busy (at rest before) | peak RSS per worker | Redis CPU per request (beside) | k6 CPU per request (per HTTP request) | machine busy |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const name of names) {
    const t = rep.targets[name];
    const c = t.main && t.main.cpu;
    const rss = (t.memory || []).map((w) => f(w.peakRssMB, 0)).join(' / ');
    lines.push(
      `| ${label(name, rep)} | ${c && c.serverUsPerReq !== null ? `${f(c.serverUsPerReq, 1)} µs` : '–'} | ${c && c.shipperUsPerReq !== null && c.shipperUsPerReq !== undefined ? `${f(c.shipperUsPerReq, 1)} µs` : '–'} | ` +
        `${c && c.serverCores !== null ? f(c.serverCores, 2) : '–'} (${f(t.idleServerCores, 2)}) | ` +
        `${rss ? `${rss} MB` : '–'} | ${c && c.redisUsPerReq !== null ? `${f(c.redisUsPerReq, 1)} µs` : '–'} | ` +
        `${c && c.k6UsPerReq !== null ? `${f(c.k6UsPerReq, 1)} µs (${f(c.k6UsPerHttpReq, 1)} µs)` : '–'} | ${c ? `${pct(c.machineBusyShare, 0)} (${f(c.machineCores)} of ${rep.environment.machine.cpus} cores)` : '–'} |`,
    );
  }
  lines.push(
    '',
    'CPU per request: utime + stime from /proc between the measured phase\'s start and end (start-up, warm-up and the end-of-test summary are outside), ' +
      'divided by its bid requests; k6\'s also by every HTTP request it sent (bid requests and notices). The server\'s figure counts every process its PM2 daemon runs ' +
      'for it: the workers, the daemon and, for the bidder, the bid log shipper (which works in bursts, one batch every few seconds, so a short phase may catch one more or one fewer); ' +
      'Redis is reported beside it, not in it (the baseline has none).',
  );
  if (rep.comparison.cpuPerRequestRatio !== null && rep.comparison.cpuPerRequestRatio !== undefined) {
    lines.push('', `Bidder / baseline server CPU per request: **${f(rep.comparison.cpuPerRequestRatio)}×** (same run, same load, same worker count).`);
  }
  noise(rep, lines);
  roundsTable(rep, lines, h);
}

function roundsTable(rep, lines, h) {
  if (!rep.rounds.length) return;
  const s = rep.settings;
  const d = rep.rounds.find((r) => r.bidder && r.bidder.seconds);
  lines.push(
    '',
    `${h} Server CPU per request in alternating rounds`,
    '',
    `After the runs above, with both clusters up: ${rep.rounds.length} rounds of a short run against each server, the bidder first in odd rounds ` +
      `and the baseline first in even ones (${s.rate}/s for ~${d ? f(d.bidder.seconds, 0) : '?'} s each after 3 s at that rate; latency is not judged here). ` +
      'Each pair meets about the same machine noise, which the two long runs, minutes apart, do not.',
    '',
    '| round | bidder CPU/req | baseline CPU/req | ratio | bidder p99 | baseline p99 | other processes, cores (bidder / baseline) |',
    '|---|---|---|---|---|---|---|',
  );
  const us = (x) => (x && x.serverUsPerReq !== null ? `${f(x.serverUsPerReq, 1)} µs` : '–');
  const p99 = (x) => (x && x.p99 !== null ? `${f(x.p99)} ms` : '–');
  const other = (x) => (x && x.otherCores !== null ? f(Math.max(0, x.otherCores)) : '–');
  for (const r of rep.rounds) {
    lines.push(`| ${r.round} | ${us(r.bidder)} | ${us(r.baseline)} | ${r.ratio === null ? '–' : `${f(r.ratio)}×`} | ${p99(r.bidder)} | ${p99(r.baseline)} | ${other(r.bidder)} / ${other(r.baseline)} |`);
  }
  const c = rep.comparison.rounds;
  if (c) lines.push('', `Median ratio **${f(c.median)}×** (${f(c.min)}–${f(c.max)}× over ${c.n} rounds); the rounds' CPU pooled: ${f(c.pooled)}×.`);
}

function generatorTable(rep, lines, h) {
  if (!rep.generator.length) return;
  const g = rep.comparison.generator;
  const first = rep.generator.find((r) => r.bid || r.minimal);
  const x = first && (first.bid || first.minimal);
  lines.push(
    '',
    `${h} Generator cost`,
    '',
    `k6's own CPU, from /proc between the start and the end of the measured phase of each run (so start-up, the warm-up and the end-of-test summary cancel out), ` +
      `for the minimal script (k6/minimal.js: one fixed body, no checks, responses discarded) and the measured one (k6/bid.js), ` +
      `${rep.generator.length} round${rep.generator.length > 1 ? 's' : ''} of a run of each at ${x ? x.rate : '?'}/s for ~${x ? f(x.seconds, 0) : '?'} s after 3 s at that rate, ` +
      'against the same server, the minimal script first in odd rounds. Both use the same k6 options; k6/bid.js also sends the notices, so the ratio is per HTTP request.',
    '',
    '| round | minimal: k6 CPU per request | k6/bid.js: per HTTP request | per bid request | ratio per HTTP request | ratio per bid request | machine busy (minimal / bid.js) |',
    '|---|---|---|---|---|---|---|',
  );
  const us = (v) => (v === null || v === undefined ? '–' : `${f(v, 1)} µs`);
  for (const r of rep.generator) {
    lines.push(
      `| ${r.round} | ${us(r.minimal && r.minimal.k6UsPerHttpReq)} | ${us(r.bid && r.bid.k6UsPerHttpReq)} | ${us(r.bid && r.bid.k6UsPerReq)} | ` +
        `${r.ratio === null ? '–' : `${f(r.ratio)}×`} | ${r.ratioPerBid === null ? '–' : `${f(r.ratioPerBid)}×`} | ${pct(r.minimal && r.minimal.machineBusyShare, 0)} / ${pct(r.bid && r.bid.machineBusyShare, 0)} |`,
    );
  }
  if (g) {
    lines.push(
      '',
      `k6/bid.js / minimal script: **${f(g.median)}×** per HTTP request (median of ${g.n}; target ≤ ${TARGETS.generatorRatio}×), ${f(g.medianPerBid)}× per bid request.`,
    );
  }
}

// What is left of the machine's busy time once the servers, Redis and k6 are taken out; the
// counters are read a moment apart, so "nothing" can come out a hair below zero.
function otherShare(cores) {
  return cores >= 0.01 ? `${f(cores)} of them` : 'none';
}

function noise(rep, lines) {
  const parts = [];
  for (const name of Object.keys(rep.targets)) {
    const t = rep.targets[name];
    const ph = rep.scenario !== 'ramp' ? t.main : t.ramp ? t.ramp.steps.filter((p) => p.cpu && p.ran).slice(-1)[0] : null;
    if (ph && ph.cpu) parts.push(`${name}: ${f(ph.cpu.machineCores)} of ${rep.environment.machine.cpus} cores busy, ${otherShare(ph.cpu.otherCores)} by other processes${ph.cpu.stealCores > 0.01 ? `, ${f(ph.cpu.stealCores)} stolen` : ''}`);
  }
  if (parts.length) {
    const other = rep.environment.generatorOnSameMachine ? 'other processes = noise' : 'other processes: everything but k6';
    lines.push('', `Machine load during the ${rep.scenario !== 'ramp' ? 'measured phase' : 'last step that ran to its end'} (${other}): ${parts.join('; ')}.`);
  }
}

function rampTables(rep, lines, h) {
  const s = rep.settings;
  lines.push(
    '',
    `${h} Ramp`,
    '',
    `Constant arrival rate from ${s.rampStart}/s, +${s.rampStep}/s every ${s.rampStepDuration} s, until a step is not sustained ` +
      `(p99 of the answered requests > ${s.rampP99} ms, more than ${s.rampMaxDropped * 100} % dropped iterations, more than ${s.rampMaxErrors * 100} % errors, ` +
      `or more than ${s.rampMaxShed * 100} % shed). Latency, errors and shed answers of a step are measured after its first ${s.rampSettle} s.`,
    '',
  );
  const c = rep.comparison;
  lines.push(`| server | highest sustained rate (p99 ≤ ${s.rampP99} ms) |`, '|---|---|');
  for (const name of Object.keys(rep.targets)) {
    const r = rep.targets[name].ramp;
    lines.push(`| ${label(name, rep)} | ${r ? `${int(r.sustained)} req/s` : '–'} |`);
  }
  if (c.sustainedRatio !== null && c.sustainedRatio !== undefined) lines.push('', `Bidder / baseline: **${f(c.sustainedRatio)}**.`);
  for (const name of Object.keys(rep.targets)) {
    const r = rep.targets[name].ramp;
    if (!r) continue;
    lines.push('', `${h}# Steps: ${label(name, rep)}`, '');
    lines.push('| offered | achieved | answered p50 | p95 | p99 | p99.9 | shed | dropped | errors | server CPU/req | k6 CPU/req | machine busy | sustained |');
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const st of r.steps) {
      const l = st.answered || {};
      const cpu = st.cpu;
      lines.push(
        `| ${int(st.offered)}/s | ${f(st.rps, 0)}/s | ${f(l.med)} | ${f(l.p95)} | ${f(l.p99)} | ${f(l.p999)} | ${pct(st.shedShare)} | ${int(st.dropped)} | ${pct(st.errorRate)} | ` +
          `${cpu && cpu.serverUsPerReq !== null ? `${f(cpu.serverUsPerReq, 1)} µs` : '–'} | ${cpu && cpu.k6UsPerReq !== null ? `${f(cpu.k6UsPerReq, 1)} µs` : '–'} | ${cpu ? pct(cpu.machineBusyShare, 0) : '–'} | ${st.sustained ? 'yes' : `no: ${st.why}`} |`,
      );
    }
  }
  noise(rep, lines);
  overloadTable(rep, lines, h);
}

function overloadTable(rep, lines, h) {
  const names = Object.keys(rep.overload);
  if (!names.length) return;
  lines.push(
    '',
    `${h} Overload`,
    '',
    'After its ramp, each server got a run at a multiple (`--overload`) of its highest sustained rate, after 3 s at that rate. ' +
      'A bidder that sheds load answers what it cannot serve in time with a fast 204 (`x-bidder-shed: 1`): the answered requests should stay fast and the shed share says how much was turned away.',
    '',
    '| server | sustained | offered | achieved | answered p50 | answered p99 | answered p99.9 | all p99 | shed | dropped | errors | server CPU/req | machine busy |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const name of names) {
    const x = rep.overload[name];
    const a = x.answered || {};
    const l = x.latency || {};
    lines.push(
      `| ${label(name, rep)} | ${int(x.sustained)}/s | ${int(x.offered)}/s | ${f(x.rps, 0)}/s | ${f(a.med)} | ${f(a.p99)} | ${f(a.p999)} | ${f(l.p99)} | ${pct(x.shedShare)} | ${int(x.dropped)} | ${int(x.errors)} | ` +
        `${x.cpu && x.cpu.serverUsPerReq !== null ? `${f(x.cpu.serverUsPerReq, 1)} µs` : '–'} | ${x.cpu ? pct(x.cpu.machineBusyShare, 0) : '–'} |`,
    );
  }
}

function logSection(rep, lines, h) {
  const b = rep.targets.bidder;
  if (!b || !b.logs) return;
  const l = b.logs;
  lines.push(
    '',
    `${h} Bid log`,
    '',
    `${int(l.sent)} requests sent; ${int(l.requestRecords)} \`request\` and ${int(l.responseRecords)} \`response\` records of this run found in ${l.lists > 1 ? `the ${l.lists} Redis lists of \`${l.key}\` (\`${l.key}:{0}\` …)` : `Redis list \`${l.key}\``} ` +
      (l.shippedRecords ? `and in the bid log shipper's Parquet files (${int(l.shippedRecords)} records there) ` : '') +
      `(${int(l.frames)} zstd frames in Redis, ${f(l.compressedMB, 1)} MB compressed, ${f(l.rawMB, 1)} MB of NDJSON; ${int(l.duplicates)} duplicates, ${int(l.badFrames)} unreadable frames). ` +
      `${l.complete ? '**Complete.**' : '**Records are missing.**'}` +
      (l.extra > 0 ? ` ${int(l.extra)} more requests reached the bidder than k6 counted: requests in flight when k6 was stopped, cancelled on its side.` : ''),
  );
}

function verdicts(rep, lines, h) {
  if (!rep.verdicts.length) return;
  lines.push('', `${h} Targets`, '', '| target | goal | measured | met |', '|---|---|---|---|');
  for (const v of rep.verdicts) {
    const m = typeof v.measured === 'number' && !Number.isInteger(v.measured) ? f(v.measured) : int(v.measured);
    lines.push(`| ${v.name} | ${v.goal}${v.unit && !v.goal.endsWith(v.unit) ? ` ${v.unit}` : ''} | ${m}${v.unit ? ` ${v.unit}` : ''} | ${v.ok ? 'yes' : '**no**'} |`);
  }
  const bad = [];
  for (const name of Object.keys(rep.targets)) {
    const t = rep.targets[name];
    if (t.restarts) bad.push(`${name}: ${t.restarts} worker restart(s) during the run`);
    if (!t.completed) bad.push(`${name}: k6 did not complete (exit ${t.k6ExitCode})`);
    if (rep.scenario === 'reference' && t.failedThresholds.length) bad.push(`${name}: k6 thresholds crossed: ${t.failedThresholds.join('; ')}`);
  }
  if (bad.length) lines.push('', ...bad.map((x) => `- ${x}`));
}

/** The report as Markdown. `brief`: tables only (console); `level`: heading depth of sections. */
function markdown(rep, { brief = false, level = 2, images = true } = {}) {
  const h = '#'.repeat(level);
  const lines = [];
  if (!brief) {
    lines.push(`${'#'.repeat(level - 1)} Load test: ${rep.scenario}`, '', ...header(rep));
  }
  warnings(rep, lines, h);
  if (rep.scenario !== 'ramp') mainTables(rep, lines, h);
  else rampTables(rep, lines, h);
  generatorTable(rep, lines, h);
  logSection(rep, lines, h);
  if (rep.soak) lines.push(...soakLib.section(rep.soak, h));
  verdicts(rep, lines, h);
  if (!brief && images) {
    lines.push('', `${h} Plots`, '', '![Latency over time](latency-over-time.svg)', '', '![Throughput over time](throughput-over-time.svg)', '', '![CPU per request per phase](cpu-per-phase.svg)');
    if (rep.scenario === 'ramp') lines.push('', '![Latency vs offered rate](latency-vs-rate.svg)');
    if (rep.soak) lines.push(...soakLib.plotLines());
  }
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Plots

const COLORS = { bidder: ['#1f77b4', '#d62728', '#9467bd'], remote: ['#1f77b4', '#d62728', '#9467bd'], baseline: ['#2ca02c', '#ff7f0e', '#8c564b'] };

/**
 * The groups and bars of the CPU chart: per phase (the ramp's steps, the reference's warm-up and
 * measured phase, the generator rounds), the server CPU per bid request of each target and k6's.
 */
function cpuBars(rep) {
  const names = Object.keys(rep.targets);
  const groups = [];
  const rows = []; // one per group: {series name: µs}
  const phaseNames = [];
  // Measured phases only: at a warm-up's low rate per-request CPU is mostly fixed costs.
  for (const name of names) for (const p of rep.targets[name].phases) if (p.measured !== false && !phaseNames.includes(p.name)) phaseNames.push(p.name);
  for (const pn of phaseNames) {
    const row = {};
    let offered = null;
    for (const name of names) {
      const p = rep.targets[name].phases.find((x) => x.name === pn);
      if (!p || !p.cpu) continue;
      offered = p.offered;
      row[`${name} server`] = p.cpu.serverUsPerReq;
      row[`k6 (${name} run)`] = p.cpu.k6UsPerReq;
    }
    if (offered === null) continue;
    groups.push(`${pn} ${offered}/s`);
    rows.push(row);
  }
  for (const [name, x] of Object.entries(rep.overload)) {
    if (!x.cpu) continue;
    groups.push(`${name} overload ${x.offered}/s`);
    rows.push({ [`${name} server`]: x.cpu.serverUsPerReq, [`k6 (${name} run)`]: x.cpu.k6UsPerReq });
  }
  const g = rep.comparison.generator;
  if (g) {
    groups.push(`generator rounds ${g.rate}/s`);
    rows.push({ 'k6 minimal script': g.minimalUsPerReq, 'k6/bid.js (per bid request)': g.bidUsPerReq });
  }
  const colors = { 'bidder server': '#1f77b4', 'remote server': '#1f77b4', 'baseline server': '#2ca02c', 'k6 (bidder run)': '#9467bd', 'k6 (remote run)': '#9467bd', 'k6 (baseline run)': '#8c564b', 'k6 minimal script': '#bbbbbb', 'k6/bid.js (per bid request)': '#e377c2' };
  const seriesNames = [];
  for (const row of rows) for (const k of Object.keys(row)) if (!seriesNames.includes(k) && row[k] !== null && row[k] !== undefined) seriesNames.push(k);
  const series = seriesNames.map((n) => ({ name: n, color: colors[n], values: rows.map((r) => (r[n] === undefined ? null : r[n])) }));
  return { groups, series };
}

function plots(rep) {
  const out = {};
  const s = rep.settings;
  const names = Object.keys(rep.targets);
  const note = `${rep.scenario} scenario, run ${rep.runId}, commit ${rep.environment.commitShort}, k6 GOGC=${rep.environment.gogc}`;
  // Phase changes (the end of the warm-up, each ramp step) as faint vertical lines.
  const vLines = rep.scenario !== 'ramp' ? rep.plan.phases.slice(1).map((p) => ({ x: p.start, label: p.name })) : [];
  const mid = (x) => x.t + x.length / 2;
  const latSeries = [];
  for (const name of names) {
    const bk = rep.targets[name].buckets;
    const c = COLORS[name];
    const dash = name === 'baseline';
    latSeries.push({ name: `${name} p50`, color: c[0], dash, points: bk.map((x) => [mid(x), x.latency && x.latency.med]) });
    latSeries.push({ name: `${name} p99`, color: c[1], dash, points: bk.map((x) => [mid(x), x.latency && x.latency.p99]) });
    latSeries.push({ name: `${name} p99.9`, color: c[2], dash, points: bk.map((x) => [mid(x), x.latency && x.latency.p999]) });
  }
  const limit = rep.scenario === 'ramp' ? { y: s.rampP99, label: `ramp p99 limit ${s.rampP99} ms` } : { y: s.p99, label: `p99 target ${s.p99} ms` };
  out['latency-over-time.svg'] = lineChart({
    title: `Latency of answered bid requests over time (per ${rep.plan.bucket} s)`,
    note,
    xLabel: 'seconds since start',
    yLabel: 'ms',
    yLog: true,
    series: latSeries,
    hLines: [{ ...limit, color: '#d62728' }],
    vLines,
  });
  const first = names.length ? rep.targets[names[0]].buckets : [];
  const tpSeries = [{ name: 'offered', color: '#aaa', dash: true, points: first.map((x) => [mid(x), x.offered || null]) }];
  for (const name of names) {
    const bk = rep.targets[name].buckets;
    tpSeries.push({ name: `${name} achieved`, color: COLORS[name][0], dash: name === 'baseline', points: bk.map((x) => [mid(x), x.rps]) });
    if (bk.some((x) => x.shed > 0)) tpSeries.push({ name: `${name} shed`, color: COLORS[name][1], dash: name === 'baseline', points: bk.map((x) => [mid(x), x.shed / x.length]) });
  }
  out['throughput-over-time.svg'] = lineChart({
    title: `Throughput over time (per ${rep.plan.bucket} s)`,
    note,
    xLabel: 'seconds since start',
    yLabel: 'requests per second',
    series: tpSeries,
    vLines,
  });
  const bars = cpuBars(rep);
  out['cpu-per-phase.svg'] = barChart({
    title: 'CPU per bid request: servers and generator, per phase',
    note,
    yLabel: 'CPU µs per bid request',
    groups: bars.groups,
    series: bars.series,
  });
  if (rep.scenario === 'ramp') {
    const rs = [];
    for (const name of names) {
      const r = rep.targets[name].ramp;
      if (!r) continue;
      const c = COLORS[name];
      const dash = name === 'baseline';
      rs.push({ name: `${name} p50`, color: c[0], dash, markers: true, points: r.steps.map((x) => [x.offered, x.answered && x.answered.med]) });
      rs.push({ name: `${name} p99`, color: c[1], dash, markers: true, points: r.steps.map((x) => [x.offered, x.answered && x.answered.p99]) });
      rs.push({ name: `${name} p99.9`, color: c[2], dash, markers: true, points: r.steps.map((x) => [x.offered, x.answered && x.answered.p999]) });
    }
    for (const [name, x] of Object.entries(rep.overload)) {
      if (x.answered && x.answered.p99 !== null) rs.push({ name: `${name} overload p99`, color: COLORS[name][1], dash: name === 'baseline', markers: true, points: [[x.offered, x.answered.p99]] });
    }
    const sustained = names
      .filter((n) => rep.targets[n].ramp)
      .map((n) => ({ x: rep.targets[n].ramp.sustained, label: `${n}: ${int(rep.targets[n].ramp.sustained)}/s` }));
    out['latency-vs-rate.svg'] = lineChart({
      title: 'Latency of answered bid requests vs offered rate (each ramp step, and the overload run)',
      note,
      xLabel: 'offered rate (requests per second)',
      yLabel: 'ms',
      yLog: true,
      series: rs,
      hLines: [{ ...limit, color: '#d62728' }],
      vLines: sustained,
    });
  }
  if (rep.soak) Object.assign(out, soakLib.plots(rep.soak, note));
  return out;
}

// ---------------------------------------------------------------------------------------------
// HTML: the Markdown rendered with the plots inlined, one self-contained file.

function inline(text) {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/\*\*([^*]+)\*\*/g, '<strong>$1</strong>')
    .replace(/(^|\s)\*([^*]+)\*(?=\s|$)/g, '$1<em>$2</em>')
    .replace(/`([^`]+)`/g, '<code>$1</code>');
}

function html(md, svgs, title) {
  const out = [];
  const lines = md.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    let m;
    if ((m = /^(#{1,4}) (.*)$/.exec(l))) out.push(`<h${m[1].length}>${inline(m[2])}</h${m[1].length}>`);
    else if ((m = /^!\[([^\]]*)\]\(([^)]+)\)$/.exec(l))) out.push(`<figure>${svgs[m[2]] || ''}<figcaption>${inline(m[1])}</figcaption></figure>`);
    else if (l.startsWith('|')) {
      const rows = [];
      while (i < lines.length && lines[i].startsWith('|')) rows.push(lines[i++]);
      i--;
      const cells = (r) => r.slice(1, -1).split('|').map((c) => c.trim());
      out.push('<table>');
      out.push(`<tr>${cells(rows[0]).map((c) => `<th>${inline(c)}</th>`).join('')}</tr>`);
      for (const r of rows.slice(2)) out.push(`<tr>${cells(r).map((c) => `<td>${inline(c)}</td>`).join('')}</tr>`);
      out.push('</table>');
    } else if (l.startsWith('- ')) out.push(`<p>• ${inline(l.slice(2))}</p>`);
    else if (l.trim()) out.push(`<p>${inline(l)}</p>`);
  }
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${inline(title)}</title>
<style>
body{font-family:Helvetica,Arial,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}code{background:#f4f4f4;padding:0 3px}
figure{margin:1em 0}figcaption{color:#666;font-size:90%}
</style></head><body>
${out.join('\n')}
</body></html>
`;
}

/** Writes summary.json, report.md, the SVG plots and index.html into `dir`. */
function write(dir, rep) {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'summary.json'), JSON.stringify(rep, null, 2));
  const md = markdown(rep);
  fs.writeFileSync(path.join(dir, 'report.md'), md);
  const svgs = plots(rep);
  for (const [name, svg] of Object.entries(svgs)) fs.writeFileSync(path.join(dir, name), svg);
  fs.writeFileSync(path.join(dir, 'index.html'), html(md, svgs, `Load test: ${rep.scenario} (${rep.runId})`));
  return { files: ['summary.json', 'report.md', 'index.html', ...Object.keys(svgs)] };
}

const RESULTS_HEAD = `# Benchmark results

Latest figures of \`npm run loadtest\` (see docs/loadtest.md for what it does and how to read them).
Each section is rewritten by a full-length run of its scenario; shorter runs leave this file alone
unless given \`--results-md\`. The full report of a run (plots, JSON) stays in its
\`k6/results/<timestamp>/\` directory, which is not committed.
`;

/** Rewrites the scenario's section of bench/RESULTS.md. */
function updateResultsMd(file, rep, reportDir) {
  let text = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : RESULTS_HEAD;
  const begin = `<!-- loadtest:${rep.scenario}:begin -->`;
  const end = `<!-- loadtest:${rep.scenario}:end -->`;
  const body = [
    begin,
    `## ${{ reference: 'Reference load (1300/s)', ramp: 'Ramp to the limit', overload: 'Overload', soak: 'Soak (30 minutes at 1300/s)' }[rep.scenario]}`,
    '',
    ...header(rep),
    `Full report: \`${reportDir}/\`.`,
    markdown(rep, { brief: true, level: 3 }).trimEnd(),
    end,
  ].join('\n');
  const a = text.indexOf(begin);
  const b = text.indexOf(end);
  if (a >= 0 && b > a) text = text.slice(0, a) + body + text.slice(b + end.length);
  else {
    // Keep the reference section first.
    const other = text.indexOf('<!-- loadtest:ramp:begin -->');
    if (rep.scenario === 'reference' && other >= 0) text = `${text.slice(0, other)}${body}\n\n${text.slice(other)}`;
    else text = `${text.trimEnd()}\n\n${body}\n`;
  }
  fs.writeFileSync(file, text);
}

module.exports = { build, write, markdown, plots, updateResultsMd, cpuFigures: phaseCpu, TARGETS, SATURATED_SHARE };
