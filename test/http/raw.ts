/** Raw HTTP over a socket: request targets sent byte for byte (as `curl --path-as-is` would), answers read as text. */
import * as net from 'node:net';

export interface RawAnswer {
  status: number;
  head: string;
  body: string;
}

/** Sends `data` on a new connection and reads until the server closes it or `maxMs` passes. */
export function rawExchange(url: string, data: string | Buffer, maxMs = 5_000): Promise<RawAnswer> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    let got = '';
    const s = net.connect(Number(u.port), u.hostname, () => s.write(data));
    const done = (): void => {
      clearTimeout(guard);
      s.destroy();
      const end = got.indexOf('\r\n\r\n');
      const head = end < 0 ? got : got.slice(0, end);
      const m = /^HTTP\/1\.[01] (\d{3})/.exec(head);
      resolve({ status: m === null ? 0 : Number(m[1]), head, body: end < 0 ? '' : got.slice(end + 4) });
    };
    const guard = setTimeout(done, maxMs);
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
    s.on('close', done);
    s.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? done() : reject(e)));
  });
}

/** One request with `Connection: close`, the target as given. */
export function rawRequest(url: string, method: string, target: string, body = ''): Promise<RawAnswer> {
  const head = `${method} ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` + (body === '' && method !== 'POST' ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`);
  return rawExchange(url, `${head}\r\n${body}`);
}
