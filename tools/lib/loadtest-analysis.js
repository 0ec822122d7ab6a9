'use strict';
// The load test's analysis: from what a run gathered (k6's summaries, CPU and memory samples, log
// counts) to the report object (summary.json) that the Markdown and HTML are written from.
const { f } = require('./loadtest-format');
const soakLib = require('./loadtest-soak');

// Targets of issue 5 (2 cores, generator on the same machine, PM2 with 2 workers), and of issue 16:
// k6/bid.js may cost at most 1.25x the k6 CPU per request of the minimal script.
const TARGETS = { p99: 3, avg: 1.2, cpuRatio: 1.4, rampShare: 0.7, generatorRatio: 1.25 };

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
    // The shipper against the rest of the server (the workers and the daemon), and per record it stored in the phase.
    shipperShare: c.helpersCpu === null || c.helpersCpu === undefined || c.serverCpu === null || c.serverCpu <= c.helpersCpu ? null : c.helpersCpu / (c.serverCpu - c.helpersCpu),
    shipperUsPerRecord: c.shippedRecords ? per(c.helpersCpu === undefined ? null : c.helpersCpu, c.shippedRecords) : null,
    shipperRecords: c.shippedRecords ?? null,
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
    idleMemory: run.idleMemory || null,
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
    // The host's resident memory and each worker's GC over the phase (tools/lib/loadtest-memory.js).
    st.memory = (run.memoryPhases && run.memoryPhases[p.name]) || null;
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
      // The jump from the warm-up's rate: the first seconds no worse than the rest (answered requests).
      const parts = bm.parts;
      if (parts && parts.head.answered.p99 !== null && parts.rest.answered.p99) {
        const r = parts.head.answered.p99 / parts.rest.answered.p99;
        rep.comparison.headP99Ratio = r;
        v(`p99 of the first ${parts.seconds} s at ${bm.offered}/s / the rest's`, '≤ 1', r, r <= 1);
      }
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

/** soak: the verdict on the bidder's samples (tools/lib/loadtest-soak.js); a failed criterion sets the exit status. */
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

module.exports = { build, phaseCpu, TARGETS, SATURATED_SHARE };
