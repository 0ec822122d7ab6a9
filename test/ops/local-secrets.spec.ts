// `npm start`'s local secrets and private Redis (issue 23, finding 12): secrets.json is 0600 whatever
// it was, a damaged one is refused with a message (replacing it would break every outstanding
// tracking URL), and the private redis-server takes no command without its generated password.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const secrets = require(path.join(ROOT, 'scripts', 'lib', 'secrets.js')) as {
  localSecrets(runDir: string, env: Record<string, string | undefined>, say?: (m: string) => void): Record<string, string>;
};

const mode = (f: string) => fs.statSync(f).mode & 0o777;

describe('npm start: secrets.json', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-secrets-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('makes the secrets once, in a file only the owner can read, and gives the same ones again', () => {
    const run = path.join(dir, 'fresh');
    const a = secrets.localSecrets(run, {});
    assert.ok(a.TRACKING_SECRET.length >= 32 && a.PII_HASH_SECRET.length >= 32 && a.TRACKING_SECRET !== a.PII_HASH_SECRET);
    assert.equal(mode(path.join(run, 'secrets.json')), 0o600);
    assert.deepEqual(secrets.localSecrets(run, {}), a);
  });

  it('makes a pre-existing secrets.json of mode 0644 0600, and says so', () => {
    const run = path.join(dir, 'open');
    fs.mkdirSync(run);
    const file = path.join(run, 'secrets.json');
    const kept = { TRACKING_SECRET: 'k'.repeat(48), PII_HASH_SECRET: 'q'.repeat(48) };
    fs.writeFileSync(file, JSON.stringify(kept), { mode: 0o644 });
    fs.chmodSync(file, 0o644);
    const said: string[] = [];
    const got = secrets.localSecrets(run, {}, (m) => said.push(m));
    assert.equal(got.TRACKING_SECRET, kept.TRACKING_SECRET);
    assert.equal(mode(file), 0o600);
    assert.match(said.join('\n'), /0644.*0600|mode/);
  });

  const damaged: Array<[string, string]> = [
    ['truncated', '{"TRACKING_SECRET": "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", "PII_HA'],
    ['empty', ''],
    ['not an object', '[1, 2]'],
    ['a secret too short', JSON.stringify({ TRACKING_SECRET: 'short', PII_HASH_SECRET: 'q'.repeat(48) })],
    ['a secret that is not a string', JSON.stringify({ TRACKING_SECRET: 12345, PII_HASH_SECRET: 'q'.repeat(48) })],
  ];
  for (const [why, text] of damaged) {
    it(`refuses a damaged secrets.json (${why}) with a message, and leaves it as it is`, () => {
      const run = path.join(dir, `damaged-${why.replace(/\W/g, '-')}`);
      fs.mkdirSync(run);
      const file = path.join(run, 'secrets.json');
      fs.writeFileSync(file, text, { mode: 0o600 });
      assert.throws(() => secrets.localSecrets(run, {}), (e: Error) => e.message.includes(file) && /damaged/.test(e.message) && /delete it/.test(e.message));
      assert.equal(fs.readFileSync(file, 'utf8'), text, 'not replaced');
    });
  }

  it('secrets set in the environment win, and a damaged file does not matter then', () => {
    const run = path.join(dir, 'env');
    fs.mkdirSync(run);
    fs.writeFileSync(path.join(run, 'secrets.json'), '{"TRACK', { mode: 0o600 });
    assert.deepEqual(secrets.localSecrets(run, { TRACKING_SECRET: 'e'.repeat(40), PII_HASH_SECRET: 'f'.repeat(40) }), {});
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
const exchangesLib = require(path.join(ROOT, 'scripts', 'lib', 'local-exchanges.js')) as {
  localExchanges(runDir: string, env: Record<string, string | undefined>, say?: (m: string) => void): Record<string, string>;
};

describe('npm start: the exchanges file of a single machine', () => {
  let dir = '';
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'local-exchanges-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('without EXCHANGES_FILE, production workers get a file that admits loopback callers only, and it says so', () => {
    const said: string[] = [];
    const got = exchangesLib.localExchanges(dir, {}, (m) => said.push(m));
    assert.equal(got.EXCHANGES_FILE, path.join(dir, 'exchanges.json'));
    const doc = JSON.parse(fs.readFileSync(got.EXCHANGES_FILE, 'utf8')) as unknown;
    assert.deepEqual(doc, { exchanges: [{ name: 'local', addresses: ['127.0.0.0/8', '::1'] }] });
    assert.match(said.join('\n'), /EXCHANGES_FILE not set: the bid endpoint admits callers on this machine only.*EXCHANGES_OPEN=1/);
    // The file is one the bidder accepts.
    assert.deepEqual(exchangesLib.localExchanges(dir, { NODE_ENV: 'production' }), got);
  });
  it('leaves the choice to the environment: EXCHANGES_FILE, EXCHANGES_OPEN=1, or workers that are not production', () => {
    for (const env of [{ EXCHANGES_FILE: '/etc/bidder/exchanges.json' }, { EXCHANGES_OPEN: '1' }, { EXCHANGES_OPEN: 'true' }, { NODE_ENV: 'development' }]) {
      assert.deepEqual(exchangesLib.localExchanges(path.join(dir, 'none'), env), {}, JSON.stringify(env));
    }
    assert.equal(fs.existsSync(path.join(dir, 'none')), false);
  });
});

// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisLib = require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as {
  startRedis(o: { dir?: string; password?: string; port?: number; persist?: boolean; maxmemory?: string }): Promise<{ url: string; port: number; pid: number; dir: string; stop(): Promise<void> }>;
  command(url: string, cmd: string): Promise<string | null>;
};

