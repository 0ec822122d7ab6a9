'use strict';
// The tools' SVG charts are the product's one chart module (src/charts/svg.ts), used from its build
// in dist/: built here first when missing or older than its source.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const SOURCE = path.join(ROOT, 'src', 'charts', 'svg.ts');
const BUILT = path.join(ROOT, 'dist', 'charts', 'svg.js');

const mtime = (file) => {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
};

if (mtime(BUILT) < mtime(SOURCE)) {
  execFileSync(process.execPath, [path.join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { cwd: ROOT, stdio: 'inherit' });
}

module.exports = require(BUILT);
