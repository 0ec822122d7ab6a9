// Counts the writes a socket hands to the kernel (each `_write` or `_writev` call is one write), on
// the real socket of a Redis client: what a test of write batching observes, nothing replaced.
import type * as net from 'node:net';

type Writes = { _write: (...a: unknown[]) => void; _writev: (...a: unknown[]) => void };

export interface WriteCounter {
  readonly n: number;
  stop(): void;
}

export function countWrites(socket: net.Socket): WriteCounter {
  const s = socket as unknown as Writes;
  const [w, wv] = [s._write, s._writev];
  let n = 0;
  s._write = function (this: unknown, ...a: unknown[]) {
    n++;
    return w.apply(this, a);
  };
  s._writev = function (this: unknown, ...a: unknown[]) {
    n++;
    return wv.apply(this, a);
  };
  return {
    get n() {
      return n;
    },
    stop() {
      s._write = w;
      s._writev = wv;
    },
  };
}
