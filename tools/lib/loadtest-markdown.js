'use strict';
// The load test's report as Markdown (report.md, the console's tables) in the format of the
// published NestJS / Go bidder comparison this project started from, and its section of
// bench/RESULTS.md.
const fs = require('node:fs');
const { TARGETS } = require('./loadtest-analysis');
const { f, int, pct } = require('./loadtest-format');
const soakLib = require('./loadtest-soak');

// The published comparison's k6 latencies at 1300/s (avg, p70, p80, p95, p99), on its own machine.
const PUBLISHED = [
  ['reference Node/Nest, with the async zstd→Redis log', [2.88, 1.99, 2.45, 7.44, 19.63]],
  ['reference Go/Gin, with the async log', [2.17, 2.0, 2.14, 3.41, 11.4]],
];

/** The shipper's cell: CPU per bid request, then its share of the workers' and daemon's CPU and its CPU per record shipped. */
function shipperCell(c) {
  if (!c || c.shipperUsPerReq === null || c.shipperUsPerReq === undefined) return '–';
  const more = [c.shipperShare !== null && c.shipperShare !== undefined ? pct(c.shipperShare, 1) : null, c.shipperUsPerRecord ? `${f(c.shipperUsPerRecord, 1)} µs per record` : null].filter(Boolean);
  return `${f(c.shipperUsPerReq, 1)} µs${more.length ? ` (${more.join('; ')})` : ''}`;
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
  headTable(rep, lines, names);
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
    '| server | server CPU per request (workers + PM2 daemon + shipper) | of which the shipper (share of workers + daemon; per record shipped) | cores busy (at rest before) | peak RSS per worker | Redis CPU per request (beside) | k6 CPU per request (per HTTP request) | machine busy |',
    '|---|---|---|---|---|---|---|---|',
  );
  for (const name of names) {
    const t = rep.targets[name];
    const c = t.main && t.main.cpu;
    const rss = (t.memory || []).map((w) => f(w.peakRssMB, 0)).join(' / ');
    lines.push(
      `| ${label(name, rep)} | ${c && c.serverUsPerReq !== null ? `${f(c.serverUsPerReq, 1)} µs` : '–'} | ${shipperCell(c)} | ` +
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
      'Redis is reported beside it, not in it (the baseline has none). The shipper\'s share is of the workers\' and daemon\'s CPU; per record shipped divides its CPU by the records it stored in the phase (`shipper_records_shipped_total` on its metrics port).',
  );
  if (rep.comparison.cpuPerRequestRatio !== null && rep.comparison.cpuPerRequestRatio !== undefined) {
    lines.push('', `Bidder / baseline server CPU per request: **${f(rep.comparison.cpuPerRequestRatio)}×** (same run, same load, same worker count).`);
  }
  memoryTable(rep, lines, h);
  noise(rep, lines);
  roundsTable(rep, lines, h);
}

/**
 * The measured phase's first seconds against the rest of it (k6/lib/plan.js, `part`): the latency
 * of the answered bid requests in each, and the head's p99 over the rest's.
 */
function headTable(rep, lines, names) {
  const withParts = names.filter((name) => rep.targets[name].main && rep.targets[name].main.parts);
  if (!withParts.length) return;
  const head = rep.targets[withParts[0]].main.parts.seconds;
  lines.push(
    '',
    `The first ${f(head, 0)} s at ${rep.settings.rate}/s against the rest of the phase (answered bid requests; the warm-up before them was ${rep.settings.warmupDuration} s at ${rep.settings.warmupRate}/s):`,
    '',
    `| server | first ${f(head, 0)} s: p50 | p99 | p99.9 | max | shed | rest: p50 | p99 | p99.9 | max | shed | p99 first / rest |`,
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
  );
  for (const name of withParts) {
    const p = rep.targets[name].main.parts;
    const cells = (x) => `${f(x.answered.med)} | ${f(x.answered.p99)} | ${f(x.answered.p999)} | ${f(x.answered.max, 1)} | ${int(x.shed)}`;
    const ratio = p.head.answered.p99 !== null && p.rest.answered.p99 ? `${f(p.head.answered.p99 / p.rest.answered.p99)}×` : '–';
    lines.push(`| ${label(name, rep)} | ${cells(p.head)} | ${cells(p.rest)} | ${ratio} |`);
  }
}

