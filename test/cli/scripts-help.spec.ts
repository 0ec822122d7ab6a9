// The project's scripts read their command line strictly: `--help` prints the usage and exits 0
// before doing anything, and an unknown option is refused in one line naming it, then the usage
// (exit 2). (scripts/pm2.js hands its arguments to PM2, which has its own --help.)
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCRIPTS = ['gen-campaigns', 'image', 'import-cycles', 'redis-cluster', 'start', 'test'];

const run = (script: string, arg: string) =>
  spawnSync(process.execPath, [path.join(ROOT, 'scripts', `${script}.js`), arg], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, PODMAN_AUTO_INSTALL: '0' } });

describe('the scripts\' command lines', () => {
  for (const script of SCRIPTS) {
    it(`${script}: --help prints the usage (exit 0); --no-such-option is refused with the usage (exit 2)`, () => {
      const help = run(script, '--help');
      assert.equal(help.status, 0, help.stderr);
      assert.match(help.stdout, /usage/i);
      const bad = run(script, '--no-such-option');
      assert.equal(bad.status, 2, `${bad.stdout}\n${bad.stderr}`);
      assert.match(bad.stderr, /^[\w-]+: .*--no-such-option/);
      assert.match(bad.stderr, /usage/i);
      assert.doesNotMatch(bad.stderr, /\n\s+at /, 'no stack trace');
    });
  }

  it('gen-campaigns takes at most one output file', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'gen-campaigns.js'), '/tmp/a.json', '/tmp/b.json'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^gen-campaigns: unexpected argument '\/tmp\/b\.json'/);
  });
});
