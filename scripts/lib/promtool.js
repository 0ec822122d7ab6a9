'use strict';
// Finds promtool (Prometheus's rule checker) for the monitoring tests: $PROMTOOL, then `promtool` on
// PATH, then the project's .tools/bin/promtool; otherwise builds the pinned version once from the Go
// module proxy with `go install` into .tools/bin (as tools/lib/loadtest-k6.js does for k6).
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { onPath, findGo } = require('./apt');

// Prometheus 3.x is tagged v0.3xx.y as a Go module; v0.316.0 is the first recent one whose go.mod has
// no replace directive, which `go install pkg@version` refuses (v0.315.1 and v0.301-v0.314 have one).
const PROMTOOL_MODULE = 'github.com/prometheus/prometheus';
const PROMTOOL_VERSION = 'v0.316.0';
const ROOT = path.resolve(__dirname, '..', '..');
const TOOLS_BIN = path.join(ROOT, '.tools', 'bin');


function runs(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000 });
  return r.status === 0;
}

/** The module version a Go binary was built from (`go version -m`), or null. */
function builtVersion(go, bin) {
  if (!go) return null;
  const r = spawnSync(go, ['version', '-m', bin], { encoding: 'utf8', timeout: 20_000 });
  const m = new RegExp(`\\bmod\\s+${PROMTOOL_MODULE.replace(/\./g, '\\.')}\\s+(v\\S+)`).exec(r.stdout || '');
  return m ? m[1] : null;
}

/**
 * Returns {bin, built} or {bin: null, reason} when promtool is nowhere and Go is missing to build it.
 * Rejects when a build was tried and failed.
 */
async function findPromtool({ log = console.error } = {}) {
  for (const bin of [process.env.PROMTOOL, onPath('promtool')]) {
    if (bin && fs.existsSync(bin) && runs(bin)) return { bin, built: false };
  }
  const go = findGo();
  const cached = path.join(TOOLS_BIN, 'promtool');
  // The cached build is used while it is the pinned version (or Go is gone and cannot say).
  if (fs.existsSync(cached) && runs(cached) && (!go || builtVersion(go, cached) === PROMTOOL_VERSION)) return { bin: cached, built: false };
  if (process.env.PROMTOOL_AUTO_BUILD === '0') {
    return { bin: null, reason: 'promtool was not found ($PROMTOOL, PATH, .tools/bin/promtool) and PROMTOOL_AUTO_BUILD=0 forbids building it' };
  }
  if (!go) {
    return {
      bin: null,
      reason:
        'promtool was not found ($PROMTOOL, PATH, .tools/bin/promtool) and Go is not installed to build it: ' +
        `install Go (https://go.dev/dl/) and the test builds ${PROMTOOL_MODULE}/cmd/promtool@${PROMTOOL_VERSION} into .tools/bin, or set PROMTOOL`,
    };
  }
  log(`promtool not found: building ${PROMTOOL_MODULE}/cmd/promtool@${PROMTOOL_VERSION} from the Go module proxy into .tools/bin (once; several minutes)`);
  fs.mkdirSync(TOOLS_BIN, { recursive: true });
  const started = Date.now();
  await new Promise((resolve, reject) => {
    const child = spawn(go, ['install', `${PROMTOOL_MODULE}/cmd/promtool@${PROMTOOL_VERSION}`], {
      env: { ...process.env, GOBIN: TOOLS_BIN, CGO_ENABLED: '0' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', reject);
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`go install ${PROMTOOL_MODULE}/cmd/promtool@${PROMTOOL_VERSION} failed (exit ${code})`))));
  });
  if (!runs(cached)) throw new Error(`built ${cached} but it does not run`);
  log(`promtool: built in ${Math.round((Date.now() - started) / 1000)} s`);
  return { bin: cached, built: true };
}

module.exports = { findPromtool, PROMTOOL_VERSION };
