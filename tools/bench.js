'use strict';
// `npm run bench [-- --write]`: compiles and runs the in-process bid path micro-benchmark;
// `npm run bench:log [-- --write]`: the log path benchmark (tools/bench/log.bench.ts);
// `npm run bench:privacy`: the privacy library (tools/bench/privacy.bench.ts), printed only.
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { parseArgs } = require('node:util');
const root = path.resolve(__dirname, '..');
let values;
try {
  ({ values } = parseArgs({ options: { log: { type: 'boolean' }, privacy: { type: 'boolean' }, write: { type: 'boolean' } } }));
} catch (e) {
  console.error(`bench: ${e.message}\nusage: npm run bench [-- --write] | npm run bench:log [-- --write] | npm run bench:privacy`);
  process.exit(2);
}
execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
const script = path.join(root, '.test-build', 'tools', 'bench', values.log ? 'log.bench.js' : values.privacy ? 'privacy.bench.js' : 'bid.bench.js');
execFileSync(process.execPath, [...(values.log ? ['--expose-gc'] : []), script, ...(values.write ? ['--write'] : [])], { cwd: root, stdio: 'inherit' });
