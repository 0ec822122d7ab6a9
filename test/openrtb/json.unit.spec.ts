import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fewBrackets, nestingWithin, readJson } from '../../src/openrtb/json';
import { REQUEST_LIMITS } from '../../src/openrtb/limits';
import { InvalidRequestError } from '../../src/openrtb/parse';

const MAX = REQUEST_LIMITS.depth;

/** `{"id":"r","ext":` + `depth - 1` nested arrays: the whole text nests `depth` deep. */
function nested(depth: number): string {
  return `{"id":"r","ext":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
}

function refusedFor(text: string): string | null {
  try {
    readJson(Buffer.from(text));
    return null;
  } catch (e) {
    assert.ok(e instanceof InvalidRequestError, `expected a 400, got ${String(e)}`);
    return e.reason;
  }
}

describe('readJson: nesting limit and the bracket count', () => {
  it('accepts the limit and refuses one level more, with few brackets and with many', () => {
    assert.equal(refusedFor(nested(MAX)), null);
    assert.match(refusedFor(nested(MAX + 1)) ?? '', new RegExp(`nested deeper than ${MAX} levels`));
    // Many brackets, shallow: the count says "maybe", the scan says "fine".
    const wide = JSON.stringify({ id: 'r', imp: Array.from({ length: 3 * MAX }, (_, i) => ({ id: String(i), banner: { format: [{ w: 300, h: 250 }] } })) });
    assert.equal(fewBrackets(wide, MAX), false);
    assert.equal(refusedFor(wide), null);
  });

  it('counts brackets inside strings only toward the fast path, never toward the depth', () => {
    // 200 brackets in a string: past the count, so the scan decides, and strings do not nest.
    const text = JSON.stringify({ id: 'r', ext: { s: '{['.repeat(100), t: 'a\\"[{' } });
    assert.equal(fewBrackets(text, MAX), false);
    assert.equal(nestingWithin(Buffer.from(text), MAX), true);
    assert.equal(refusedFor(text), null);
  });

  it('refuses exactly the random shapes that nest deeper than the limit, by either path', () => {
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    for (let k = 0; k < 300; k++) {
      const depth = 1 + rnd(MAX + 8);
      const siblings = rnd(40);
      const text = `{"a":[${Array(siblings).fill('{}').join(',')}],"b":${'['.repeat(depth - 1)}"}]"${']'.repeat(depth - 1)}}`;
      assert.deepEqual([depth, refusedFor(text) === null], [depth, depth <= MAX]);
    }
  });

  it('refuses malformed JSON with a reason', () => {
    assert.equal(refusedFor('{"id":'), 'malformed JSON');
    assert.equal(refusedFor(''), 'malformed JSON');
  });
});
