/**
 * Reading a request body: the bytes within the limit (413 past it, by Content-Length or by what
 * arrives), then Content-Encoding (gzip/deflate/br) with the same limit after decompression (no zip
 * bombs). Errors carry the HTTP status they deserve. Deadlines are the HTTP server's (server.ts).
 */
import type { IncomingMessage } from 'node:http';
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

const EMPTY = Buffer.alloc(0);

/**
 * Reads a request's body into one Buffer: 413 when Content-Length or the bytes received exceed
 * `limit` (the rest is then not buffered), 400 when the client aborts. `done` is called once.
 * (Node's HTTP parser frames the body by Content-Length: 'end' comes after exactly that many
 * bytes, and a connection that ends sooner is its client-error 400.)
 */
export function readBody(req: IncomingMessage, limit: number, done: (err: BodyError | null, body: Buffer) => void): void {
  const declared = req.headers['content-length'];
  const length = declared === undefined ? -1 : Number(declared);
  if (length > limit) {
    done(new BodyError(413, `body over ${limit} bytes`), EMPTY);
    return;
  }
  // One chunk is the usual case: no array and no copy for it.
  let first: Buffer | null = null;
  let more: Buffer[] | null = null;
  let received = 0;
  const finish = (err: BodyError | null): void => {
    req.removeListener('data', onData);
    req.removeListener('end', onEnd);
    req.removeListener('error', onError);
    if (err !== null) {
      done(err, EMPTY);
      return;
    }
    done(null, first === null ? EMPTY : more === null ? first : Buffer.concat([first, ...more], received));
  };
  const onData = (chunk: Buffer): void => {
    received += chunk.length;
    if (received > limit) {
      finish(new BodyError(413, `body over ${limit} bytes`));
      return;
    }
    if (first === null) first = chunk;
    else (more ??= []).push(chunk);
  };
  const onEnd = (): void => finish(null);
  const onError = (): void => finish(new BodyError(400, 'request body aborted'));
  req.on('data', onData);
  req.on('end', onEnd);
  req.on('error', onError);
}
