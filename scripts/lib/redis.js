'use strict';
// Finds or starts a Redis for development, tests and load tests.
// Order: a Redis already answering at the given URL; else a local `redis-server` on loopback
// (installing Debian's `redis-server` package when it is missing, we are root and installs are
// allowed); else a clear error. Used by `npm start`, the test setup and `npm run loadtest`.
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const path = require('node:path');
const { default: Redis, ReplyError } = require('ioredis');

/**
 * Runs `fn(client)` on a fresh ioredis connection to `url` that neither retries nor queues, bounded by
 * `timeoutMs` (connecting and every command); resolves with its result, or with `onError(error)`.
 * The connection is closed after.
 */
async function withClient(url, timeoutMs, fn, onError) {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    enableReadyCheck: false,
    // No CLIENT SETINFO before the command: one command, one reply (a test stand-in answers every write with one line).
    disableClientInfo: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await fn(client);
  } catch (e) {
    return onError(e);
  } finally {
    client.disconnect();
  }
}

/**
 * Resolves true when a Redis answers PING within the timeout, or refuses it for want of a password
 * (NOAUTH: one is there, but not usable without it: `command(url, 'PING')`); false otherwise,
 * whatever the other end does (refuses, closes, says nothing).
 */
function ping(url, timeoutMs = 500) {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return withClient(
    u.toString(),
    timeoutMs,
    async (c) => (await c.ping()) === 'PONG',
    (e) => e instanceof ReplyError && e.message.startsWith('NOAUTH'),
  );
}

function findRedisServer() {
  for (const p of ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server']) {
    if (fs.existsSync(p)) return p;
  }
  const r = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' });
  const found = r.stdout.trim();
  return found || null;
}

/** Can this process install packages: root, or password-less sudo? Returns the command prefix or null. */
function installPrefix() {
  if (typeof process.getuid === 'function' && process.getuid() === 0) return [];
  const r = spawnSync('sudo', ['-n', 'true'], { stdio: 'ignore' });
  return r.status === 0 ? ['sudo', '-n'] : null;
}

/** Returns the path of redis-server, installing Debian's package when allowed. */
function ensureRedisBinary({ log = console.error } = {}) {
  let bin = findRedisServer();
  if (bin) return bin;
  const allowed = process.env.REDIS_AUTO_INSTALL !== '0';
  const prefix = allowed && fs.existsSync('/usr/bin/apt-get') ? installPrefix() : null;
  if (prefix) {
    log('redis-server not found: installing Debian package redis-server (set REDIS_AUTO_INSTALL=0 to forbid)');
    const run = (args) => {
      const [cmd, ...rest] = [...prefix, 'env', 'DEBIAN_FRONTEND=noninteractive', ...args];
      execFileSync(cmd, rest, { stdio: ['ignore', 'ignore', 'inherit'] });
    };
    try {
      run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'redis-server']);
    } catch {
      // A fresh machine often has no package lists yet.
      run(['apt-get', 'update', '-qq']);
      run(['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'redis-server']);
    }
    // Debian's package may start a system service on 6379; we never rely on it, we start our own.
    bin = findRedisServer();
  }
  if (!bin) {
    throw new Error(
      'redis-server is not installed and could not be installed automatically ' +
        '(that needs apt-get and root or password-less sudo, and REDIS_AUTO_INSTALL not 0). ' +
        'Install it (Debian/Ubuntu: apt-get install redis-server) or set REDIS_URL to a running Redis.',
    );
  }
  return bin;
}

/** Asks the kernel for a free TCP port on loopback. */
/** The kernel's range of local ports for outgoing connections (Linux's ip_local_port_range; its default elsewhere). */
function ephemeralRange() {
  try {
    const [lo, hi] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && Number.isInteger(hi) && lo <= hi) return [lo, hi];
  } catch {
    // not Linux
  }
  return [32768, 60999];
}

/** Listens on 127.0.0.1:`port` and closes: resolves the port it had (0: any), or null when it was taken. */
function tryPort(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(null));
    srv.listen(port, '127.0.0.1', () => {
      const got = srv.address().port;
      srv.close(() => resolve(got));
    });
  });
}

/**
 * A port free on 127.0.0.1 now, for a server to bind in a moment: drawn below the kernel's range for
 * outgoing connections' local ports (about 12,000 ports under it, from 1024). A port from listen(0)
 * is in that range, and once closed the kernel may give it to the next outgoing connection (a Redis
 * client, an HTTP request) before the server binds it: two fresh-clone runs of the tests each lost
 * such a race.
 */
async function freePort() {
  const [lo, hi] = ephemeralRange();
  const below = [Math.max(1024, lo - 12_000), lo - 1];
  const [from, to] = below[1] - below[0] >= 1000 ? below : [hi + 1, 65535];
  for (let i = 0; to - from >= 1000 && i < 50; i++) {
    const got = await tryPort(from + Math.floor(Math.random() * (to - from + 1)));
    if (got !== null) return got;
  }
  // No range outside the kernel's: any port it gives.
  const any = await tryPort(0);
  if (any === null) throw new Error('freePort: no port free on 127.0.0.1');
  return any;
}

/** Servers started as children of this process: stopped when it exits, even through process.exit(). */
const children = new Set();
function stopChildrenOnExit() {
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }
}

