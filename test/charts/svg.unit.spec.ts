// The one SVG chart module (src/charts/svg.ts), which the bid log report's page and the measuring
// tools' plots both draw with.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { barChart, esc, fmt, lineChart } from '../../src/charts/svg';

const bars = (svg: string): string[] => [...svg.matchAll(/<rect [^>]*><title>([^<]*)<\/title><\/rect>/g)].map((m) => m[1]);

describe('the chart module', () => {
  it('bar chart: a bar per value with its tooltip, a gap for a missing one, the legend', () => {
    const svg = barChart({ title: 'CPU <µs>', yLabel: 'µs', groups: ['a', 'b'], series: [{ name: 'x', values: [1, 2] }, { name: 'y', values: [null, 3] }] });
    assert.ok(svg.startsWith('<svg') && svg.endsWith('</svg>'));
    assert.match(svg, /CPU &lt;µs&gt;/);
    assert.deepEqual(bars(svg), ['a x: 1', 'b x: 2', 'b y: 3']);
    assert.match(svg, />x<\/text>/);
    assert.match(svg, />y<\/text>/);
  });

  it('bar chart: a marked group has lighter dashed bars, a longer label and tooltip; no title, no title text', () => {
    const svg = barChart({
      groups: ['10:00', '11:00'],
      series: [{ name: 'requests', color: '#000', values: [4, 9] }],
      marked: [{ label: ' (26m)', tip: ' (partial hour: 26 min of data)' }, null],
      width: 460,
      height: 220,
    });
    assert.deepEqual(bars(svg), ['10:00 requests: 4 (partial hour: 26 min of data)', '11:00 requests: 9']);
    assert.equal(svg.match(/fill-opacity="0.3" stroke="#000" stroke-dasharray="3 2"/g)?.length, 1);
    assert.match(svg, />10:00 \(26m\)</);
    assert.doesNotMatch(svg, /font-weight="bold"/);
  });

  it('bar chart: labels of narrow groups are thinned out and kept inside the drawing', () => {
    const groups = Array.from({ length: 24 }, (_, i) => `${String(i).padStart(2, '0')}:00`);
    const svg = barChart({ groups, series: [{ name: 's', values: groups.map((_, i) => i) }], width: 460, height: 220 });
    const labels = [...svg.matchAll(/<text x="([\d.]+)" y="[\d.]+" text-anchor="(\w+)" fill="#333">(\d\d:00)</g)];
    assert.ok(labels.length > 3 && labels.length < 24, `${labels.length} of 24 group labels`);
    for (const [, x, anchor, text] of labels) {
      const half = text.length * 3.2;
      const [lo, hi] = anchor === 'middle' ? [Number(x) - half, Number(x) + half] : anchor === 'end' ? [Number(x) - 2 * half, Number(x)] : [Number(x), Number(x) + 2 * half];
      assert.ok(lo >= 0 && hi <= 460, `${text} from ${lo} to ${hi}`);
    }
  });

  it('line chart: paths, a log axis, limits, a right axis; no data says so', () => {
    const svg = lineChart({
      title: 't',
      xLabel: 's',
      yLabel: 'ms',
      yLog: true,
      series: [
        { name: 'p50', points: [[0, 0.5], [1, null], [2, 0.7]] },
        { name: 'backlog', right: true, points: [[0, 1], [2, 2]] },
      ],
      hLines: [{ y: 10, label: 'limit' }],
      y2Label: 'MB',
    });
    // The null point breaks the first line into two pieces.
    assert.equal(svg.match(/<path d="M[^"]*"/g)?.length, 2);
    assert.match(svg, /ms \(log scale\)/);
    assert.match(svg, /MB \(right axis\)/);
    assert.match(svg, />limit</);
    assert.match(lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [{ name: 'a', points: [] }] }), /no data/);
  });

  it('formats and escapes', () => {
    assert.deepEqual([0, 0.0075, 0.015, 2.345, 380.4, 45_600, 1_200_000].map(fmt), ['0', '0.0075', '0.015', '2.35', '380', '45.6k', '1.2M']);
    assert.equal(esc(`<a href="x">&'`), '&lt;a href=&quot;x&quot;&gt;&amp;&#39;');
  });
});
