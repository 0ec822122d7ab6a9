// The logs CLI's and the report's command lines, end to end: a wrong one exits with status 2 and
// says what is wrong; a right one (negative --start included) is read. No Redis: these stop before it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { ROOT, runCli, runNode } from './support';

describe('command lines of npm run logs and npm run report', () => {
  it('logs: every wrong flag or value exits 2 with its reason and the usage', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['count', '--frm', 'x'], /unknown option --frm/],
      [['count', '--start'], /--start needs a value/],
      [['count', '--start', 'x'], /--start x: expected a whole number/],
      [['count', '--source', 'disk'], /--source disk: expected redis, spill or all/],
      [['count', '--shards', '0'], /--shards 0: expected 1 to \d+/],
      [['count', '--redis', 'http://x'], /--redis http:\/\/x: expected a redis:\/\/ or rediss:\/\/ URL/],
      // A password in a wrong URL is not echoed (issue 23, finding 7).
      [['count', '--redis', 'http://u:s3cret-pw@x'], /--redis http:\/\/u:\*\*\*@x\/: expected a redis:\/\/ or rediss:\/\/ URL/],
      [['count', '--json=1'], /--json takes no value/],
      [['count', 'list'], /unexpected argument list/],
      [['frobnicate'], /unknown command frobnicate/],
    ];
    for (const [args, reason] of cases) {
      const r = await runCli(args, {});
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, reason, args.join(' '));
      assert.match(r.stderr, /usage: npm run logs/, args.join(' '));
    }
  });

  it('logs: --help prints the usage; a negative --start is a value, not a flag', async () => {
    const help = await runCli(['--help'], {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /usage: npm run logs/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cli-args-'));
    try {
      const r = await runCli(['count', '--source', 'spill', '--spill-dir', dir, '--start', '-10', '--end', '-1'], {});
      assert.equal(r.code, 0, r.stderr);
      assert.equal((JSON.parse(r.stdout) as { batches: number }).batches, 0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('report: an unknown flag or a missing value exits 2 with its reason', async () => {
    const report = path.join(ROOT, 'dist', 'shipper', 'report.js');
    for (const [args, reason] of [
      [['--frm', 'x'], /unknown option --frm/],
      [['--dir'], /--dir needs a value/],
      [['--from', 'noon'], /"noon": expected YYYY-MM-DD/],
      [['--json=1'], /--json takes no value/],
    ] as Array<[string[], RegExp]>) {
      const r = await runNode(report, args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, reason, args.join(' '));
    }
  });
});
