// bench/RESULTS.md is the output of `npm run loadtest` alone: a run rewrites the file from its head
// and one section per scenario, so text written by hand between or around the sections goes.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { fixtureReport } from '../../test/ops/support/loadtest-fixture';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const md = require(path.join(ROOT, 'tools', 'lib', 'loadtest-markdown.js')) as {
  updateResultsMd(file: string, rep: Record<string, any>, reportDir: string): void;
};

describe('bench/RESULTS.md', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'results-md-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is rewritten from its head and the scenarios\' sections only: hand-written notes go, the other scenarios\' sections stay, reference first', () => {
    const file = path.join(dir, 'RESULTS.md');
    const ramp = '<!-- loadtest:ramp:begin -->\n## Ramp to the limit\n\nan earlier ramp run\n<!-- loadtest:ramp:end -->';
    fs.writeFileSync(file, `# Benchmark results\n\n## Notes (written by hand, 2026-01-01)\n\nsome diary\n\n${ramp}\n\n### A hand-run experiment\n\nmore diary\n`);
    const rep = fixtureReport('20260101-000000-reference');
    md.updateResultsMd(file, rep, 'k6/results/20260101-000000-reference');
    const text = fs.readFileSync(file, 'utf8');
    assert.doesNotMatch(text, /diary|written by hand|hand-run/);
    assert.match(text, /^# Benchmark results\n\nWritten by `npm run loadtest`/);
    const a = text.indexOf('<!-- loadtest:reference:begin -->');
    const b = text.indexOf(ramp);
    assert.ok(a > 0 && b > a, 'the reference section, then the ramp section kept as it was');
    assert.match(text, /## Reference load \(1300\/s\)/);
    assert.match(text, /Full report: `k6\/results\/20260101-000000-reference\/`/);
    // A second run of the same scenario replaces its section and changes nothing else.
    md.updateResultsMd(file, rep, 'k6/results/20260101-000000-reference');
    assert.equal(fs.readFileSync(file, 'utf8'), text);
  });
});
