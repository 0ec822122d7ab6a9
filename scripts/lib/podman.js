'use strict';
// Podman for the image script and the image test: finds it (installing Debian's podman and runc
// when missing and allowed, as scripts/lib/redis.js does for redis-server), and runs it with the
// project's containers.conf (.tools/podman/containers.conf; CONTAINERS_CONF overrides it).
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { onPath, canInstall, aptInstall } = require('./apt');

const ROOT = path.resolve(__dirname, '..', '..');
const CONF_DIR = path.join(ROOT, '.tools', 'podman');

// runc rather than crun, cgroupfs rather than systemd (no systemd runs on these machines), and no
// default ulimits (podman's default nproc/nofile limits above the sandbox's own fail the run).
const CONTAINERS_CONF = `[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
`;

/**
 * The podman binary, installed with runc (and debootstrap, for the stand-in base) when missing, the
 * user is root and PODMAN_AUTO_INSTALL is not 0: {bin}, or {bin: null, reason} when it cannot be had.
 */
function ensurePodman({ log = console.error, withDebootstrap = false } = {}) {
  const missing = [];
  if (!onPath('podman')) missing.push('podman');
  if (!onPath('runc')) missing.push('runc');
  if (withDebootstrap && !onPath('debootstrap')) missing.push('debootstrap');
  if (missing.length > 0) {
    if (process.env.PODMAN_AUTO_INSTALL === '0') return { bin: null, reason: `${missing.join(', ')} not installed (PODMAN_AUTO_INSTALL=0)` };
    if (!canInstall()) {
      return { bin: null, reason: `${missing.join(', ')} not installed, and installing needs apt-get as root (apt-get install ${missing.join(' ')})` };
    }
    try {
      aptInstall(missing, log);
    } catch (e) {
      return { bin: null, reason: `apt-get install ${missing.join(' ')} failed: ${e instanceof Error ? e.message : String(e)}` };
    }
  }
  const bin = onPath('podman');
  if (!bin) return { bin: null, reason: 'podman is still not on PATH after installing it' };
  return { bin, reason: null };
}

/** The environment podman runs with: the project's containers.conf unless CONTAINERS_CONF is set. */
function podmanEnv() {
  if (process.env.CONTAINERS_CONF) return process.env;
  const file = path.join(CONF_DIR, 'containers.conf');
  if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== CONTAINERS_CONF) {
    fs.mkdirSync(CONF_DIR, { recursive: true });
    fs.writeFileSync(file, CONTAINERS_CONF);
  }
  return { ...process.env, CONTAINERS_CONF: file };
}

/** Runs podman to completion, its output captured; throws with its stderr when it fails. */
function podman(args, { input, timeout = 120_000, allowFail = false } = {}) {
  const r = spawnSync('podman', args, { env: podmanEnv(), input, encoding: 'utf8', timeout, maxBuffer: 64 * 1024 * 1024 });
  if (!allowFail && (r.status !== 0 || r.error)) {
    throw new Error(`podman ${args.join(' ')} failed (${r.error ? r.error.message : `exit ${r.status}`}): ${(r.stderr || '').trim().slice(-2000)}`);
  }
  return r;
}

/** Runs podman with its output streamed to this process's stderr (long builds); resolves on exit 0. */
function podmanStream(args, { timeout = 1_800_000 } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { env: podmanEnv(), stdio: ['ignore', process.stderr, process.stderr] });
    const timer = setTimeout(() => child.kill('SIGTERM'), timeout);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`podman ${args.slice(0, 2).join(' ')} failed (${signal ?? `exit ${code}`})`));
    });
  });
}

function imageExists(ref) {
  return podman(['image', 'exists', ref], { allowFail: true }).status === 0;
}

module.exports = { ROOT, CONTAINERS_CONF, ensurePodman, podman, podmanStream, podmanEnv, imageExists };