describe('npm start: the private redis-server', { timeout: 60_000 }, () => {
  it('takes no command without the generated password, which is in neither its command line nor a file others can read', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'private-redis-'));
    const password = 'r'.repeat(20) + 'Zq9';
    const r = await redisLib.startRedis({ dir: path.join(dir, 'redis'), password });
    try {
      const u = new URL(r.url);
      assert.equal(decodeURIComponent(u.password), password, 'the URL the workers get carries it');
      assert.match((await redisLib.command(`redis://127.0.0.1:${u.port}`, 'DBSIZE')) ?? '', /^-NOAUTH/, 'without it: refused');
      assert.equal(await redisLib.command(r.url, 'DBSIZE'), ':0', 'with it: answered');
      assert.ok(!fs.readFileSync(`/proc/${r.pid}/cmdline`, 'utf8').includes(password), 'not on the command line (ps shows it to every user)');
      assert.equal(mode(path.join(dir, 'redis')), 0o700, 'its directory (config, dump) is the owner’s only');
      for (const f of fs.readdirSync(path.join(dir, 'redis'))) {
        const m = mode(path.join(dir, 'redis', f));
        if (fs.readFileSync(path.join(dir, 'redis', f), 'utf8').includes(password)) assert.equal(m, 0o600, `${f} holds the password`);
      }
    } finally {
      await r.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('npm start: the private redis-server keeps money keys', { timeout: 60_000 }, () => {
  it('a kill -9 loses at most the last second (AOF, fsync every second), and memory is bounded without evicting', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'private-redis-aof-'));
    const password = 'p'.repeat(20) + 'Xy7';
    let r = await redisLib.startRedis({ dir: path.join(dir, 'redis'), password, persist: true, maxmemory: '64mb' });
    let c = new Redis(r.url, { maxRetriesPerRequest: 1 });
    try {
      assert.deepEqual(await c.config('GET', 'maxmemory-policy'), ['maxmemory-policy', 'noeviction']);
      assert.deepEqual(await c.config('GET', 'maxmemory'), ['maxmemory', String(64 * 1024 * 1024)]);
      await c.set('bidder:spend:{c1}:total', '4620');
      await c.set('bidder:spend:{c1}:bill:b1', '1', 'EX', 3600);
      await new Promise((res) => setTimeout(res, 1_500));
      c.disconnect();
      process.kill(r.pid, 'SIGKILL');
      await new Promise((res) => setTimeout(res, 200));
      r = await redisLib.startRedis({ dir: path.join(dir, 'redis'), password, port: r.port, persist: true, maxmemory: '64mb' });
      c = new Redis(r.url, { maxRetriesPerRequest: 1 });
      assert.equal(await c.get('bidder:spend:{c1}:total'), '4620', 'the spend survived the crash');
      assert.equal(await c.exists('bidder:spend:{c1}:bill:b1'), 1, 'and the billing marker');
    } finally {
      c.disconnect();
      await r.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
