// The shipper as an operator runs it: not ready while SHIP_DIR cannot be written (before any frame
// arrives), on the project's Node 24 under PM2 whatever `node` is first on PATH, and `npm start`
// pointing at shipper.err.log when the shipper is what failed.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from './support/http';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';
import { spawnShipper, until } from '../shipper/support';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const PM2_CLI = path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2');
const PROJECT_NODE = fs.realpathSync(path.join(ROOT, 'node_modules', '.bin', 'node'));

interface Pm2Proc {
  name: string;
  pid: number;
  pm2_env: { status: string };
}

describe('the shipper, as an operator runs it', { timeout: 300_000 }, () => {
  let redis: TestRedis;
  let dir = '';
  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shipper-operator-'));
  });
  after(async () => {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is not ready while SHIP_DIR cannot be written, before any frame arrives; ready with a good one', async () => {
    const bad = spawnShipper({ REDIS_URL: redis.url, SHIP_DIR: '/proc/x/bidlog', SHIP_ID: 'probe-bad' });
    const good = spawnShipper({ REDIS_URL: redis.url, SHIP_DIR: path.join(dir, 'bidlog'), SHIP_ID: 'probe-good' });
    try {
      const badUrl = await bad.adminUrl();
      const goodUrl = await good.adminUrl();
      let answer = { status: 0, body: '' };
      let goodAnswer = { status: 0, body: '' };
      await until(
        'the good shipper ready',
        async () => {
          goodAnswer = await request(`${goodUrl}/health/ready`);
          return goodAnswer.status === 200;
        },
        20_000,
      );
      answer = await request(`${badUrl}/health/ready`);
      assert.equal(answer.status, 503, answer.body);
      assert.match(answer.body, /SHIP_DIR \/proc\/x\/bidlog cannot be written \(ENOENT\)/);
    } finally {
      await bad.stop();
      await good.stop();
    }
  });

  it('runs on the project\'s Node under PM2 even with an older node first on PATH', async (t) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const eco = require(path.join(ROOT, 'ecosystem.config.js')) as { apps: Array<{ name: string; interpreter?: string }> };
    assert.equal(eco.apps.find((a) => a.name === 'shipper')?.interpreter, PROJECT_NODE);
    const older = ['/usr/bin/node', '/usr/local/bin/node'].find((p) => fs.existsSync(p) && fs.realpathSync(p) !== PROJECT_NODE);
    if (!older) return t.skip('no other node on this machine to put first on PATH');
    const home = path.join(dir, 'pm2');
    const env: NodeJS.ProcessEnv = {
      PATH: `${path.dirname(older)}:${process.env.PATH ?? ''}`,
      HOME: dir,
      PM2_HOME: home,
      BIDDER_RUN_DIR: dir,
      REDIS_URL: redis.url,
      SHIP_ADMIN_PORT: String(await freePort()),
    };
    const pm2 = (args: string[]) => spawnSync(process.execPath, [PM2_CLI, ...args], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 });
    try {
      pm2(['start', path.join(ROOT, 'ecosystem.config.js'), '--only', 'shipper']);
      let shipper: Pm2Proc | undefined;
      await until(
        'the shipper online under PM2',
        () => {
          const out = pm2(['jlist']).stdout;
          shipper = (JSON.parse(out.slice(out.indexOf('['))) as Pm2Proc[]).find((p) => p.name === 'shipper');
          return shipper?.pm2_env.status === 'online' && shipper.pid > 0;
        },
        30_000,
      );
      assert.equal(fs.realpathSync(`/proc/${shipper!.pid}/exe`), PROJECT_NODE);
    } finally {
      pm2(['kill']);
    }
  });

  it('npm start points at shipper.err.log when the shipper is what failed', async () => {
    const run = path.join(dir, 'start');
    fs.mkdirSync(run);
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('NODE_TEST') || k.startsWith('pm_') || k === 'NODE_ENV' || k === 'NODE_APP_INSTANCE') delete env[k];
    Object.assign(env, {
      BIDDER_RUN_DIR: run,
      PM2_HOME: path.join(run, 'pm2'),
      WORKERS: '1',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      SHIP_ADMIN_PORT: String(await freePort()),
      REDIS_URL: redis.url,
      // The test's Redis keeps no append-only file (npm start refuses that unless told).
      REDIS_ALLOW_VOLATILE: '1',
      // The shipper's own setting, refused by it alone.
      SHIP_INTERVAL_MS: 'often',
    });
    const r = await new Promise<{ status: number; output: string }>((resolve) => {
      const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'start.js'), 'start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let output = '';
      child.stdout.on('data', (d: Buffer) => (output += d.toString()));
      child.stderr.on('data', (d: Buffer) => (output += d.toString()));
      child.on('close', (code) => resolve({ status: code ?? 1, output }));
    });
    try {
      assert.equal(r.status, 1, r.output);
      assert.match(r.output, /the shipper stopped \(a configuration error, named in its error log\); see \S*shipper\.err\.log/);
      assert.match(r.output, /SHIP_INTERVAL_MS="often": expected a whole number/, 'the tail of shipper.err.log');
      assert.doesNotMatch(r.output, /see \S*bidder\.err\.log/);
    } finally {
      spawnSync(process.execPath, [path.join(ROOT, 'scripts', 'start.js'), 'stop'], { cwd: ROOT, env, encoding: 'utf8', timeout: 90_000 });
    }
  });
});
