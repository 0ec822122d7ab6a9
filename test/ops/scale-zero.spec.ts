// `pm2 scale bidder 0`: PM2 accepts it, and the public port then refuses every connection. The
// project's PM2 command (`npm run pm2 -- scale bidder 0`) refuses it; after a raw `pm2 scale bidder
// 0` (npx pm2), `npm start status` says what happened and `npm start` starts the workers again, saying so.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const PM2_CLI = path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2');

function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 180_000): Promise<{ status: number; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(t);
      resolve({ status: code ?? 1, output });
    });
  });
}

describe('pm2 scale bidder 0', { timeout: 300_000 }, () => {
  let redis: TestRedis;
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scale-zero-'));
    env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('NODE_TEST') || k.startsWith('pm_') || k === 'NODE_ENV' || k === 'NODE_APP_INSTANCE') delete env[k];
    Object.assign(env, {
      BIDDER_RUN_DIR: dir,
      PM2_HOME: path.join(dir, 'pm2'),
      WORKERS: '1',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      SHIP_ADMIN_PORT: String(await freePort()),
      REDIS_URL: redis.url,
      REDIS_ALLOW_VOLATILE: '1',
    });
  });
  after(async () => {
    await run([path.join('scripts', 'start.js'), 'stop'], env).catch(() => undefined);
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('npm run pm2 -- scale bidder 0 is refused, with the reason and what to do', async () => {
    for (const n of ['0', '00']) {
      const r = await run([path.join('scripts', 'pm2.js'), 'scale', 'bidder', n], env, 30_000);
      assert.equal(r.status, 2, r.output);
      assert.match(r.output, /refused: with no worker the public port refuses every connection.*npm stop/);
    }
  });

  it('after a raw pm2 scale bidder 0: status says so, npm start starts the workers again', async () => {
    const first = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(first.status, 0, first.output);
    const scaled = spawnSync(process.execPath, [PM2_CLI, 'scale', 'bidder', '0'], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    assert.equal(scaled.status, 0, `${scaled.stdout}${scaled.stderr}`);
    const status = await run([path.join('scripts', 'start.js'), 'status'], env, 60_000);
    assert.equal(status.status, 3, status.output);
    assert.match(status.output, /no worker runs \(scaled to 0, or every worker stopped\) while the shipper does: the public port refuses every connection/);
    const again = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(again.status, 0, again.output);
    assert.match(again.output, /no worker runs .* while the shipper does: starting the workers again/);
    assert.match(again.output, /BIDDER_READY .*"workers":1/);
  });
});
