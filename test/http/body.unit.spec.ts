import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { describe, it } from 'node:test';
import { BodyError, decodeBody } from '../../src/http/body';

describe('decodeBody', () => {
  const json = Buffer.from('{"id":"x"}');
  const cases: Array<{ name: string; body: unknown; enc?: string; limit?: number; out?: string; status?: number }> = [
    { name: 'plain', body: json, out: '{"id":"x"}' },
    { name: 'identity', body: json, enc: 'identity', out: '{"id":"x"}' },
    { name: 'gzip', body: zlib.gzipSync(json), enc: 'gzip', out: '{"id":"x"}' },
    { name: 'GZIP upper-case', body: zlib.gzipSync(json), enc: 'GZIP', out: '{"id":"x"}' },
    { name: 'deflate', body: zlib.deflateSync(json), enc: 'deflate', out: '{"id":"x"}' },
    { name: 'br', body: zlib.brotliCompressSync(json), enc: 'br', out: '{"id":"x"}' },
    { name: 'empty', body: Buffer.alloc(0), status: 400 },
    { name: 'not a buffer', body: undefined, status: 400 },
    { name: 'corrupt gzip', body: Buffer.from('not gzip'), enc: 'gzip', status: 400 },
    { name: 'unknown encoding', body: json, enc: 'zstd-x', status: 400 },
    { name: 'gzip bomb', body: zlib.gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20)), enc: 'gzip', limit: 1024 * 1024, status: 413 },
  ];
  for (const c of cases) {
    it(c.name, () => {
      if (c.status !== undefined) {
        assert.throws(() => decodeBody(c.body, c.enc, c.limit ?? 1 << 20), (e: unknown) => e instanceof BodyError && e.status === c.status);
      } else {
        assert.equal(decodeBody(c.body, c.enc, c.limit ?? 1 << 20).toString(), c.out);
      }
    });
  }
});
