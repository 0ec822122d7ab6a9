'use strict';
// `npm run bench [-- --write]`: compiles and runs the in-process bid path micro-benchmark;
// `npm run bench:log [-- --write]`: the log path benchmark (tools/bench/log.bench.ts);
// `npm run bench:privacy`: the privacy library (tools/bench/privacy.bench.ts), printed only.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { readCommandLine } = require('../scripts/lib/cli');
const root = path.resolve(__dirname, '..');
const { values } = readCommandLine({
  name: 'bench',
  usage: `usage: npm run bench [-- --write] | npm run bench:log [-- --write] | npm run bench:privacy
  --write  also write the figures to bench/RESULTS-bid.md (bench:log: bench/RESULTS-log.md)`,
  options: { log: { type: 'boolean' }, privacy: { type: 'boolean' }, write: { type: 'boolean' } },
});
execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
const script = path.join(root, '.test-build', 'tools', 'bench', values.log ? 'log.bench.js' : values.privacy ? 'privacy.bench.js' : 'bid.bench.js');
execFileSync(process.execPath, [...(values.log ? ['--expose-gc'] : []), script, ...(values.write ? ['--write'] : [])], { cwd: root, stdio: 'inherit' });
