'use strict';
// The load test's report as pictures and a page: its SVG plots, and index.html, the Markdown
// rendered with the plots inlined, one self-contained file.
const markdownIt = require('markdown-it');
const { lineChart, barChart } = require('./charts');
const { int } = require('./loadtest-format');
const soakLib = require('./loadtest-soak');

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

// The page is report.md rendered by markdown-it (tables, emphasis, code, lists; line breaks kept,
// as the header is a line per fact), with no raw HTML let through. A paragraph that is only an
// image (`![caption](name.svg)`) becomes a figure holding that plot's SVG: the page is one file.
const md = markdownIt({ html: false, breaks: true, linkify: false, typographer: false });
const figureOf = (tokens, i) => {
  const inline = tokens[i];
  return inline && inline.type === 'inline' && inline.children.length === 1 && inline.children[0].type === 'image' ? inline.children[0] : null;
};
md.renderer.rules.paragraph_open = (tokens, idx, options, env, self) => (figureOf(tokens, idx + 1) ? '<figure>' : self.renderToken(tokens, idx, options));
md.renderer.rules.paragraph_close = (tokens, idx, options, env, self) => (figureOf(tokens, idx - 1) ? '</figure>' : self.renderToken(tokens, idx, options));
md.renderer.rules.image = (tokens, idx, options, env) => {
  const img = tokens[idx];
  const svg = env.svgs[img.attrGet('src')] || '';
  return `${svg}<figcaption>${md.utils.escapeHtml(img.content)}</figcaption>`;
};

/** index.html: the report's Markdown `text` rendered, with the plots `svgs` (by file name) inlined. */
function html(text, svgs, title) {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${md.utils.escapeHtml(title)}</title>
<style>
body{font-family:Helvetica,Arial,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1em}th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}
th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}code{background:#f4f4f4;padding:0 3px}
figure{margin:1em 0}figcaption{color:#666;font-size:90%}
</style></head><body>
${md.render(text, { svgs })}</body></html>
`;
}

module.exports = { plots, html };
