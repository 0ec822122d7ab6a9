// index.html of a load-test report (tools/lib/loadtest-html.js): the report's Markdown rendered
// by markdown-it, each plot-only paragraph turned into a figure holding that plot's SVG.
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script of scripts/lib, outside the TypeScript build
const page = require(path.join(ROOT, 'tools', 'lib', 'loadtest-html.js')) as {
  html(md: string, svgs: Record<string, string>, title: string): string;
};

const SVG = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>';

describe('load-test report page', () => {
  it('tables, emphasis, code and lists as HTML; a line per header fact kept', () => {
    const out = page.html(
      ['# Load test: reference', '', 'Run `r1` with **GOGC=400**.', 'Machine: 2 CPUs.', '', '- **a warning**', '', '| server | p99 |', '|---|---:|', '| bidder | 3.33 |', ''].join('\n'),
      {},
      'Load test: reference (r1)',
    );
    assert.match(out, /^<!doctype html>/);
    assert.match(out, /<title>Load test: reference \(r1\)<\/title>/);
    assert.match(out, /<h1>Load test: reference<\/h1>/);
    assert.match(out, /<p>Run <code>r1<\/code> with <strong>GOGC=400<\/strong>\.<br>\nMachine: 2 CPUs\.<\/p>/);
    assert.match(out, /<ul>\n<li><strong>a warning<\/strong><\/li>\n<\/ul>/);
    assert.match(out, /<th>server<\/th>\n<th style="text-align:right">p99<\/th>/);
    assert.match(out, /<td>bidder<\/td>\n<td style="text-align:right">3\.33<\/td>/);
  });

  it('a plot-only paragraph: a figure with the SVG inlined and its caption', () => {
    const out = page.html('## Plots\n\n![Latency over time](latency-over-time.svg)\n', { 'latency-over-time.svg': SVG }, 't');
    assert.ok(out.includes(`<figure>${SVG}<figcaption>Latency over time</figcaption></figure>`), out);
    assert.doesNotMatch(out, /<img|<p><figure>/);
  });

  it('markup in the text is shown, not run (raw HTML off, title escaped)', () => {
    const out = page.html('A <script>alert(1)</script> & <b>b</b>\n', {}, '<i>t</i>');
    assert.doesNotMatch(out, /<script>|<b>|<i>/);
    assert.match(out, /A &lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; &lt;b&gt;b&lt;\/b&gt;/);
    assert.match(out, /<title>&lt;i&gt;t&lt;\/i&gt;<\/title>/);
  });
});
