'use strict';
// A real Redis Cluster on loopback for tests and local runs of several bidder hosts: Debian's
// `redis-server` started once per node with `--cluster-enabled yes` (each in its own directory,
// on free ports), joined by `redis-cli --cluster create`, then waited on until every node reports
// `cluster_state:ok`, all 16384 slots are covered and every replica is in sync with its master.
// Every node is stopped by its own PID. See docs/operations.md ("several hosts").
const { spawn, execFile, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Redis = require('ioredis');
const { ensureRedisBinary, freePort, waitFor } = require('./redis.js');

const HOST = '127.0.0.1';
const SLOTS = 16384;
/** redis-cli refuses to create a cluster of fewer masters. */
const MIN_MASTERS = 3;
const MAX_NODES = 30;

/** Nodes started as children of this process: stopped when it exits, even through process.exit(). */
const children = new Set();
let exitHook = false;
function stopChildrenOnExit() {
  for (const pid of children) {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* already gone */
    }
  }
}

/** redis-cli from the same package as redis-server (Debian: redis-tools, a dependency of redis-server). */
function findRedisCli(serverBin) {
  const beside = path.join(path.dirname(serverBin), 'redis-cli');
  if (fs.existsSync(beside)) return beside;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) {
    if (dir && fs.existsSync(path.join(dir, 'redis-cli'))) return path.join(dir, 'redis-cli');
  }
  throw new Error('redis-cli is not installed (Debian/Ubuntu: apt-get install redis-tools); it creates the cluster');
}

/** `--cluster-port` (a bus port apart from port + 10000) exists from Redis 7. */
function checkVersion(bin) {
  const out = execFileSync(bin, ['--version'], { encoding: 'utf8' });
  const m = /v=(\d+)\.(\d+)/.exec(out);
  if (!m || Number(m[1]) < 7) throw new Error(`the local Redis Cluster needs redis-server 7 or newer; ${bin} says: ${out.trim()}`);
}

/** Free loopback ports, all different (the kernel may hand out a port again once it is closed). */
async function distinctFreePorts(n) {
  const ports = new Set();
  while (ports.size < n) ports.add(await freePort());
  return [...ports];
}

/** One command on a short-lived connection; rejects when the node does not answer within timeoutMs. */
async function command(port, args, timeoutMs = 2_000) {
  const r = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await r.call(...args);
  } finally {
    r.disconnect();
  }
}