async function waitFor(fn, timeoutMs, what) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (await fn()) return;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts a private redis-server on 127.0.0.1:<port> with its files in `dir`.
 * `daemonize` detaches it (npm start); otherwise it is a child of this process (tests).
 * `persist` (npm start): it keeps spend and billing markers through a crash, an append-only file
 * fsynced every second, and never evicts a key: at most `maxmemory` (default 1gb), past which
 * writes are refused (noeviction; the workers then spill the bid log to disk, and bills are
 * answered 503 for the exchange to retry). Without it (tests, load tests): no files at all.
 * Returns { url, port, pid, stop() }.
 */
async function startRedis({ port, dir, daemonize = false, log = console.error, password = null, persist = false, maxmemory = '1gb' } = {}) {
  const bin = ensureRedisBinary({ log });
  port = port || (await freePort());
  // A directory made here is removed again by stop() (and when the start fails).
  const ownDir = !dir;
  dir = dir || fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'bidder-redis-'));
  const removeDir = () => {
    if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
  };
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Its dump holds the bid log and spend counters: the owner's only.
  fs.chmodSync(dir, 0o700);
  const pidfile = path.join(dir, `redis-${port}.pid`);
  // A password goes in a config file only the owner reads: on the command line `ps` shows it to every user.
  const conf = path.join(dir, `redis-${port}.conf`);
  // Its persistence too: a server started again by hand from this file keeps spend and markers.
  const persistence = persist ? `appendonly yes\nappendfsync everysec\nmaxmemory ${maxmemory}\nmaxmemory-policy noeviction\n` : '';
  if (password) fs.writeFileSync(conf, `requirepass "${password}"\n${persistence}`, { mode: 0o600 });
  const args = [
    ...(password ? [conf] : []),
    '--bind', '127.0.0.1', '--port', String(port), '--dir', dir,
    '--save', '',
    ...(persist ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory', String(maxmemory), '--maxmemory-policy', 'noeviction'] : ['--appendonly', 'no']),
    '--protected-mode', 'yes',
    '--pidfile', pidfile, '--logfile', path.join(dir, `redis-${port}.log`),
    '--daemonize', daemonize ? 'yes' : 'no',
  ];
  const logfile = path.join(dir, `redis-${port}.log`);
  if (await ping(`redis://127.0.0.1:${port}`, 300)) {
    removeDir();
    throw new Error(`port ${port} is already served by a Redis: not starting another one there`);
  }
  const tail = () => {
    try {
      return fs.readFileSync(logfile, 'utf8').trim().split('\n').slice(-5).join('\n');
    } catch {
      return '(no log)';
    }
  };
  let child = null;
  let exited = null;
  if (daemonize) {
    execFileSync(bin, args, { stdio: 'inherit' });
  } else {
    child = spawn(bin, args, { stdio: 'ignore' });
    child.once('exit', (code, signal) => (exited = signal || `exit code ${code}`));
    child.once('error', (e) => (exited = e.message));
  }
  const url = password ? `redis://:${encodeURIComponent(password)}@127.0.0.1:${port}` : `redis://127.0.0.1:${port}`;
  try {
    // Fails fast when the server exits (port taken, bad directory) instead of waiting it out.
    await waitFor(
      async () => {
        if (exited) throw new Error(`redis-server on port ${port} exited (${exited})`);
        return ping(url);
      },
      10_000,
      `redis-server on port ${port}`,
    );
  } catch (e) {
    if (child && !exited) child.kill('SIGKILL');
    const log = tail();
    removeDir();
    throw new Error(`${e.message}; its log (${logfile}):\n${log}`);
  }
  const pid = child ? child.pid : Number(fs.readFileSync(pidfile, 'utf8').trim());
  if (child) {
    if (children.size === 0) process.on('exit', stopChildrenOnExit);
    children.add(pid);
  }
  return {
    url,
    port,
    pid,
    dir,
    /** Stops this server (by its own PID), waits until the port is closed, removes a directory it made. */
    async stop() {
      children.delete(pid);
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        removeDir();
        return;
      }
      await waitFor(async () => !(await ping(url, 200)), 10_000, `redis-server ${port} to stop`).catch(() => {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      });
      removeDir();
    },
  };
}

/** A Redis URL as it may be printed: the password replaced by ***. */
function maskedUrl(url) {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString().replace(/\/$/, '');
  } catch {
    return String(url).replace(/\/\/[^/@]*@/, '//***@');
  }
}

/**
 * Sends one command (`SAVE`, `DBSIZE`: words separated by spaces), after AUTH when the URL has a
 * password; resolves with its reply written as Redis's first line of it (`+OK`, `:0`,
 * `-NOAUTH …`), or null when Redis does not answer in time.
 */
function command(url, cmd, timeoutMs = 30_000) {
  const [name, ...args] = cmd.split(' ').filter((w) => w !== '');
  return withClient(
    url,
    timeoutMs,
    async (c) => {
      const reply = await c.call(name, ...args);
      return typeof reply === 'number' ? `:${reply}` : `+${String(reply)}`;
    },
    (e) => (e instanceof ReplyError ? `-${e.message}` : null),
  );
}

/**
 * The process id of the Redis at `url` (INFO server's process_id, after AUTH when the URL has a
 * password), or null when it does not answer or refuses.
 */
function serverPid(url, timeoutMs = 5_000) {
  return withClient(
    url,
    timeoutMs,
    async (c) => {
      const pid = /^process_id:(\d+)/m.exec(await c.info('server'));
      return pid ? Number(pid[1]) : null;
    },
    () => null,
  );
}

module.exports = { ping, ensureRedisBinary, startRedis, freePort, waitFor, command, serverPid, maskedUrl };
