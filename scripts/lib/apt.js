'use strict';
// Finding a program, and installing Debian's package for it when it is missing (root only), as
// scripts/lib/redis.js does for redis-server: podman, runc, debootstrap and chromium for the tests.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

/** The first executable `name` on PATH (and the sbin directories, where root's tools live), or null. */
function onPath(name) {
  for (const dir of (process.env.PATH || '').split(path.delimiter).concat(['/usr/sbin', '/sbin'])) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

/** The Go toolchain: `go` on PATH, else the official tarball's place. */
function findGo() {
  return onPath('go') || (fs.existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null);
}

function isRoot() {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Can Debian packages be installed here: apt-get, as root. */
function canInstall() {
  return isRoot() && fs.existsSync('/usr/bin/apt-get');
}

/** Installs Debian packages (`apt-get update` first when the lists are missing or stale). Throws when it fails. */
function aptInstall(packages, log = console.error) {
  log(`installing Debian packages: ${packages.join(' ')}`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = () =>
    execFileSync('apt-get', ['install', '-y', '-qq', '-o', 'DPkg::Lock::Timeout=300', '--no-install-recommends', ...packages], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
      timeout: 900_000,
    });
  try {
    install();
  } catch {
    execFileSync('apt-get', ['update', '-qq'], { env, stdio: ['ignore', 'ignore', 'inherit'], timeout: 300_000 });
    install();
  }
}

module.exports = { onPath, findGo, isRoot, canInstall, aptInstall };
