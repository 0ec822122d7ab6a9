// No import cycle between the modules of src/ (its top-level folders) nor between its files (type-only
// imports included: a file that names another's types depends on it), and the bidder's log and the
// shipper (two processes that share only the bid log's contract, src/bidlog/) import neither the
// other. The graph comes from scripts/import-cycles.js (`node scripts/import-cycles.js --why`
// prints it with the imports that make each edge).
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const graph = require(path.join(ROOT, 'scripts', 'import-cycles.js')) as {
  moduleEdges(srcDir?: string): Map<string, string[]>;
  fileEdges(srcDir?: string): Set<string>;
  findCycles(edges: Iterable<string>): string[][];
};

describe('module imports', () => {
  const edges = graph.moduleEdges(path.join(ROOT, 'src'));

  it('finds a cycle when there is one (the check can fail)', () => {
    assert.deepEqual(graph.findCycles(['a -> b', 'b -> c', 'c -> a', 'c -> d']), [['a', 'b', 'c']]);
    assert.deepEqual(graph.findCycles(['a -> b', 'b -> c', 'a -> c']), []);
    assert.ok(edges.size > 20, `the graph of src/ has its edges (${edges.size})`);
  });

  it('has no cycle between the top-level folders of src/', () => {
    const cycles = graph.findCycles(edges.keys());
    const why = (c: string[]) =>
      [...edges]
        .filter(([k]) => c.includes(k.split(' -> ')[0]) && c.includes(k.split(' -> ')[1]))
        .map(([k, v]) => `  ${k}: ${v.join('; ')}`)
        .join('\n');
    assert.deepEqual(cycles, [], cycles.map((c) => `cycle ${c.join(', ')}:\n${why(c)}`).join('\n'));
  });

  it('has no cycle between the files of src/, inside a folder too', () => {
    const files = graph.fileEdges(path.join(ROOT, 'src'));
    assert.ok(files.has('http/server.ts -> http/answer.ts'), 'the graph of files has the imports inside a folder');
    const cycles = graph.findCycles(files);
    assert.deepEqual(cycles, [], cycles.map((c) => `cycle ${c.join(', ')}`).join('\n'));
  });

  it('log/ and shipper/ import neither the other, and bidlog/ imports neither', () => {
    assert.ok(edges.has('shipper -> bidlog') && edges.has('log -> bidlog'), 'both use the bid log\'s contract');
    for (const e of ['log -> shipper', 'shipper -> log', 'bidlog -> log', 'bidlog -> shipper']) assert.equal(edges.get(e), undefined, `${e}: ${edges.get(e)?.join('; ')}`);
  });
});