/** The measured phase's memory: the host's resident memory and each worker's garbage collections. */
function memoryTable(rep, lines, h) {
  const names = Object.keys(rep.targets).filter((name) => rep.targets[name].main && rep.targets[name].main.memory && rep.targets[name].main.memory.host);
  if (!names.length) return;
  lines.push(
    '',
    `${h} Memory at ${rep.settings.rate}/s: the host's resident memory and each worker's garbage collections`,
    '',
    '| server | host memory, PSS summed: peak / average (PM2 daemon + workers + shipper) (at rest before) | RSS summed: peak / average (at rest before) | peak RSS (PSS) by process | mark-compacts per minute per worker | marking ms per minute (per mark-compact) | scavenges per minute | V8 heap at the end: committed / used, external |',
    '|---|---|---|---|---|---|---|---|',
  );
  const rest = (mb) => (mb === null || mb === undefined ? '' : ` (${f(mb, 0)} MB)`);
  const each = (gc, fn) => (gc && gc.length ? gc.map(fn).join(' / ') : '–');
  for (const name of names) {
    const m = rep.targets[name].main.memory;
    const idle = rep.targets[name].idleMemory || {};
    const gc = m.gc;
    lines.push(
      `| ${label(name, rep)} | ${m.host.pss ? `**${f(m.host.pss.peakMB, 0)}** / ${f(m.host.pss.avgMB, 0)} MB${rest(idle.pssMB)}` : '–'} | ${f(m.host.peakMB, 0)} / ${f(m.host.avgMB, 0)} MB${rest(idle.rssMB)} | ` +
        `${m.host.peakByProcess.map((p) => `${p.name} ${f(p.peakMB, 0)}${p.peakPssMB === null || p.peakPssMB === undefined ? '' : ` (${f(p.peakPssMB, 0)})`}`).join(', ')} MB | ` +
        `${each(gc, (w) => f(w.markCompactsPerMinute, 1))} | ${each(gc, (w) => `${f(w.markingMsPerMinute, 0)} (${w.markingMsPerMarkCompact === null ? '–' : f(w.markingMsPerMarkCompact, 1)})`)} | ` +
        `${each(gc, (w) => f(w.scavengesPerMinute, 0))} | ${each(gc, (w) => (w.heap ? `${f(w.heap.totalMB, 0)} / ${f(w.heap.usedMB, 0)}, ${f(w.heap.externalMB, 0)} MB` : '–'))} |`,
    );
  }
  lines.push(
    '',
    'Host memory: every process the server\'s PM2 daemon runs and the daemon itself, read each second during the measured phase and summed per reading: ' +
      'PSS (`/proc/<pid>/smaps_rollup`: a page shared by n processes counts 1/n, so the Node binary\'s code that every process maps is counted once: what the host holds for them) ' +
      'and VmRSS (each process\'s shared pages counted again in each: an upper bound); at rest: the same sums just before the load, after the cluster started or the previous run. ' +
      'Garbage collections: each worker\'s own /metrics at the phase\'s start and end (prom-client\'s `nodejs_gc_duration_seconds`, from Node\'s PerformanceObserver); ' +
      'marking time is the main thread\'s, in mark-compact pauses and incremental marking steps (the concurrent marking on V8\'s helper thread is not in it). Figures per worker are in worker order.',
  );
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

const RESULTS_HEAD = `# Benchmark results

Written by \`npm run loadtest\` (see docs/loadtest.md for what it does and how to read them): each
section below is the latest full-length run of its scenario, with its commit and machine, and is
rewritten by the next one; shorter runs leave this file alone unless given \`--results-md\`. Nothing
else is kept here. The full report of a run (plots, JSON) stays in its \`k6/results/<timestamp>/\`
directory, which is not committed.
`;

const SCENARIOS = ['reference', 'ramp', 'overload', 'soak'];
const TITLES = { reference: 'Reference load (1300/s)', ramp: 'Ramp to the limit', overload: 'Overload', soak: 'Soak (30 minutes at 1300/s)' };
const markers = (scenario) => [`<!-- loadtest:${scenario}:begin -->`, `<!-- loadtest:${scenario}:end -->`];

/** The section each scenario has in a RESULTS.md text, by scenario (only what is between its markers). */
function sections(text) {
  const out = {};
  for (const scenario of SCENARIOS) {
    const [begin, end] = markers(scenario);
    const a = text.indexOf(begin);
    const b = text.indexOf(end);
    if (a >= 0 && b > a) out[scenario] = text.slice(a, b + end.length);
  }
  return out;
}

/**
 * Rewrites bench/RESULTS.md: its head, then one section per scenario in a fixed order, this run's
 * for its scenario and the file's own for the others. Text outside the sections is not kept.
 */
function updateResultsMd(file, rep, reportDir) {
  const kept = sections(fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '');
  const [begin, end] = markers(rep.scenario);
  kept[rep.scenario] = [begin, `## ${TITLES[rep.scenario]}`, '', ...header(rep), `Full report: \`${reportDir}/\`.`, markdown(rep, { brief: true, level: 3 }).trimEnd(), end].join('\n');
  const text = [RESULTS_HEAD, ...SCENARIOS.filter((s) => kept[s] !== undefined).map((s) => kept[s])].join('\n');
  fs.writeFileSync(file, `${text}\n`);
}

module.exports = { markdown, updateResultsMd };
