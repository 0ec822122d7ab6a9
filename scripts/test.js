'use strict';
// `npm test [-- <part of a path>…]`: type-checks and compiles src + test, builds dist (e2e tests
// start dist/main.js), lints, then runs every compiled *.spec.js / *.test.js with Node's test runner
// on the project's Node 24.
// `npm run test:unit [-- <part of a path>…]` (`--unit`): only the *.unit.spec.ts files, the tests
// that start no Redis, no bidder and no other process; compiles src + test only, no dist, no lint.
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');

const root = path.resolve(__dirname, '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(`npm test needs Node 24 (this is ${process.version}); run it through npm so node_modules/.bin/node is used.`);
  process.exit(1);
}
let args;
try {
  args = parseArgs({ options: { unit: { type: 'boolean' } }, allowPositionals: true });
} catch (e) {
  console.error(`test: ${e.message}\nusage: npm test [-- <part of a path>…] | npm run test:unit [-- <part of a path>…]`);
  process.exit(2);
}
const unit = args.values.unit === true;
execFileSync(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
if (!unit) execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
// Type-aware lint, zero warnings; SKIP_LINT=1 skips it for a quick local subset.
if (!unit && process.env.SKIP_LINT !== '1') {
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'eslint', 'bin', 'eslint.js'), '--max-warnings', '0', 'src', 'test', 'bench', 'scripts', 'ecosystem.config.js'], {
    cwd: root,
    stdio: 'inherit',
  });
  console.log('lint: clean');
}

const outDir = path.join(root, '.test-build');
const filter = args.positionals;
const files = [];
(function walk(dir) {
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
})(outDir);
const selected = filter.length ? files.filter((f) => filter.some((s) => f.includes(s))) : files;
if (selected.length === 0) {
  console.error('no test files found');
  process.exit(1);
}
selected.sort();
const r = spawnSync(
  process.execPath,
  ['--test', '--test-reporter=spec', '--test-concurrency=1', '--test-timeout=600000', ...selected],
  { cwd: root, stdio: 'inherit', env: { ...process.env, NODE_ENV: 'test' } },
);
process.exit(r.status === null ? 1 : r.status);
