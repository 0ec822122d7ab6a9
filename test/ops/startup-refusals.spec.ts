// Start-up refusals: a configuration the bidder cannot run with stops it at once with the exit code
// ecosystem.config.js treats as final (EXIT_CONFIG_ERROR, 2: PM2 does not restart it), and with one
// line on stderr (PM2's error log) that names the variable, never a stack trace. docs/operations.md
// ("Start-up refusals") lists them.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MAIN = path.join(ROOT, 'dist', 'main.js');

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs dist/main.js with `extra` on top of a development environment whose Redis answers nobody. */
async function start(dir: string, extra: NodeJS.ProcessEnv): Promise<Exit> {
  const port = String(await freePort());
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: dir,
    NODE_ENV: 'development',
    PORT: port,
    ADMIN_PORT: String(await freePort()),
    REDIS_URL: 'redis://127.0.0.1:1',
    LOG_SPILL_DIR: path.join(dir, 'spill'),
    WARM_UP_REQUESTS: '0',
    ...extra,
  };
  if (extra.ADMIN_PORT === 'PORT') env.ADMIN_PORT = port;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [MAIN], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('start-up refusals', { timeout: 120_000 }, () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'startup-refusals-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  const cases: Array<{ name: string; env: () => NodeJS.ProcessEnv; line: RegExp }> = [
    {
      name: 'a missing CURRENCY_RATES_FILE',
      env: () => ({ CURRENCY_RATES_FILE: path.join(dir, 'no-rates.json') }),
      line: /^bidder: invalid configuration: CURRENCY_RATES_FILE=.*no-rates\.json: cannot open: ENOENT/,
    },
    {
      name: 'a missing CAMPAIGNS_FILE',
      env: () => ({ CAMPAIGNS_FILE: path.join(dir, 'no-campaigns.json') }),
      line: /^bidder: invalid configuration: CAMPAIGNS_FILE=.*no-campaigns\.json: cannot read: ENOENT/,
    },
    {
      name: 'a truncated CAMPAIGNS_FILE',
      env: () => {
        const file = path.join(dir, 'truncated.json');
        fs.writeFileSync(file, fs.readFileSync(path.join(ROOT, 'data', 'campaigns.demo.json')).subarray(0, 300));
        return { CAMPAIGNS_FILE: file };
      },
      line: /^bidder: invalid configuration: CAMPAIGNS_FILE=.*truncated\.json: not valid JSON/,
    },
    {
      name: 'ADMIN_PORT equal to PORT',
      env: () => ({ ADMIN_PORT: 'PORT' }),
      line: /^bidder: invalid configuration: ADMIN_PORT=\d+: the same as PORT/,
    },
  ];
  it('a PORT another program holds: exit code 2, one line naming PORT', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '0.0.0.0', resolve));
    try {
      const r = await start(dir, { PORT: String((holder.address() as net.AddressInfo).port) });
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /^bidder: invalid configuration: PORT=\d+: 0\.0\.0\.0:\d+ is in use by another program; choose a free port\n$/);
    } finally {
      holder.close();
    }
  });

  it('a Node older than 24: exit code 2, the reason on stderr', () => {
    const r = spawnSync(process.execPath, ['-e', `require(${JSON.stringify(path.join(ROOT, 'dist', 'node-version.js'))}).assertNodeVersion('20.19.0')`], { encoding: 'utf8' });
    assert.equal(r.status, 2, r.stderr);
    assert.match(r.stderr, /^bidder: Node\.js 24 or newer is required, this is 20\.19\.0/);
  });

  for (const c of cases) {
    it(`${c.name}: exit code 2, one line naming the variable on stderr, no stack trace`, async () => {
      const r = await start(dir, c.env());
      assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}\nstdout: ${r.stdout.slice(-2000)}`);
      const lines = r.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line: ${r.stderr}`);
      assert.match(lines[0], c.line);
      assert.doesNotMatch(r.stderr + r.stdout, /\n\s+at /, 'no stack trace');
    });
  }
});
