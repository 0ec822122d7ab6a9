// scripts/lib/redis.js ping(): it must settle whatever the other end does, or whoever waits on it
// (starting and stopping Redis in npm start, the tests, the load test) hangs with nothing to wake it.
import assert from 'node:assert/strict';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { within } from '../log/support';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ping } = require(path.resolve(__dirname, '..', '..', '..', 'scripts', 'lib', 'redis.js')) as { ping(url: string, timeoutMs?: number): Promise<boolean> };

/** ping() with a deadline: a ping that never settles fails the test in seconds, not at the test timeout. */
function pingWithin(url: string, timeoutMs: number): Promise<boolean> {
  return within(ping(url, timeoutMs), timeoutMs + 3_000, 'ping');
}

async function withServer(onConnection: (s: net.Socket) => void, fn: (url: string) => Promise<void>): Promise<void> {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
    onConnection(s);
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  try {
    await fn(`redis://127.0.0.1:${(srv.address() as net.AddressInfo).port}`);
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => srv.close(() => resolve()));
  }
}

describe('redis ping', () => {
  it('is false when the server accepts and closes without a word (a Redis shutting down)', async () => {
    await withServer((s) => s.end(), async (url) => assert.equal(await pingWithin(url, 2_000), false));
  });
  it('is false when the server accepts and says nothing', async () => {
    await withServer(() => undefined, async (url) => assert.equal(await pingWithin(url, 200), false));
  });
  it('is true on +PONG, false when nothing listens', async () => {
    await withServer((s) => s.on('data', () => s.write('+PONG\r\n')), async (url) => assert.equal(await pingWithin(url, 2_000), true));
    const free = net.createServer();
    await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
    const port = (free.address() as net.AddressInfo).port;
    await new Promise<void>((resolve) => free.close(() => resolve()));
    assert.equal(await pingWithin(`redis://127.0.0.1:${port}`, 500), false);
  });
});
