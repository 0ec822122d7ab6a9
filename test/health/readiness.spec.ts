// Readiness tells the truth and leaks nothing (issue 23, finding 7): the real bidder process
// (node dist/main.js) against a real Redis, probed over HTTP. Not ready while bids cannot be logged
// or budgets read (Redis away, a cluster setting against a server that is not a cluster, an
// unwritable LOG_SPILL_DIR); no password or API key in any answer or log line.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SECRET = 's3cretpw-9f8e7d';

interface Ready {
  status: string;
  problems: string[];
  warnings: string[];
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const r = http.get(url, { agent: false, timeout: 2_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    r.on('timeout', () => r.destroy(new Error('timeout')));
    r.on('error', () => resolve({ status: 0, body: '' }));
  });
}

interface Bidder {
  url: string;
  output: () => string;
  stop(): Promise<void>;
}

async function startBidder(dir: string, env: Record<string, string>): Promise<Bidder> {
  const port = await freePort();
  const adminPort = await freePort();
  const child: ChildProcess = spawn(process.execPath, [path.join(ROOT, 'dist', 'main.js')], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'test',
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_PORT: String(adminPort),
      LOG_SPILL_DIR: path.join(dir, `spill-${port}`),
      TRACKING_SECRET: 't'.repeat(32),
      PII_HASH_SECRET: 'p'.repeat(32),
      CURRENCY_RATES_URL: `http://rates:${SECRET}@127.0.0.1:9/v6/${SECRET}/latest?app_id=${SECRET}`,
      LOG_LEVEL: 'debug',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 30_000;
  while ((await get(`${url}/health/live`)).status !== 200) {
    if (Date.now() >= until || child.exitCode !== null) {
      child.kill('SIGKILL');
      assert.fail(`the bidder did not start:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    output: () => out,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 20_000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

async function readyWithin(url: string, want: (r: Ready & { code: number }) => boolean, ms = 15_000): Promise<Ready & { code: number }> {
  const until = Date.now() + ms;
  let last: Ready & { code: number } = { code: 0, status: '', problems: [], warnings: [] };
  while (Date.now() < until) {
    const r = await get(`${url}/health/ready`);
    if (r.status !== 0) {
      last = { ...(JSON.parse(r.body) as Ready), code: r.status };
      if (want(last)) return last;
    }
    await new Promise((res) => setTimeout(res, 200));
  }
  assert.fail(`readiness never as expected; last: ${JSON.stringify(last)}`);
}

describe('readiness (the real bidder process)', { timeout: 180_000 }, () => {
  let redis: TestRedis;
  let dir = '';
  before(async () => {
    redis = await startTestRedis();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'readiness-'));
  });
  after(async () => {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('is ready with Redis answering and a writable spill directory (the checks can pass)', async () => {
    const b = await startBidder(dir, { REDIS_URL: redis.url });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 200);
      assert.deepEqual(r.problems, []);
    } finally {
      await b.stop();
    }
    assert.ok(!b.output().includes(SECRET), 'a log line shows the rates URL secret');
  });

  it('is not ready while Redis does not answer (no bid logged, no budget read), and ready once it does', async () => {
    const port = await freePort();
    const b = await startBidder(dir, { REDIS_URL: `redis://127.0.0.1:${port}` });
    let late: TestRedis | null = null;
    try {
      const r = await readyWithin(b.url, (x) => x.code === 503 && x.problems.some((p) => p.includes('budgets')));
      assert.match(r.problems.join('\n'), new RegExp(`Redis at redis://127\\.0\\.0\\.1:${port}/? not usable`));
      late = await startTestRedis({ port });
      await readyWithin(b.url, (x) => x.code === 200);
    } finally {
      await b.stop();
      await late?.stop();
    }
  });

  it('is not ready with REDIS_MODE=cluster against a Redis that is not a cluster, and says so', async () => {
    const b = await startBidder(dir, { REDIS_URL: redis.url, REDIS_MODE: 'cluster' });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 503 && x.problems.some((p) => p.includes('not a Redis Cluster')));
      assert.match(r.problems.join('\n'), /REDIS_MODE=cluster/);
    } finally {
      await b.stop();
    }
  });

  it('is not ready with an unwritable LOG_SPILL_DIR, naming it', async () => {
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'x');
    const b = await startBidder(dir, { REDIS_URL: redis.url, LOG_SPILL_DIR: path.join(file, 'spill') });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 503);
      assert.match(r.problems.join('\n'), /LOG_SPILL_DIR .*a-file\/spill is not writable \(ENOTDIR\)/);
    } finally {
      await b.stop();
    }
  });

  it('is not ready with LOG_SPILL_DIR under /proc (where a recursive mkdir never returns), naming it; the journal there is given up with a warning', async () => {
    // The journal defaults to LOG_SPILL_DIR/journal: both directories are under /proc.
    const b = await startBidder(dir, { REDIS_URL: redis.url, LOG_SPILL_DIR: '/proc/bidder-readiness-test/spill' });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 503);
      assert.match(r.problems.join('\n'), /LOG_SPILL_DIR \/proc\/bidder-readiness-test\/spill is not writable \(ENOENT\)/);
      assert.match(r.warnings.join('\n'), /LOG_JOURNAL_DIR \/proc\/bidder-readiness-test\/spill\/journal/);
    } finally {
      await b.stop();
    }
    assert.match(b.output(), /spill directory \/proc\/bidder-readiness-test\/spill is not usable/);
  });

  it('with LOG_JOURNAL_DIR alone under /proc it serves, degraded, saying the journal is not in use', async () => {
    const b = await startBidder(dir, { REDIS_URL: redis.url, LOG_JOURNAL_DIR: '/proc/bidder-readiness-test/journal' });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 200 && x.status === 'degraded');
      assert.deepEqual(r.problems, []);
      assert.match(r.warnings.join('\n'), /LOG_JOURNAL_DIR \/proc\/bidder-readiness-test\/journal cannot be made \(ENOENT\): running without the bid log journal/);
    } finally {
      await b.stop();
    }
  });

  it("never shows REDIS_URL's password or the rates URL's secrets: not in /health/ready, not in a log line", async () => {
    const u = new URL(redis.url);
    const b = await startBidder(dir, { REDIS_URL: `redis://someone:${SECRET}@127.0.0.1:${u.port}` });
    try {
      const r = await readyWithin(b.url, (x) => x.code === 503);
      const text = JSON.stringify(r);
      assert.match(text, /Redis at redis:\/\/someone:\*\*\*@127\.0\.0\.1/);
      assert.match(text, /currency rates from http:\/\/127\.0\.0\.1:9\/…/);
      assert.ok(!text.includes(SECRET), text);
    } finally {
      await b.stop();
    }
    assert.match(b.output(), /WRONGPASS|NOAUTH|AUTH/, 'the Redis refusal is logged');
    assert.ok(!b.output().includes(SECRET), `a log line shows a secret:\n${b.output()}`);
  });
});
