// `npm start` after its private Redis was restarted by hand (from its own config file, which holds
// the generated password) while the workers were down: the Redis answers -NOAUTH to a bare PING.
// npm start must recognise it by the password in secrets.json, give the workers its URL with the
// password, record it as its own (so that `npm stop` stops it), and be ready as usual.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Run {
  status: number;
  output: string;
}

function run(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 180_000): Promise<Run> {
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

function alive(pid: number): boolean {
  if (!(pid > 0)) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface State {
  redis: { url: string; started: boolean; pid: number | null; dir: string | null };
}

describe('npm start after its Redis was restarted by hand', { timeout: 400_000 }, () => {
  let dir = '';
  let env: NodeJS.ProcessEnv = {};
  const pids: number[] = [];
  const state = (): State => JSON.parse(fs.readFileSync(path.join(dir, 'state.json'), 'utf8')) as State;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'start-redis-by-hand-'));
    env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('NODE_TEST') || k.startsWith('pm_') || k.startsWith('REDIS_') || k === 'NODE_ENV' || k === 'NODE_APP_INSTANCE') delete env[k];
    Object.assign(env, {
      BIDDER_RUN_DIR: dir,
      PM2_HOME: path.join(dir, 'pm2'),
      WORKERS: '1',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
      ADMIN_PORT: String(await freePort()),
      SHIP_ADMIN_PORT: String(await freePort()),
      // Nobody answers there: npm start runs its private Redis on that port.
      REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    });
  });

  after(async () => {
    await run([path.join('scripts', 'start.js'), 'stop'], env).catch(() => undefined);
    for (const pid of pids) if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('uses it with its password, says so, records it as its own, and npm stop stops it', async () => {
    const first = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(first.status, 0, first.output);
    const s1 = state();
    assert.ok(s1.redis.started && s1.redis.pid && s1.redis.dir);
    const port = new URL(s1.redis.url).port;
    // The workers and PM2 go (a reboot, `pm2 kill`), then the Redis, which a person starts again
    // from its own config file.
    spawnSync(process.execPath, [path.join(ROOT, 'node_modules', 'pm2', 'bin', 'pm2'), 'kill'], { env, encoding: 'utf8', timeout: 60_000 });
    process.kill(s1.redis.pid, 'SIGTERM');
    for (let i = 0; i < 100 && alive(s1.redis.pid); i++) await sleep(100);
    assert.ok(!alive(s1.redis.pid));
    const conf = path.join(s1.redis.dir, `redis-${port}.conf`);
    assert.ok(fs.existsSync(conf), 'npm start keeps the password in a config file');
    const pidfile = path.join(dir, 'by-hand.pid');
    const byHand = spawnSync('redis-server', [conf, '--port', port, '--bind', '127.0.0.1', '--dir', s1.redis.dir, '--daemonize', 'yes', '--pidfile', pidfile], { encoding: 'utf8' });
    assert.equal(byHand.status, 0, byHand.stderr);
    // Redis creates its pid file, then writes it: wait for a whole positive number (0 or NaN given
    // to process.kill would signal this test's own process group).
    let pid = 0;
    for (let i = 0; i < 50 && !(pid > 0); i++) {
      await sleep(100);
      pid = fs.existsSync(pidfile) ? Number(fs.readFileSync(pidfile, 'utf8').trim()) : 0;
    }
    assert.ok(Number.isInteger(pid) && pid > 0, `no pid in ${pidfile}`);
    pids.push(pid);

    const started = Date.now();
    const second = await run([path.join('scripts', 'start.js'), 'start'], env);
    assert.equal(second.status, 0, second.output);
    assert.ok(Date.now() - started < 80_000, `ready in ${Date.now() - started} ms`);
    assert.match(second.output, new RegExp(`redis-server on 127\\.0\\.0\\.1:${port} .*password in .*secrets\\.json.*pid ${pid}`));
    const s2 = state();
    assert.equal(s2.redis.url, s1.redis.url, 'the URL with the password');
    assert.equal(s2.redis.started, true);
    assert.equal(s2.redis.pid, pid);

    const stop = await run([path.join('scripts', 'start.js'), 'stop'], env);
    assert.equal(stop.status, 0, stop.output);
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    assert.ok(!alive(pid), `npm stop stopped the Redis started by hand:\n${stop.output}`);
  });
});
