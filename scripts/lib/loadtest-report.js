'use strict';
// The load test's report: a JSON summary, a Markdown table in the reference's format
// (REFERENCE.md), SVG plots and an HTML page that holds them all, plus bench/RESULTS.md.
const fs = require('node:fs');
const path = require('node:path');
const { lineChart } = require('./loadtest-svg');

// REFERENCE.md: k6 latencies at 1300/s of the bidders this project must beat (avg, p70, p80, p95, p99).
const PUBLISHED = [
  ['reference Node/Nest, with the async zstd→Redis log', [2.88, 1.99, 2.45, 7.44, 19.63]],
  ['reference Go/Gin, with the async log', [2.17, 2.0, 2.14, 3.41, 11.4]],
];

// Targets of issue 5 (2 cores, generator on the same machine, PM2 with 2 workers).
const TARGETS = { p99: 3, avg: 1.2, cpuRatio: 1.4, rampShare: 0.5 };

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

/** One target's figures (bidder or baseline) from its run. */
function target(run, lib) {
  const data = run.data;
  const plan = run.plan;
  const t = {
    url: run.url,
    server: run.server,
    k6ExitCode: run.exitCode,
    completed: Boolean(data),
    failedThresholds: failedThresholds(data),
    requests: 0,
    notices: null,
    // Responses that were not "200 with a valid bid, or 204" (transport errors and 4xx/5xx included).
    errors: 0,
    failedRequests: 0,
    checkFails: 0,
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
  const bidReqs = values(data, 'http_reqs{kind:bid}');
  t.requests = bidReqs ? bidReqs.count : values(data, 'http_reqs').count;
  const notices = values(data, 'http_reqs{kind:notice}');
  const noticeFailed = values(data, 'http_req_failed{kind:notice}');
  const noticeLatency = values(data, 'http_req_duration{kind:notice}');
  t.notices = notices && notices.count > 0 ? { count: notices.count, failed: noticeFailed ? noticeFailed.passes : 0, p99: noticeLatency ? noticeLatency['p(99)'] : null } : null;
  const failed = values(data, 'http_req_failed');
  t.failedRequests = failed ? failed.passes : 0;
  const checks = values(data, 'checks');
  t.checkFails = checks ? checks.fails : 0;
  t.errors = Math.max(t.checkFails, t.failedRequests);
  const dropped = values(data, 'dropped_iterations');
  t.dropped = dropped ? dropped.count : 0;
  const bids = values(data, 'http_reqs{kind:bid,status:200}') || values(data, 'http_reqs{status:200}');
  t.bidRate = bids && t.requests ? bids.count / t.requests : null;
  for (const p of plan.phases) {
    const st = lib.phaseStats(data, p);
    const c = run.cpu && run.cpu[p.name];
    if (c) {
      const per = (x) => (x === null || !st.requests ? null : (x / st.requests) * 1e6);
      st.cpu = {
        seconds: c.seconds,
        serverUsPerReq: per(c.serverCpu),
        redisUsPerReq: per(c.redisCpu),
        k6UsPerReq: per(c.k6Cpu),
        serverCores: c.serverCpu === null ? null : c.serverCpu / c.seconds,
        daemonCores: c.daemonCpu === null ? null : c.daemonCpu / c.seconds,
        workerCores: c.workersCpu.map((x) => (x === null ? null : x / c.seconds)),
        redisCores: c.redisCpu === null ? null : c.redisCpu / c.seconds,
        k6Cores: c.k6Cpu === null ? null : c.k6Cpu / c.seconds,
        machineCores: c.machineBusy / c.seconds,
        stealCores: c.steal / c.seconds,
        // Busy CPU that is neither the server, Redis nor k6: the noise of a shared machine.
        otherCores: (c.machineBusy - (c.serverCpu || 0) - (c.redisCpu || 0) - (c.k6Cpu || 0)) / c.seconds,
      };
    } else st.cpu = null;
    t.phases.push(st);
  }
  t.buckets = lib.buckets(data, plan);
  if (plan.scenario === 'reference') t.main = t.phases.find((p) => p.name === `r${plan.settings.rate}`) || null;
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

/** One short run of the alternating CPU rounds: its measured phase's cost and latency. */
function roundRun(run, lib) {
  if (!run) return null;
  const t = target(run, lib);
  const m = t.main;
  const c = m && m.cpu;
  return {
    completed: t.completed,
    errors: t.errors,
    dropped: m ? m.dropped : null,
    // Requests of the measured phase, and bid requests of the whole run (warm-up and probe included).
    requests: m ? m.requests : 0,
    bidRequests: t.requests,
    seconds: c ? c.seconds : null,
    serverUsPerReq: c ? c.serverUsPerReq : null,
    p99: m && m.latency ? m.latency.p99 : null,
    otherCores: c ? c.otherCores : null,
    stealCores: c ? c.stealCores : null,
  };
}

/** The alternating rounds: each pair's ratio, their median and range, and the ratio of the pooled CPU. */
function rounds(ctx, lib) {
  const list = (ctx.rounds || []).map((pair, i) => {
    const bidder = roundRun(pair.bidder, lib);
    const baseline = roundRun(pair.baseline, lib);
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

/** The report object (written as summary.json). */
function build(ctx) {
  const lib = ctx.planLib;
  const rep = {
    schema: 1,
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
      generatorOnSameMachine: true,
    },
    settings: ctx.plan.settings,
    fullLength: ctx.fullLength,
    plan: { phases: ctx.plan.phases, bucket: ctx.plan.bucket },
    targets: {},
    comparison: {},
    rounds: [],
    verdicts: [],
    exitCode: 0,
  };
  for (const [name, run] of Object.entries(ctx.targets)) rep.targets[name] = target(run, lib);
  const alternating = rounds(ctx, lib);
  rep.rounds = alternating.list;
  const b = rep.targets.bidder;
  const base = rep.targets.baseline;
  const v = (name, goal, measured, ok, unit = '') => rep.verdicts.push({ name, goal, measured: measured === null ? null : measured, unit, ok });

  if (rep.scenario === 'reference') {
    const bm = b && b.main;
    const basem = base && base.main;
    rep.comparison = {
      cpuPerRequestRatio: ratio(bm && bm.cpu && bm.cpu.serverUsPerReq, basem && basem.cpu && basem.cpu.serverUsPerReq),
      p99Ratio: ratio(bm && bm.latency && bm.latency.p99, basem && basem.latency && basem.latency.p99),
      avgRatio: ratio(bm && bm.latency && bm.latency.avg, basem && basem.latency && basem.latency.avg),
    };
    if (bm && bm.latency) {
      v(`p99 at ${bm.offered}/s`, `≤ ${TARGETS.p99} ms`, bm.latency.p99, bm.latency.p99 <= TARGETS.p99, 'ms');
      v(`avg at ${bm.offered}/s`, `≤ ${TARGETS.avg} ms`, bm.latency.avg, bm.latency.avg <= TARGETS.avg, 'ms');
    }
    if (b) {
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

  // Exit status: the bidder's k6 thresholds (for ramp, crossing them is how it stops) and the log.
  let ok = true;
  if (b) {
    if (!b.completed) ok = false;
    if (rep.scenario === 'reference' && b.failedThresholds.length) ok = false;
    if (b.logs && !b.logs.complete) ok = false;
    if (b.restarts) ok = false;
  }
  if (base && !base.completed) ok = false;
  // A round's latency is not judged (its k6 thresholds are the main run's), its correctness is.
  for (const r of rep.rounds) {
    if (r.bidder && (!r.bidder.completed || r.bidder.errors > 0)) ok = false;
    if (r.baseline && !r.baseline.completed) ok = false;
  }
  rep.exitCode = ok ? 0 : 1;
  return rep;
}

// ---------------------------------------------------------------------------------------------
// Markdown

function f(x, d = 2) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d);
}

function int(x) {
  return x === null || x === undefined ? '–' : String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function label(name, rep) {
  const t = rep.targets[name];
  const w = t && t.server ? t.server.workers : '?';
  return name === 'bidder' ? `bidder, ${w} workers, with the zstd→Redis log` : `bare Fastify baseline, ${w} workers`;
}

function header(rep) {
  const e = rep.environment;
  const m = e.machine;
  const lines = [];
  lines.push(
    `Run \`${rep.runId}\` on ${rep.startedAt.replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}; commit \`${e.commitShort}\`${e.dirty ? ' (with uncommitted changes)' : ''}; ` +
      `Node ${e.node}; k6 ${e.k6} run with **GOGC=${e.gogc}** on the same machine as the servers.`,
  );
  lines.push(`Machine: ${m.cpuModel}, ${m.cpus} CPUs, ${m.memoryGB} GB, ${m.kernel}.`);
  lines.push(`Command: \`${rep.command}\``);
  if (!rep.fullLength) lines.push('', '*A shortened run (options changed the load): fine for checking the tool, not for quoting.*');
  return lines;
}

function referenceTables(rep, lines, h) {
  const main = rep.targets.bidder ? rep.targets.bidder.main : rep.targets.baseline ? rep.targets.baseline.main : null;
  const s = rep.settings;
  lines.push('');
  lines.push(
    `${h} Latency at ${s.rate}/s (k6, ms)`,
    '',
    `Measured phase \`${main ? main.name : `r${s.rate}`}\`: ${s.rate}/s for ${s.duration} s after a warm-up at ${s.warmupRate}/s for ${s.warmupDuration} s ` +
      '(constant arrival rate, as in the reference).',
    '',
    '| server | avg | p70 | p80 | p95 | p99 | p99.9 | max | throughput | errors | dropped |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const name of Object.keys(rep.targets)) {
    const t = rep.targets[name];
    const m = t.main;
    const l = (m && m.latency) || {};
    const errs = m ? Math.round((1 - (m.checkRate === null ? 1 : m.checkRate)) * m.requests) : null;
    lines.push(
      `| ${label(name, rep)} | ${f(l.avg)} | ${f(l.p70)} | ${f(l.p80)} | ${f(l.p95)} | ${f(l.p99)} | ${f(l.p999)} | ${f(l.max, 1)} | ${m ? `${f(m.rps, 0)} req/s` : '–'} | ${int(errs)} | ${m ? int(m.dropped) : '–'} |`,
    );
  }
  if (s.rate === 1300) {
    // The published comparison this project started from (REFERENCE.md; its machine, not this one).
    for (const [name, v] of PUBLISHED) lines.push(`| *${name} (published)* | ${v.map((x) => f(x)).join(' | ')} | – | – | – | – | – |`);
  }
  const bidder = rep.targets.bidder;
  if (bidder && bidder.bidRate !== null) {
    lines.push(
      '',
      `The bidder answered ${f(bidder.bidRate * 100, 1)} % of the requests with a bid and the rest with 204 (no bid); ` +
        '"errors" counts every response that was neither a valid bid nor a 204.',
    );
  }
  const withNotices = Object.keys(rep.targets).filter((name) => rep.targets[name].notices);
  if (withNotices.length > 0) {
    const counts = withNotices.map((name) => {
      const n = rep.targets[name].notices;
      return `${name}: ${int(n.count)} notice requests, ${int(n.failed)} failed, p99 ${f(n.p99)} ms`;
    });
    lines.push(
      '',
      `After a share of the bid requests (NOTICE_SHARE, default 10 %) k6 called the win notice and the impression tracker, as an exchange and a browser would ` +
        `(${counts.join('; ')}). They are not counted as requests above; the server CPU they cost is included in the CPU per request below, ` +
        'for the baseline too (its bids point at its own fixed /t/* routes). The share is of requests, the same for both: after a no-bid, the notices of the last bid seen are sent again.',
    );
  }
  lines.push('', `${h} Server cost at ${s.rate}/s`, '');
  lines.push('| server | CPU per request (workers + PM2 daemon) | cores busy (at rest before) | peak RSS per worker | Redis CPU per request | k6 CPU per request |');
  lines.push('|---|---|---|---|---|---|');
  for (const name of Object.keys(rep.targets)) {
    const t = rep.targets[name];
    const c = t.main && t.main.cpu;
    const rss = (t.memory || []).map((w) => f(w.peakRssMB, 0)).join(' / ');
    lines.push(
      `| ${label(name, rep)} | ${c ? `${f(c.serverUsPerReq, 1)} µs` : '–'} | ${c ? f(c.serverCores, 2) : '–'} (${f(t.idleServerCores, 2)}) | ${rss ? `${rss} MB` : '–'} | ${c && c.redisUsPerReq !== null ? `${f(c.redisUsPerReq, 1)} µs` : '–'} | ${c && c.k6UsPerReq !== null ? `${f(c.k6UsPerReq, 1)} µs` : '–'} |`,
    );
  }
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

// What is left of the machine's busy time once the servers, Redis and k6 are taken out; the
// counters are read a moment apart, so "nothing" can come out a hair below zero.
function otherShare(cores) {
  return cores >= 0.01 ? `${f(cores)} of them` : 'none';
}

function noise(rep, lines) {
  const parts = [];
  for (const name of Object.keys(rep.targets)) {
    const t = rep.targets[name];
    const ph = rep.scenario === 'reference' ? t.main : t.phases.filter((p) => p.cpu).slice(-1)[0];
    if (ph && ph.cpu) parts.push(`${name}: ${f(ph.cpu.machineCores)} of ${rep.environment.machine.cpus} cores busy, ${otherShare(ph.cpu.otherCores)} by other processes${ph.cpu.stealCores > 0.01 ? `, ${f(ph.cpu.stealCores)} stolen` : ''}`);
  }
  if (parts.length) lines.push('', `Machine load during the ${rep.scenario === 'reference' ? 'measured phase' : 'last step'} (other processes = noise): ${parts.join('; ')}.`);
}

function rampTables(rep, lines, h) {
  const s = rep.settings;
  lines.push(
    '',
    `${h} Ramp`,
    '',
    `Constant arrival rate from ${s.rampStart}/s, +${s.rampStep}/s every ${s.rampStepDuration} s, until a step is not sustained ` +
      `(p99 > ${s.rampP99} ms, more than ${s.rampMaxDropped * 100} % dropped iterations, or more than ${s.rampMaxErrors * 100} % errors). ` +
      `Latency and errors of a step are measured after its first ${s.rampSettle} s.`,
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
    lines.push('| offered | achieved | p50 | p95 | p99 | p99.9 | dropped | errors | server CPU/req | cores busy | sustained |');
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|');
    for (const st of r.steps) {
      const l = st.latency || {};
      lines.push(
        `| ${int(st.offered)}/s | ${f(st.rps, 0)}/s | ${f(l.med)} | ${f(l.p95)} | ${f(l.p99)} | ${f(l.p999)} | ${int(st.dropped)} | ${st.checkRate === null ? '–' : `${f((1 - st.checkRate) * 100, 2)} %`} | ${st.cpu ? `${f(st.cpu.serverUsPerReq, 1)} µs` : '–'} | ${st.cpu ? f(st.cpu.serverCores) : '–'} | ${st.sustained ? 'yes' : `no: ${st.why}`} |`,
      );
    }
  }
  noise(rep, lines);
}

function logSection(rep, lines, h) {
  const b = rep.targets.bidder;
  if (!b || !b.logs) return;
  const l = b.logs;
  lines.push(
    '',
    `${h} Bid log`,
    '',
    `${int(l.sent)} requests sent; ${int(l.requestRecords)} \`request\` and ${int(l.responseRecords)} \`response\` records of this run found in Redis list \`${l.key}\` ` +
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
  if (rep.scenario === 'reference') referenceTables(rep, lines, h);
  else rampTables(rep, lines, h);
  logSection(rep, lines, h);
  verdicts(rep, lines, h);
  if (!brief && images) {
    lines.push('', `${h} Plots`, '', '![Latency over time](latency-over-time.svg)', '', '![Throughput over time](throughput-over-time.svg)');
    if (rep.scenario === 'ramp') lines.push('', '![Latency vs offered rate](latency-vs-rate.svg)', '', '![CPU per request vs offered rate](cpu-vs-rate.svg)');
  }
  return lines.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Plots

const COLORS = { bidder: ['#1f77b4', '#d62728', '#9467bd'], baseline: ['#2ca02c', '#ff7f0e', '#8c564b'] };

function plots(rep) {
  const out = {};
  const s = rep.settings;
  const names = Object.keys(rep.targets);
  const note = `${rep.scenario} scenario, run ${rep.runId}, commit ${rep.environment.commitShort}, k6 GOGC=${rep.environment.gogc}`;
  const mid = rep.plan.bucket / 2;
  // Phase changes (the end of the warm-up, each ramp step) as faint vertical lines.
  const vLines = rep.scenario === 'reference' ? rep.plan.phases.slice(1).map((p) => ({ x: p.start, label: p.name })) : [];
  const latSeries = [];
  for (const name of names) {
    const bk = rep.targets[name].buckets;
    const c = COLORS[name];
    const dash = name === 'baseline';
    latSeries.push({ name: `${name} p50`, color: c[0], dash, points: bk.map((x) => [x.t + mid, x.latency && x.latency.med]) });
    latSeries.push({ name: `${name} p99`, color: c[1], dash, points: bk.map((x) => [x.t + mid, x.latency && x.latency.p99]) });
    latSeries.push({ name: `${name} p99.9`, color: c[2], dash, points: bk.map((x) => [x.t + mid, x.latency && x.latency.p999]) });
  }
  const limit = rep.scenario === 'reference' ? { y: s.p99, label: `p99 target ${s.p99} ms` } : { y: s.rampP99, label: `ramp p99 limit ${s.rampP99} ms` };
  out['latency-over-time.svg'] = lineChart({
    title: `Latency percentiles over time (per ${rep.plan.bucket} s)`,
    note,
    xLabel: 'seconds since start',
    yLabel: 'ms',
    yLog: true,
    series: latSeries,
    hLines: [{ ...limit, color: '#d62728' }],
    vLines,
  });
  const first = names.length ? rep.targets[names[0]].buckets : [];
  const tpSeries = [{ name: 'offered', color: '#aaa', dash: true, points: first.map((x) => [x.t + mid, x.offered || null]) }];
  for (const name of names) {
    const bk = rep.targets[name].buckets;
    tpSeries.push({ name: `${name} achieved`, color: COLORS[name][0], dash: name === 'baseline', points: bk.map((x) => [x.t + mid, x.rps]) });
  }
  out['throughput-over-time.svg'] = lineChart({
    title: `Throughput over time (per ${rep.plan.bucket} s)`,
    note,
    xLabel: 'seconds since start',
    yLabel: 'requests per second',
    series: tpSeries,
    vLines,
  });
  if (rep.scenario === 'ramp') {
    const rs = [];
    const cs = [];
    for (const name of names) {
      const r = rep.targets[name].ramp;
      if (!r) continue;
      const c = COLORS[name];
      const dash = name === 'baseline';
      rs.push({ name: `${name} p50`, color: c[0], dash, markers: true, points: r.steps.map((x) => [x.offered, x.latency && x.latency.med]) });
      rs.push({ name: `${name} p99`, color: c[1], dash, markers: true, points: r.steps.map((x) => [x.offered, x.latency && x.latency.p99]) });
      rs.push({ name: `${name} p99.9`, color: c[2], dash, markers: true, points: r.steps.map((x) => [x.offered, x.latency && x.latency.p999]) });
      cs.push({ name: `${name} server`, color: c[0], dash, markers: true, points: r.steps.map((x) => [x.offered, x.cpu && x.cpu.serverUsPerReq]) });
      cs.push({ name: `${name} k6`, color: c[2], dash, markers: true, points: r.steps.map((x) => [x.offered, x.cpu && x.cpu.k6UsPerReq]) });
    }
    const sustained = names
      .filter((n) => rep.targets[n].ramp)
      .map((n) => ({ x: rep.targets[n].ramp.sustained, label: `${n}: ${int(rep.targets[n].ramp.sustained)}/s` }));
    out['latency-vs-rate.svg'] = lineChart({
      title: 'Latency vs offered rate (each ramp step)',
      note,
      xLabel: 'offered rate (requests per second)',
      yLabel: 'ms',
      yLog: true,
      series: rs,
      hLines: [{ ...limit, color: '#d62728' }],
      vLines: sustained,
    });
    out['cpu-vs-rate.svg'] = lineChart({
      title: 'CPU per request vs offered rate',
      note,
      xLabel: 'offered rate (requests per second)',
      yLabel: 'CPU µs per request',
      series: cs,
      vLines: sustained,
    });
  }
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
    `## ${rep.scenario === 'reference' ? 'Reference load (1300/s)' : 'Ramp to the limit'}`,
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

module.exports = { build, write, markdown, plots, updateResultsMd, TARGETS };
