'use strict';
// The import graph of src/, between its modules (its top-level folders; a file directly in src/ is a
// module of its own) and between its files, and the cycles of each. `node scripts/import-cycles.js`
// prints the module edges and every cycle, and exits 1 when there is one;
// test/arch/import-cycles.unit.spec.ts runs the same checks.
// Type-only imports count: a module that names another's types depends on it all the same.
const fs = require('node:fs');
const path = require('node:path');
const ts = require('typescript');

const ROOT = path.resolve(__dirname, '..');

function moduleOf(srcDir, file) {
  const rel = path.relative(srcDir, file).split(path.sep);
  return rel.length === 1 ? rel[0].replace(/\.(d\.)?ts$/, '') : rel[0];
}

/** Every relative import of a .ts file of src/ that stays in src/: [importing file, imported file, specifier]. */
function imports(srcDir) {
  const out = [];
  for (const rel of fs.readdirSync(srcDir, { recursive: true })) {
    const file = path.join(srcDir, rel);
    if (!/\.ts$/.test(file) || !fs.statSync(file).isFile()) continue;
    const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const target = path.resolve(path.dirname(file), fileName);
      if (!target.startsWith(srcDir + path.sep)) continue;
      out.push([file, fs.existsSync(target) && fs.statSync(target).isDirectory() ? path.join(target, 'index.ts') : target + '.ts', fileName]);
    }
  }
  return out;
}

/**
 * Every import between modules: a Map "from -> to" to the list of "file: specifier" that make it.
 * Relative specifiers only (packages are not modules of src/).
 */
function moduleEdges(srcDir = path.join(ROOT, 'src')) {
  const edges = new Map();
  for (const [file, imported, fileName] of imports(srcDir)) {
    const from = moduleOf(srcDir, file);
    const to = moduleOf(srcDir, imported);
    if (to === from) continue;
    const key = `${from} -> ${to}`;
    const why = `${path.relative(srcDir, file)}: ${fileName}`;
    const list = edges.get(key);
    if (list === undefined) edges.set(key, [why]);
    else list.push(why);
  }
  return edges;
}

/** Every import between two files of src/, as "a/x.ts -> b/y.ts" (paths relative to src/). */
function fileEdges(srcDir = path.join(ROOT, 'src')) {
  return new Set(imports(srcDir).map(([file, imported]) => `${path.relative(srcDir, file)} -> ${path.relative(srcDir, imported)}`));
}

/** The cycles of a graph given as "a -> b" edges: each strongly connected component of more than one module (Tarjan). */
function findCycles(edgeKeys) {
  const next = new Map();
  for (const k of edgeKeys) {
    const [a, b] = k.split(' -> ');
    if (!next.has(a)) next.set(a, []);
    if (!next.has(b)) next.set(b, []);
    next.get(a).push(b);
  }
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of next.get(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

module.exports = { moduleEdges, fileEdges, findCycles };

if (require.main === module) {
  const { values } = require('./lib/cli').readCommandLine({
    name: 'import-cycles',
    usage: 'usage: node scripts/import-cycles.js [--why]   (the import graph of src/ and its cycles; exit 1 on a cycle)\n  --why  each edge with the imports that make it',
    options: { why: { type: 'boolean' } },
  });
  const edges = moduleEdges();
  for (const k of [...edges.keys()].sort()) console.log(values.why ? `${k}   (${edges.get(k).join('; ')})` : k);
  const cycles = [...findCycles(edges.keys()), ...findCycles(fileEdges())];
  for (const c of cycles) console.log(`cycle: ${c.join(', ')}`);
  process.exit(cycles.length > 0 ? 1 : 0);
}
