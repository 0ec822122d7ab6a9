'use strict';
// `npm run redis-cluster -- <command>`: a local Redis Cluster on loopback for trying several bidder
// hosts on one machine (docs/operations.md, "Several hosts"). Nodes are Debian's redis-server
// (scripts/lib/redis-cluster.js), daemonized, their files and a state file in
// $BIDDER_RUN_DIR/redis-cluster; they keep running until `stop`.
//
//   start [--masters N] [--replicas N]   start one (3 masters with a replica each by default) and
//                                        print REDIS_CLUSTER_NODES=host:port,…; says so when one runs
//   stop                                 stop its nodes, by their PIDs, and remove its files
//   status                               print REDIS_CLUSTER_NODES when it runs (exit 0), else exit 3
const fs = require('node:fs');
const { readCommandLine, usageError } = require('./lib/cli');
const path = require('node:path');
const { startRedisCluster } = require('./lib/redis-cluster');
const { runDir, assertNode, alive } = require('./pm2');

function dir() {
  return path.join(runDir(), 'redis-cluster');
}

function stateFile() {
  return path.join(dir(), 'state.json');
}

function readState() {
  try {
    return JSON.parse(fs.readFileSync(stateFile(), 'utf8'));
  } catch {
    return null;
  }
}

/** A recorded node whose PID still runs redis-server. */
function running(node) {
  if (!alive(node.pid)) return false;
  try {
    return fs.readFileSync(`/proc/${node.pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return true; // no /proc: trust the PID we recorded
  }
}

const USAGE = 'usage: npm run redis-cluster -- start [--masters N] [--replicas N] | stop | status';

function fail(msg, code = 1) {
  process.stderr.write(`redis-cluster: ${msg}\n`);
  process.exit(code);
}

function count(flag, v, def, min) {
  if (v === undefined) return def;
  if (!/^\d+$/.test(v) || Number(v) < min) fail(`${flag} ${v}: expected a whole number >= ${min}`, 2);
  return Number(v);
}

/** The command and its options, or exit 2 with the reason and the usage. */
function commandLine(argv) {
  const { values, positionals } = readCommandLine({ name: 'redis-cluster', usage: USAGE, args: argv, options: { masters: { type: 'string' }, replicas: { type: 'string' } }, allowPositionals: true, maxPositionals: 1 });
  if (positionals.length !== 1) usageError('redis-cluster', USAGE, 'which command: start, stop or status?');
  return { command: positionals[0], masters: count('--masters', values.masters, 3, 3), replicas: count('--replicas', values.replicas, 1, 0) };
}

async function start({ masters, replicas }) {
  const state = readState();
  if (state && state.nodes.some(running)) {
    process.stdout.write(`redis-cluster: already running (${dir()}); stop it with: npm run redis-cluster -- stop\nREDIS_CLUSTER_NODES=${state.nodesEnv}\n`);
    return;
  }
  fs.rmSync(dir(), { recursive: true, force: true });
  const c = await startRedisCluster({ masters, replicas, dir: dir(), daemonize: true, persist: true, log: (m) => process.stderr.write(`redis-cluster: ${m}\n`) });
  fs.writeFileSync(stateFile(), `${JSON.stringify({ startedAt: new Date().toISOString(), nodesEnv: c.nodesEnv, nodes: c.nodes }, null, 2)}\n`);
  process.stdout.write(
    `redis-cluster: ${masters} masters, ${replicas} replica(s) each, files in ${dir()}; stop with: npm run redis-cluster -- stop\n` +
      `REDIS_CLUSTER_NODES=${c.nodesEnv}\n`,
  );
}

async function stop() {
  const state = readState();
  if (!state) {
    process.stdout.write('redis-cluster: none was started here\n');
    return;
  }
  for (const n of state.nodes) if (running(n)) process.kill(n.pid, 'SIGTERM');
  const until = Date.now() + 10_000;
  while (state.nodes.some(running) && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  for (const n of state.nodes) if (running(n)) process.kill(n.pid, 'SIGKILL');
  fs.rmSync(dir(), { recursive: true, force: true });
  process.stdout.write(`redis-cluster: stopped ${state.nodes.length} nodes\n`);
}

function status() {
  const state = readState();
  const up = state ? state.nodes.filter(running).length : 0;
  if (up === 0) {
    process.stdout.write('redis-cluster: not running\n');
    process.exitCode = 3;
    return;
  }
  process.stdout.write(`redis-cluster: ${up} of ${state.nodes.length} nodes running (${dir()})\nREDIS_CLUSTER_NODES=${state.nodesEnv}\n`);
}

assertNode();
const line = commandLine(process.argv.slice(2));
const run = { start: () => start(line), stop, status }[line.command];
if (!run) usageError('redis-cluster', USAGE, `unknown command '${line.command}'`);
Promise.resolve(run()).catch((e) => fail(e instanceof Error ? e.message : String(e)));
