#!/usr/bin/env node
'use strict';
// Builds the container image with podman, on machines without a Docker engine or registry access.
//
//   node scripts/image.js build     # the stand-in base when podman lacks it, then the image
//   node scripts/image.js base      # only the stand-in base (--force: rebuild it)
//   node scripts/image.js size      # the image's size
//
// On a machine with Docker and registry access none of this is needed: `docker build -t
// openrtb-bidder .` (README.md, Container image). Environment: IMAGE (default openrtb-bidder),
// CONTAINERS_CONF (default .tools/podman/containers.conf, written by scripts/lib/podman.js),
// PODMAN_AUTO_INSTALL=0 (never apt-get install podman), DEBIAN_MIRROR.
const path = require('node:path');
const { ROOT, ensurePodman, podman, podmanStream } = require('./lib/podman');
const { ensureBaseImage } = require('./lib/image-base');
const { readCommandLine, usageError } = require('./lib/cli');

const USAGE = `usage: node scripts/image.js [build|base [--force]|size]
  build    the stand-in base when podman lacks it, then the image (the default)
  base     only the stand-in base (--force: rebuild it)
  size     the image's size`;

const IMAGE = process.env.IMAGE || 'openrtb-bidder';
const log = (m) => console.error(m);

/** Builds the project's image from the Dockerfile, the base taken from local storage only. */
async function buildImage(tag = IMAGE) {
  const started = Date.now();
  // --format docker: the OCI format has no HEALTHCHECK, podman would drop it.
  // --network host: RUN steps (npm ci) reach the registry as the host does.
  await podmanStream(['build', '--format', 'docker', '--pull=never', '--network', 'host', '--layers', '-t', tag, '-f', path.join(ROOT, 'Dockerfile'), ROOT]);
  return Math.round((Date.now() - started) / 1000);
}

/** The image's size in bytes, as podman counts it (all layers, base included). */
function imageSize(tag = IMAGE) {
  const r = podman(['image', 'inspect', '--format', '{{.Size}}', tag]);
  return Number(r.stdout.trim());
}

async function main() {
  const { values, positionals } = readCommandLine({ name: 'image', usage: USAGE, options: { force: { type: 'boolean' } }, allowPositionals: true, maxPositionals: 1 });
  const cmd = positionals[0] ?? 'build';
  if (!['build', 'base', 'size'].includes(cmd)) usageError('image', USAGE, `unknown command '${cmd}'`);
  if (values.force && cmd !== 'base') usageError('image', USAGE, '--force goes with base');
  const { bin, reason } = ensurePodman({ log, withDebootstrap: cmd !== 'size' });
  if (!bin) throw new Error(`podman is not available: ${reason}`);
  if (cmd === 'size') {
    console.log(`${IMAGE}: ${(imageSize() / 1e6).toFixed(1)} MB`);
    return;
  }
  const base = await ensureBaseImage({ log, force: cmd === 'base' && values.force === true });
  log(base.built ? `image: built the stand-in base ${base.ref} in ${base.seconds} s` : `image: using ${base.ref} from podman's storage`);
  if (cmd === 'base') return;
  const seconds = await buildImage();
  console.log(`${IMAGE}: built in ${seconds} s, ${(imageSize() / 1e6).toFixed(1)} MB`);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`image: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  });
}

module.exports = { buildImage, imageSize, IMAGE };
