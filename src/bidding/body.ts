/**
 * Request body decoding: Content-Encoding (gzip/deflate/br) with the size limit applied after
 * decompression too (no zip bombs), then JSON. Errors carry the HTTP status they deserve.
 */
import * as zlib from 'node:zlib';

export class BodyError extends Error {
  constructor(
    readonly status: 400 | 413,
    readonly reason: string,
  ) {
    super(reason);
    this.name = 'BodyError';
  }
}

function tooLarge(e: unknown): boolean {
  return (e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' || e instanceof RangeError;
}

/** Decompresses `body` per `encoding`; the result never exceeds `limit` bytes. */
export function decodeBody(body: unknown, encoding: string | undefined, limit: number): Buffer {
  if (!Buffer.isBuffer(body) || body.length === 0) throw new BodyError(400, 'empty body');
  if (encoding === undefined || encoding === '' || encoding === 'identity') return body;
  const enc = encoding.trim().toLowerCase();
  const opts = { maxOutputLength: limit };
  try {
    switch (enc) {
      case 'identity':
        return body;
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(body, opts);
      case 'deflate':
        return zlib.inflateSync(body, opts);
      case 'br':
        return zlib.brotliDecompressSync(body, opts);
      default:
        throw new BodyError(400, `unsupported Content-Encoding: ${enc.slice(0, 40)}`);
    }
  } catch (e) {
    if (e instanceof BodyError) throw e;
    if (tooLarge(e)) throw new BodyError(413, `body over ${limit} bytes after decompression`);
    throw new BodyError(400, `body is not valid ${enc} data`);
  }
}

/** JSON.parse with a 400 on failure. */
export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError(400, 'malformed JSON');
  }
}
