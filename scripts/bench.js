'use strict';
// `npm run bench [-- --write]`: compiles and runs the in-process bid path micro-benchmark.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
execFileSync(process.execPath, [path.join(root, '.test-build', 'bench', 'bid.bench.js'), ...process.argv.slice(2)], { cwd: root, stdio: 'inherit' });
