// A configuration error under PM2 (issue 23, finding 8): `pm2 start ecosystem.config.js` without the
// production secrets, with a real PM2 under a temporary PM2_HOME. Every worker must stop once with
// the reason in bidder.err.log and in `pm2 logs`, and PM2 must not restart it in a loop.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const PM2_CLI = path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2');

interface Proc {
  name: string;
  pm2_env: { status: string; restart_time: number; unstable_restarts: number; exit_code?: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a configuration error under PM2', { timeout: 180_000 }, () => {
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  const pm2 = (args: string[], timeout = 60_000) => spawnSync(process.execPath, [PM2_CLI, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout });
  const list = (): Proc[] => {
    const out = pm2(['jlist']).stdout;
    return JSON.parse(out.slice(out.indexOf('['))) as Proc[];
  };

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pm2-config-error-'));
    // As an operator's shell has it: no NODE_ENV (the process file makes it production), no secrets.
    env = { PATH: process.env.PATH, HOME: dir, PM2_HOME: path.join(dir, 'pm2'), BIDDER_RUN_DIR: dir, WORKERS: '2' };
    env.PORT = String(await freePort());
    env.ADMIN_PORT = String(await freePort());
    env.SHIP_ADMIN_PORT = String(await freePort());
  });
  after(() => {
    pm2(['kill']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stops each worker once, with the reason in bidder.err.log and `pm2 logs`, without a restart loop', async () => {
    // The CLI waits for the workers' `ready` (wait_ready); they never send it, so its answer is not the point.
    pm2(['start', path.join(ROOT, 'ecosystem.config.js'), '--only', 'bidder'], 90_000);
    // Longer than min_uptime (5 s) plus several of PM2's restart delays: a loop would show by now.
    let procs: Proc[] = [];
    const until = Date.now() + 30_000;
    do {
      await sleep(1_000);
      procs = list().filter((p) => p.name === 'bidder');
    } while (Date.now() < until && !(procs.length === 2 && procs.every((p) => p.pm2_env.status === 'stopped')));
    await sleep(3_000);
    procs = list().filter((p) => p.name === 'bidder');
    assert.equal(procs.length, 2);
    for (const p of procs) {
      assert.equal(p.pm2_env.status, 'stopped', JSON.stringify(p.pm2_env));
      assert.equal(p.pm2_env.restart_time, 0, 'not restarted');
      assert.equal(p.pm2_env.exit_code, 2, 'the configuration error exit code');
    }
    const errLog = fs.readFileSync(path.join(dir, 'logs', 'bidder.err.log'), 'utf8');
    assert.match(errLog, /TRACKING_SECRET: not set, and NODE_ENV=production needs it/);
    assert.match(errLog, /PII_HASH_SECRET: not set/);
    assert.match(errLog, /TRACKING_BASE_URL: not set/);
    assert.equal(errLog.match(/invalid configuration/g)?.length, 2, 'once per worker');
    const logs = pm2(['logs', 'bidder', '--nostream', '--lines', '40']);
    assert.match(logs.stdout + logs.stderr, /TRACKING_SECRET: not set/);
  });

  it('a CAMPAIGNS_FILE that cannot be read, found while starting: stopped once, one line in bidder.err.log', async () => {
    pm2(['delete', 'all']);
    const errFile = path.join(dir, 'logs', 'campaigns.err.log');
    const saved = env;
    env = { ...env, NODE_ENV: 'development', WORKERS: '1', CAMPAIGNS_FILE: path.join(dir, 'missing.json'), BIDDER_ERR_FILE: errFile, REDIS_URL: 'redis://127.0.0.1:1' };
    try {
      pm2(['start', path.join(ROOT, 'ecosystem.config.js'), '--only', 'bidder'], 90_000);
      let procs: Proc[] = [];
      const until = Date.now() + 30_000;
      do {
        await sleep(1_000);
        procs = list().filter((p) => p.name === 'bidder');
      } while (Date.now() < until && !(procs.length === 1 && procs[0].pm2_env.status === 'stopped'));
      await sleep(3_000);
      procs = list().filter((p) => p.name === 'bidder');
      assert.equal(procs.length, 1);
      assert.equal(procs[0].pm2_env.status, 'stopped', JSON.stringify(procs[0].pm2_env));
      assert.equal(procs[0].pm2_env.restart_time, 0, 'not restarted');
      assert.equal(procs[0].pm2_env.exit_code, 2);
      const lines = fs.readFileSync(errFile, 'utf8').trimEnd().split('\n');
      assert.deepEqual(lines.length, 1, lines.join('\n'));
      assert.match(lines[0], /^bidder: invalid configuration: CAMPAIGNS_FILE=.*missing\.json: cannot read: ENOENT/);
    } finally {
      env = saved;
    }
  });
});
