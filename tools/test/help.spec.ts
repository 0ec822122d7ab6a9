// Every measuring tool reads its command line strictly: `--help` prints its usage and exits 0 without
// starting anything, and an unknown option is refused in one line naming it, then the usage or
// where to find it (exit 2).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const BUILT = path.join(ROOT, '.test-build', 'tools', 'bench');
const TOOLS: Array<[string, string]> = [
  ['loadtest', path.join(ROOT, 'tools', 'loadtest.js')],
  ['profile', path.join(ROOT, 'tools', 'profile.js')],
  ['ab', path.join(ROOT, 'tools', 'ab-cpu.js')],
  ['memory', path.join(ROOT, 'tools', 'memory.js')],
  ['bench', path.join(ROOT, 'tools', 'bench.js')],
  ['ab-http', path.join(ROOT, 'tools', 'bench', 'ab-http.js')],
  ['open-loop', path.join(ROOT, 'tools', 'bench', 'open-loop.js')],
  ['baseline', path.join(ROOT, 'tools', 'bench', 'baseline', 'server.js')],
  ...['cluster', 'journal', 'log', 'ship', 'shipper-cpu', 'exchanges', 'privacy'].map((b): [string, string] => [`${b}.bench`, path.join(BUILT, `${b}.bench.js`)]),
];

const run = (file: string, arg: string) => spawnSync(process.execPath, [file, arg], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, PORT: '1' } });

describe('the tools\' command lines', () => {
  for (const [name, file] of TOOLS) {
    it(`${name}: --help prints the usage (exit 0); --no-such-option is refused with the usage (exit 2)`, () => {
      const help = run(file, '--help');
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, /usage/i);
      const bad = run(file, '--no-such-option');
      assert.equal(bad.status, 2, `${bad.stdout}\n${bad.stderr}`);
      assert.match(bad.stderr, /^[\w.-]+: .*--no-such-option/);
      assert.match(bad.stderr, /usage|see --help/i);
      assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
    });
  }
});
