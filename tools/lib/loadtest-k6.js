'use strict';
// Finds k6 for the load test: $K6, then `k6` on PATH, then the project's .tools/bin/k6; otherwise
// builds the pinned version once from the Go module proxy with `go install` into .tools/bin.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { onPath, findGo } = require('../../scripts/lib/apt');

const K6_VERSION = 'v1.8.1';
const ROOT = path.resolve(__dirname, '..', '..');
const TOOLS_BIN = path.join(ROOT, '.tools', 'bin');

function version(bin) {
  const r = spawnSync(bin, ['version'], { encoding: 'utf8', timeout: 20_000 });
  if (r.status !== 0 || !r.stdout) return null;
  const m = /k6 (v\d+\.\d+\.\d+)/.exec(r.stdout);
  return m ? m[1] : r.stdout.trim().split('\n')[0];
}


function major(v) {
  const m = /^v(\d+)/.exec(v || '');
  return m ? Number(m[1]) : 0;
}

/**
 * Returns {bin, version, built}. Logs what it does through `log`. Throws with a clear message
 * when k6 is nowhere and cannot be built.
 */
async function findK6({ log = console.error, allowBuild = true } = {}) {
  const candidates = [];
  if (process.env.K6) candidates.push(process.env.K6);
  const p = onPath('k6');
  if (p) candidates.push(p);
  candidates.push(path.join(TOOLS_BIN, 'k6'));
  for (const bin of candidates) {
    if (!fs.existsSync(bin)) continue;
    const v = version(bin);
    // The scripts use k6 1.x's summary and executors; older builds are skipped.
    if (v && major(v) >= 1) return { bin, version: v, built: false };
    if (v) log(`loadtest: ignoring ${bin} (${v}); k6 v1 or later is needed`);
  }
  const go = findGo();
  if (!allowBuild || !go) {
    throw new Error(
      'k6 was not found (looked at $K6, PATH and .tools/bin/k6) and Go is not installed to build it.\n' +
        `Install k6 (https://grafana.com/docs/k6/latest/set-up/install-k6/) or Go, then run again; ` +
        `with Go the load test builds k6 ${K6_VERSION} itself into .tools/bin.`,
    );
  }
  log(`loadtest: k6 not found: building k6 ${K6_VERSION} from the Go module proxy into .tools/bin (once; about 3 minutes)`);
  fs.mkdirSync(TOOLS_BIN, { recursive: true });
  const started = Date.now();
  await new Promise((resolve, reject) => {
    const child = spawn(go, ['install', `go.k6.io/k6@${K6_VERSION}`], {
      env: { ...process.env, GOBIN: TOOLS_BIN, CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`go install go.k6.io/k6@${K6_VERSION} failed (exit ${code})`))));
  });
  const bin = path.join(TOOLS_BIN, 'k6');
  const v = version(bin);
  if (!v) throw new Error(`built ${bin} but it does not run`);
  log(`loadtest: built k6 ${v} in ${Math.round((Date.now() - started) / 1000)} s`);
  return { bin, version: v, built: true };
}

module.exports = { findK6, K6_VERSION, TOOLS_BIN };
