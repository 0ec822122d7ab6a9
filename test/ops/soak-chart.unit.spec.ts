// The soak report's Redis chart: the bid log waiting in Redis (a few MB) and its bound are drawn on
// a right axis of their own, not on Redis used_memory's (hundreds of MB), where the bound sat on the
// floor of the chart and read as Redis's own limit.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import * as svg from '../../src/charts/svg';
import { report, soakFixtureReport } from './support/loadtest-fixture';

/** The y of the dashed bound line and the plot's top and bottom (its frame). */
function geometry(text: string): { bound: number; top: number; bottom: number } {
  const bound = /<line [^>]*y1="([\d.]+)"[^>]*stroke-dasharray="6 4"/.exec(text);
  const frame = /<rect x="[\d.]+" y="([\d.]+)" width="[\d.]+" height="([\d.]+)" fill="none"/.exec(text);
  assert.ok(bound && frame, 'a bound line and a plot frame');
  return { bound: Number(bound[1]), top: Number(frame[1]), bottom: Number(frame[1]) + Number(frame[2]) };
}

describe('the soak report: the bid log bound on its own axis', () => {
  it('a right-axis series and its bound use the right scale', () => {
    const out = svg.lineChart({
      title: 't',
      xLabel: 's',
      yLabel: 'Redis MB',
      y2Label: 'bid log MB',
      series: [
        { name: 'Redis used_memory', points: [[0, 300], [10, 500]] },
        { name: 'bid log', right: true, points: [[0, 1], [10, 2]] },
      ],
      hLines: [{ y: 3, label: 'bid log bound 3.0 MB', right: true }],
    });
    const g = geometry(out);
    // 3 MB of a right axis that ends near 3.15: near the top; on the left axis (0-525) it would lie on the floor.
    assert.ok(g.bound < g.top + (g.bottom - g.top) * 0.2, `bound at y=${g.bound}, plot ${g.top}-${g.bottom}`);
    assert.match(out, /bid log MB \(right axis\)/);
    assert.match(out, />bid log \(right axis\)</);
  });

  it('the soak fixture\'s soak-redis.svg draws the bid log and its bound on the right axis', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'soak-chart-'));
    try {
      report.write(dir, soakFixtureReport('soak-chart-fixture'));
      const text = fs.readFileSync(path.join(dir, 'soak-redis.svg'), 'utf8');
      assert.match(text, /bid log in Redis, MB \(right axis\)/);
      assert.match(text, /bid log waiting for the shipper \(right axis\)/);
      const g = geometry(text);
      assert.ok(g.bound > g.top && g.bound < g.bottom, `bound at y=${g.bound}, inside the plot ${g.top}-${g.bottom}`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
