'use strict';
// The load test's report: a JSON summary (loadtest-analysis.js), Markdown (loadtest-markdown.js),
// SVG plots and an HTML page that holds them all (loadtest-html.js), plus bench/RESULTS.md.
const fs = require('node:fs');
const path = require('node:path');
const { build, phaseCpu, TARGETS, SATURATED_SHARE } = require('./loadtest-analysis');
const { markdown, updateResultsMd } = require('./loadtest-markdown');
const { plots, html } = require('./loadtest-html');

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

module.exports = { build, write, markdown, plots, updateResultsMd, cpuFigures: phaseCpu, TARGETS, SATURATED_SHARE };