/** `field:value` lines of INFO / CLUSTER INFO as an object. */
function fields(text) {
  const out = {};
  for (const line of String(text).split(/\r?\n/)) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

/**
 * CLUSTER NODES as seen by one node: [{ id, port, role: 'master' | 'replica', masterId, failed, slots }].
 * A line: `<id> <ip:port@cport> <flags> <master> <ping> <pong> <epoch> <link> <slot> <slot> …`.
 */
function parseClusterNodes(text) {
  const nodes = [];
  for (const line of String(text).trim().split('\n')) {
    const [id, addr, flags, master, , , , link, ...slots] = line.trim().split(' ');
    const port = Number(/:(\d+)/.exec(addr)?.[1]);
    const f = flags.split(',');
    nodes.push({
      id,
      port,
      role: f.includes('master') ? 'master' : 'replica',
      masterId: master === '-' ? null : master,
      failed: f.includes('fail') || f.includes('fail?') || link !== 'connected',
      slots: slots.length,
    });
  }
  return nodes;
}

function readPidfile(dir) {
  try {
    return Number(fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8').trim()) || 0;
  } catch {
    return 0;
  }
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * Starts a Redis Cluster of `masters` masters with `replicas` replicas each on 127.0.0.1.
 * `daemonize` detaches the nodes (they outlive this process; stop them with stop() or by their PIDs);
 * otherwise they are children of this process and stopped when it exits.
 * `nodeTimeoutMs` is cluster-node-timeout: how long a master may be unreachable before its replica
 * takes over (after kill()).
 * `persist` (`npm run redis-cluster`): every node keeps an append-only file (fsync every second) and
 * never evicts, as a production bidder requires of the Redis of its spend and billing markers
 * (src/health/redis-durability.ts); tests and load tests run without files.
 * Returns { nodes: [{ host, port, pid, role }], nodesEnv, dir, stop(), failover(masterPort), kill(port),
 * waitUntilOk(), refresh() }.
 */
async function startRedisCluster({ masters = 3, replicas = 1, dir, daemonize = false, nodeTimeoutMs = 2_000, timeoutMs = 30_000, log = console.error, persist = false } = {}) {
  if (!Number.isInteger(masters) || masters < MIN_MASTERS) throw new Error(`masters: expected a whole number >= ${MIN_MASTERS}, got ${masters}`);
  if (!Number.isInteger(replicas) || replicas < 0) throw new Error(`replicas: expected a whole number >= 0, got ${replicas}`);
  const count = masters * (1 + replicas);
  if (count > MAX_NODES) throw new Error(`${count} nodes: at most ${MAX_NODES}`);
  if (!Number.isInteger(nodeTimeoutMs) || nodeTimeoutMs < 100) throw new Error(`nodeTimeoutMs: expected a whole number >= 100, got ${nodeTimeoutMs}`);

  const bin = ensureRedisBinary({ log });
  checkVersion(bin);
  const cli = findRedisCli(bin);
  const ownDir = !dir;
  dir = dir || fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-redis-cluster-'));
  fs.mkdirSync(dir, { recursive: true });
  const [ports, busPorts] = await distinctFreePorts(2 * count).then((all) => [all.slice(0, count), all.slice(count)]);

  /**
   * What callers see ({ host, port, pid, role }, roles kept current by refresh()) and what only this
   * module needs.
   * @type {{ pub: { host: string, port: number, pid: number, role: string }, port: number, pid: number, dir: string, args: string[], child: import('node:child_process').ChildProcess | null, exited: string | null }[]}
   */
  const nodes = [];
  let stopped = false;

  /** Starts a node's redis-server as a child of this process (stopped when it exits). */
  function spawnChild(node) {
    node.exited = null;
    node.child = spawn(bin, node.args, { stdio: 'ignore' });
    node.pid = node.pub.pid = node.child.pid;
    node.child.once('exit', (code, signal) => {
      node.exited = signal || `exit code ${code}`;
      children.delete(node.pid);
    });
    node.child.once('error', (e) => (node.exited = e.message));
    if (!exitHook) process.on('exit', stopChildrenOnExit);
    exitHook = true;
    children.add(node.pid);
  }

  const stopNode = async (node, signal) => {
    children.delete(node.pid);
    if (node.child && node.exited === null) {
      const gone = new Promise((resolve) => node.child.once('exit', resolve));
      try {
        node.child.kill(signal);
      } catch {
        /* already gone */
      }
      const t = setTimeout(() => node.child.kill('SIGKILL'), 10_000);
      await gone;
      clearTimeout(t);
    } else if (!node.child) {
      // A daemonized node that failed before its PID was read: its pidfile may still say it.
      if (node.pid === 0) node.pid = readPidfile(node.dir);
      // Never kill(0, …): that would signal this whole process group.
      if (!(node.pid > 0) || !pidAlive(node.pid)) return;
      try {
        process.kill(node.pid, signal);
      } catch {
        /* already gone */
      }
      await waitFor(async () => !pidAlive(node.pid), 10_000, `redis-server ${node.port} (pid ${node.pid}) to stop`).catch(() => {
        try {
          process.kill(node.pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      });
    }
  };

  const stopAll = async () => {
    if (stopped) return;
    stopped = true;
    await Promise.all(nodes.map((n) => stopNode(n, 'SIGTERM')));
    if (ownDir) fs.rmSync(dir, { recursive: true, force: true });
  };

  const logTail = (node) => {
    try {
      return fs.readFileSync(path.join(node.dir, 'redis.log'), 'utf8').trim().split('\n').slice(-5).join('\n');
    } catch {
      return '(no log)';
    }
  };

  try {
    for (let i = 0; i < count; i++) {
      const port = ports[i];
      const nodeDir = path.join(dir, `node-${port}`);
      fs.mkdirSync(nodeDir, { recursive: true });
      const pidfile = path.join(nodeDir, 'redis.pid');
      const args = [
        '--bind', HOST, '--port', String(port), '--dir', nodeDir,
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf',
        '--cluster-port', String(busPorts[i]), '--cluster-node-timeout', String(nodeTimeoutMs),
        '--save', '',
        ...(persist ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction'] : ['--appendonly', 'no']),
        '--protected-mode', 'yes',
        // A replica's first sync would otherwise wait 5 s for other replicas to share it.
        '--repl-diskless-sync-delay', '0',
        '--pidfile', pidfile, '--logfile', path.join(nodeDir, 'redis.log'),
        '--daemonize', daemonize ? 'yes' : 'no',
      ];
      const node = { pub: { host: HOST, port, pid: 0, role: 'unknown' }, port, pid: 0, dir: nodeDir, args, child: null, exited: null };
      nodes.push(node);
      if (daemonize) execFileSync(bin, args, { stdio: 'inherit' });
      else spawnChild(node);
    }
    for (const node of nodes) {
      await waitFor(
        async () => {
          if (node.exited) throw new Error(`redis-server on port ${node.port} exited (${node.exited})`);
          return command(node.port, ['PING'], 500).then((r) => r === 'PONG', () => false);
        },
        10_000,
        `redis-server on port ${node.port}`,
      ).catch((e) => {
        throw new Error(`${e.message}; its log:\n${logTail(node)}`);
      });
      if (daemonize) node.pid = node.pub.pid = readPidfile(node.dir);
    }

    await new Promise((resolve, reject) => {
      const cliArgs = ['--cluster', 'create', ...nodes.map((n) => `${HOST}:${n.port}`), '--cluster-replicas', String(replicas), '--cluster-yes'];
      execFile(cli, cliArgs, { timeout: timeoutMs, encoding: 'utf8' }, (err, stdout, stderr) => {
        if (err) reject(new Error(`redis-cli --cluster create failed: ${err.message}\n${stdout}\n${stderr}`.trim()));
        else resolve();
      });
    });
  } catch (e) {
    await stopAll();
    throw e;
  }

  /** Reads the roles from a live node's view and stores them in `nodes`. */
  const refresh = async () => {
    for (const node of nodes) {
      if (!(await isUp(node))) continue;
      const view = parseClusterNodes(await command(node.port, ['CLUSTER', 'NODES']));
      for (const n of nodes) {
        const seen = view.find((v) => v.port === n.port);
        n.pub.role = !(await isUp(n)) ? 'down' : seen ? seen.role : 'unknown';
      }
      return view;
    }
    throw new Error('no node of the cluster answers');
  };

  const isUp = async (node) => node.exited === null && pidAlive(node.pid) && (await command(node.port, ['PING'], 500).then((r) => r === 'PONG', () => false));

  /**
   * Until every live node says cluster_state:ok with all slots served, sees the other live nodes
   * connected and with the same roles as the others see them, and every live replica's link to its
   * master is up (in sync).
   */
  const waitUntilOk = (ms = timeoutMs) => waitFor(() => clusterOk().catch(() => false), ms, 'the Redis Cluster to be ok');

  const clusterOk = async () => {
    const live = [];
    for (const n of nodes) if (await isUp(n)) live.push(n);
    let reference = null;
    for (const n of live) {
      const info = fields(await command(n.port, ['CLUSTER', 'INFO']));
      if (info.cluster_state !== 'ok' || Number(info.cluster_slots_ok) !== SLOTS) return false;
      const view = parseClusterNodes(await command(n.port, ['CLUSTER', 'NODES']));
      const roles = view
        .filter((v) => live.some((l) => l.port === v.port))
        .map((v) => `${v.port}:${v.role}:${v.failed}`)
        .sort()
        .join(',');
      if (reference === null) reference = roles;
      else if (roles !== reference) return false;
      if (view.filter((v) => live.some((l) => l.port === v.port)).some((v) => v.failed)) return false;
      const role = fields(await command(n.port, ['INFO', 'replication']));
      if (role.role === 'slave' && role.master_link_status !== 'up') return false;
    }
    await refresh();
    return true;
  };

  try {
    await waitUntilOk();
    const mastersUp = nodes.filter((n) => n.pub.role === 'master').length;
    if (mastersUp !== masters) throw new Error(`expected ${masters} masters, the cluster has ${mastersUp}`);
  } catch (e) {
    await stopAll();
    throw e;
  }

  return {
    nodes: nodes.map((n) => n.pub),
    nodesEnv: nodes.map((n) => `${n.pub.host}:${n.port}`).join(','),
    dir,
    refresh,
    waitUntilOk,
    /**
     * Manual failover of the master on `masterPort`: CLUSTER FAILOVER on one of its replicas (which
     * first catches up with the master, so no acknowledged write is lost), then waits until the two
     * swapped roles and the cluster is ok. Returns the new master's port.
     */
    async failover(masterPort) {
      const view = await refresh();
      const master = view.find((v) => v.port === masterPort);
      if (!master || master.role !== 'master') throw new Error(`${masterPort} is not a master of this cluster`);
      const replica = view.find((v) => v.masterId === master.id && !v.failed);
      if (!replica) throw new Error(`master ${masterPort} has no live replica`);
      const reply = await command(replica.port, ['CLUSTER', 'FAILOVER']);
      if (reply !== 'OK') throw new Error(`CLUSTER FAILOVER on ${replica.port}: ${reply}`);
      await waitFor(
        async () => {
          const [a, b] = await Promise.all([command(replica.port, ['ROLE']), command(masterPort, ['ROLE'])]).catch(() => [[], []]);
          return a[0] === 'master' && b[0] === 'slave';
        },
        timeoutMs,
        `replica ${replica.port} to take over from ${masterPort}`,
      );
      await waitUntilOk();
      return replica.port;
    },
    /**
     * SIGKILLs the node on `port` (a crash: no save, no goodbye) and waits until its process is
     * gone. Its replica takes over after cluster-node-timeout; waitUntilOk() waits for that.
     */
    async kill(port) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no node on port ${port}`);
      await stopNode(node, 'SIGKILL');
      node.pub.role = 'down';
    },
    /**
     * Starts a node stopped by kill() again, on its port and directory: its nodes.conf makes it rejoin
     * the cluster, as a replica of whoever took its slots meanwhile. Waits until it answers; then
     * waitUntilOk() waits for it to be in sync. Not for a daemonized cluster.
     */
    async restart(port) {
      const node = nodes.find((n) => n.port === port);
      if (!node) throw new Error(`no node on port ${port}`);
      if (daemonize) throw new Error('restart() needs a cluster of child processes (daemonize: false)');
      if (node.exited === null && pidAlive(node.pid)) throw new Error(`node ${port} still runs (pid ${node.pid})`);
      spawnChild(node);
      await waitFor(
        async () => {
          if (node.exited) throw new Error(`redis-server on port ${node.port} exited (${node.exited})`);
          return command(node.port, ['PING'], 500).then((r) => r === 'PONG', () => false);
        },
        10_000,
        `redis-server on port ${node.port} to restart`,
      );
    },
    /** Stops every node (SIGTERM by PID, SIGKILL after 10 s) and removes a directory it made. */
    stop: stopAll,
  };
}

module.exports = { startRedisCluster, parseClusterNodes };
