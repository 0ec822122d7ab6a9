'use strict';
// `npm run bench [-- --write]`: compiles and runs the in-process bid path micro-benchmark;
// `npm run bench:log [-- --write]`: the log path benchmark (bench/log.bench.ts);
// `npm run bench:privacy`: the privacy library (bench/privacy.bench.ts), printed only.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const root = path.resolve(__dirname, '..');
execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
const args = process.argv.slice(2);
const log = args.includes('--log');
const privacy = args.includes('--privacy');
const script = path.join(root, '.test-build', 'bench', log ? 'log.bench.js' : privacy ? 'privacy.bench.js' : 'bid.bench.js');
execFileSync(process.execPath, [...(log ? ['--expose-gc'] : []), script, ...args.filter((a) => a !== '--log' && a !== '--privacy')], { cwd: root, stdio: 'inherit' });
