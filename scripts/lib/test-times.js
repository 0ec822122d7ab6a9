'use strict';
// A node:test reporter beside `spec`: at the end of a run, each test file's wall time (its process,
// from start to exit), slowest first, and the sum. `npm test` prints it so the time a change adds
// is seen where it goes, and keeps it in .test-build/test-times.json for the order of the next run.
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');

module.exports = async function* fileTimes(source) {
  const files = new Map();
  for await (const event of source) {
    if (event.type !== 'test:complete' || event.data.nesting !== 0 || !event.data.file) continue;
    const ms = event.data.details?.duration_ms ?? 0;
    files.set(event.data.file, Math.max(files.get(event.data.file) ?? 0, ms));
  }
  if (files.size === 0) return;
  // Kept for the next run, which starts the slowest files first (scripts/test.js).
  const store = path.join(ROOT, '.test-build', 'test-times.json');
  try {
    const known = fs.existsSync(store) ? JSON.parse(fs.readFileSync(store, 'utf8')) : {};
    for (const [file, ms] of files) known[path.relative(ROOT, file)] = Math.round(ms);
    fs.writeFileSync(store, `${JSON.stringify(known, null, 1)}\n`);
  } catch {
    // Only an ordering hint: a run without it starts the files in path order.
  }
  const rows = [...files].sort((a, b) => b[1] - a[1]);
  const total = rows.reduce((s, [, ms]) => s + ms, 0);
  yield `\ntest files by wall time (${files.size} files, ${(total / 1000).toFixed(1)} s in all):\n`;
  for (const [file, ms] of rows) {
    const rel = path.relative(path.join(ROOT, '.test-build'), file).replace(/\.js$/, '.ts');
    yield `${(ms / 1000).toFixed(1).padStart(8)} s  ${rel}\n`;
  }
};
