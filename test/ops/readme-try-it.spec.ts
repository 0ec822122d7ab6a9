// README's "Try it" block, run as a person runs it after `npm start`: its commands in order, in a
// shell from the project directory, each expected to print the lines README shows under it. The
// only changes: the ports (8080, 8081) are free ports of this run, and BIDDER_RUN_DIR / PM2_HOME
// point at a temporary directory. REDIS_URL is unset for the commands, as in a person's shell: the
// private Redis `npm start` ran has a generated password that only its state file holds.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stripVTControlCharacters } from 'node:util';
import { freePort } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Step {
  command: string;
  expected: string[];
}

/** The sh block after "Try it" in README.md: commands (with their `\` continuations) and the `#  ` lines under each. */
export function tryItSteps(readme: string): Step[] {
  const start = readme.indexOf('Try it');
  assert.ok(start >= 0, 'README has a "Try it" block');
  const block = /```sh\n([\s\S]*?)```/.exec(readme.slice(start));
  assert.ok(block, 'a sh block follows "Try it"');
  const steps: Step[] = [];
  let continued = false;
  for (const line of block[1].split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#  ')) {
      assert.ok(steps.length > 0, 'an expected line before any command');
      steps[steps.length - 1].expected.push(line.slice(3));
    } else if (continued) {
      steps[steps.length - 1].command += `\n${line}`;
    } else {
      steps.push({ command: line, expected: [] });
    }
    continued = line.endsWith('\\');
  }
  return steps;
}

/** An expected line as a pattern: `…` stands for anything, runs of spaces for any spacing. */
function pattern(expected: string): RegExp {
  const norm = (s: string) => s.trim().replace(/\s+/g, ' ');
  const parts = norm(expected).split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/ /g, '\\s+'));
  return new RegExp(parts.join('.*'));
}

interface Run {
  status: number;
  output: string;
}

function shell(command: string, env: NodeJS.ProcessEnv, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ status: code ?? 1, output: stripVTControlCharacters(output) });
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('README "Try it" against npm start', { timeout: 420_000 }, () => {
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  let port = 0;
  let adminPort = 0;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readme-try-it-'));
    port = await freePort();
    adminPort = await freePort();
    env = { ...process.env };
    for (const k of Object.keys(env)) {
      if (k.startsWith('NODE_TEST') || k.startsWith('pm_') || k.startsWith('REDIS_') || k.startsWith('LOG_') || k.startsWith('SHIP_') || k === 'NODE_ENV' || k === 'NODE_APP_INSTANCE') delete env[k];
    }
    Object.assign(env, { BIDDER_RUN_DIR: dir, PM2_HOME: path.join(dir, 'pm2'), WORKERS: '2', PORT: String(port), ADMIN_PORT: String(adminPort), SHIP_ADMIN_PORT: String(await freePort()) });
  });

  after(async () => {
    await shell('npm stop', env).catch(() => undefined);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('each command prints what README shows under it', async () => {
    // npm start's private Redis on a free port: REDIS_URL on loopback that nobody answers (a person's
    // 6379 is free; on a shared machine it may not be). The commands below run without it.
    const redisPort = await freePort();
    const started = await shell('npm start', { ...env, REDIS_URL: `redis://127.0.0.1:${redisPort}` }, 240_000);
    assert.equal(started.status, 0, started.output);
    assert.match(started.output, /BIDDER_READY .*"startedRedis":true/);

    const steps = tryItSteps(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'));
    assert.deepEqual(
      steps.map((s) => s.command.split(/\s+/).slice(0, 3).join(' ')),
      ['curl -s -XPOST', 'curl -s localhost:8081/metrics/cluster', 'npm run logs', 'npm run report', 'npx pm2 scale'],
      'the commands this test knows',
    );
    for (const step of steps) {
      const command = step.command.replaceAll('localhost:8080', `localhost:${port}`).replaceAll('localhost:8081', `localhost:${adminPort}`);
      // A person reads the output before typing the next command: a command whose figures lag (the
      // machine view: every 5 s; the report: the shipper's first batch) is tried again for 30 s.
      const until = Date.now() + 30_000;
      let run: Run;
      let missing: string[];
      for (;;) {
        run = await shell(command, env);
        const lines = run.output.split('\n');
        missing = step.expected.filter((e) => !lines.some((l) => pattern(e).test(l.trim())));
        if ((run.status === 0 && missing.length === 0) || Date.now() > until) break;
        await sleep(1_000);
      }
      assert.equal(run.status, 0, `${command}\n${run.output}`);
      assert.deepEqual(missing, [], `${command} printed:\n${run.output}`);
      assert.doesNotMatch(run.output, /cannot reach|Error/, `${command}\n${run.output}`);
    }
  });
});
