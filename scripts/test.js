'use strict';
// `npm test [-- <part of a path>…]`: type-checks and compiles src + test + tools, builds dist (e2e
// tests start dist/main.js), lints, then runs every compiled *.spec.js / *.test.js of the product
// (test/) with Node's test runner on the project's Node 24, several files at a time (each test file
// starts its own Redis and servers on free ports), and prints each file's wall time at the end.
// `npm run test:unit [-- <part of a path>…]` (`--unit`): only the *.unit.spec.ts files of test/, the
// tests that start no Redis, no bidder and no other process; compiles src + test only, no dist, no lint.
// `npm run test:tools [-- <part of a path>…]` (`--tools`): the measuring tools' own tests (tools/test/:
// the load test, profile, ab, memory and bench harnesses); compiles and builds dist, no lint.
const { execFileSync, spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const USAGE = `usage: npm test [-- [--concurrency N] <part of a path>…]
       npm run test:unit [-- <part of a path>…]
       npm run test:tools [-- [--concurrency N] <part of a path>…]
  --concurrency N  test files run at once (default: TEST_CONCURRENCY, else 3 for npm test, 1 for the tools' tests)
  -h, --help       this text
SKIP_LINT=1 skips the lint of npm test.`;

const root = path.resolve(__dirname, '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(`npm test needs Node 24 (this is ${process.version}); run it through npm so node_modules/.bin/node is used.`);
  process.exit(1);
}
let args;
try {
  args = parseArgs({
    options: { unit: { type: 'boolean' }, tools: { type: 'boolean' }, concurrency: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
} catch (e) {
  console.error(`test: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (args.values.help) {
  console.log(USAGE);
  process.exit(0);
}
const unit = args.values.unit === true;
const tools = args.values.tools === true;
if (unit && tools) {
  console.error(`test: --unit and --tools are two different sets\n${USAGE}`);
  process.exit(2);
}
const concurrencyText = args.values.concurrency ?? process.env.TEST_CONCURRENCY ?? (unit ? String(Math.max(1, os.availableParallelism())) : tools ? '1' : '3');
const concurrency = Number(concurrencyText);
if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64) {
  console.error(`test: --concurrency (or TEST_CONCURRENCY) must be a whole number from 1 to 64, not ${JSON.stringify(concurrencyText)}\n${USAGE}`);
  process.exit(2);
}

execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (!unit) execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
// Type-aware lint, zero warnings, of everything `npm run lint` covers (the tools included), run
// beside the tests (its output is printed after theirs); SKIP_LINT=1 skips it for a quick local subset.
const lint =
  !unit && !tools && process.env.SKIP_LINT !== '1'
    ? new Promise((resolve) => {
        const p = spawn(process.execPath, [path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings', '0', 'src', 'test', 'tools', 'scripts', 'ecosystem.config.js'], { cwd: root });
        let out = '';
        p.stdout.on('data', (d) => (out += d));
        p.stderr.on('data', (d) => (out += d));
        p.on('close', (code) => resolve({ code, out }));
      })
    : Promise.resolve(null);

const outDir = path.join(root, '.test-build');
const testDir = path.join(outDir, tools ? path.join('tools', 'test') : 'test');
const filter = args.positionals;
const files = [];
(function walk(dir) {
  if (!fs.existsSync(dir)) return;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') walk(p);
    } else if ((unit ? /\.unit\.spec\.js$/ : /\.(spec|test)\.js$/).test(e.name)) {
      // Only compiled files whose source still exists (a removed or moved spec leaves its old output behind).
      const source = path.join(root, path.relative(outDir, p)).replace(/\.js$/, '.ts');
      if (fs.existsSync(source)) files.push(p);
    }
  }
})(testDir);
const selected = filter.length ? files.filter((f) => filter.some((s) => f.includes(s))) : files;
if (selected.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
// The slowest files first, so that the long ones do not start last and hold up the end: by their
// wall time in the last run (.test-build/test-times.json, written by the reporter), else by these
// figures of a run on 2 cores, else as a file of 30 s.
const KNOWN_SLOW = { 'test/ops/image.spec': 165_000, 'test/shipper/shipper-process.spec': 80_000, 'test/ops/cluster.spec': 65_000, 'test/health/readiness.spec': 60_000, 'test/ops/reports-browser.spec': 45_000, 'test/bidding/e2e.spec': 42_000, 'test/log/log-crash.test': 36_000, 'test/cluster/hosts.spec': 35_000, 'test/ops/monitoring.spec': 35_000 };
let times = {};
try {
  times = JSON.parse(fs.readFileSync(path.join(outDir, 'test-times.json'), 'utf8'));
} catch {
  // no earlier run: the figures above
}
const took = (f) => times[path.relative(root, f)] ?? KNOWN_SLOW[path.relative(outDir, f).replace(/\.js$/, '')] ?? 30_000;
selected.sort((a, b) => took(b) - took(a) || (a < b ? -1 : 1));
const runner = spawn(
  process.execPath,
  [
    '--test',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    `--test-reporter=${path.join(__dirname, 'lib', 'test-times.js')}`,
    '--test-reporter-destination=stdout',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=600000',
    ...selected,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
runner.on('close', (status) => {
  void lint.then((l) => {
    let code = status === null ? 1 : status;
    if (l !== null) {
      process.stdout.write(l.out);
      if (l.code === 0) console.log('lint: clean');
      else {
        console.error(`lint: failed (exit ${l.code})`);
        if (code === 0) code = 1;
      }
    }
    process.exit(code);
  });
});
