// freePort (scripts/lib/redis.js), which every private Redis, test server and load test binds: a port
// free on loopback, drawn below the kernel's range for outgoing connections' local ports, where a
// port just closed is not handed to the next outgoing connection.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { describe, it } from 'node:test';
import { freePort } from '../support/redis';

function ephemeralRange(): [number, number] {
  const [lo, hi] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
  return [lo, hi];
}

function bind(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve()));
  });
}

describe('freePort', () => {
  it('gives ports outside the kernel\'s range for outgoing connections, free to bind', async () => {
    const [lo, hi] = ephemeralRange();
    const ports: number[] = [];
    for (let i = 0; i < 30; i++) {
      const port = await freePort();
      assert.ok(Number.isInteger(port) && port >= 1024 && port <= 65535, `port ${port}`);
      assert.ok(port < lo || port > hi, `port ${port} in the kernel's range ${lo}-${hi}`);
      await bind(port);
      ports.push(port);
    }
    // Drawn at random: thirty calls are not one port again and again.
    assert.ok(new Set(ports).size >= 25, `${new Set(ports).size} distinct ports of 30`);
  });

  it('passes over a port of its range that is taken', async () => {
    // The first draw (Math.random() = 0) is the lowest port of the range: held here, it is passed over.
    const [lo] = ephemeralRange();
    const lowest = Math.max(1024, lo - 12_000);
    const srv = net.createServer();
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(lowest, '127.0.0.1', () => resolve());
    });
    const random = Math.random;
    let draws = 0;
    Math.random = () => (draws++ === 0 ? 0 : random());
    try {
      const port = await freePort();
      assert.ok(draws >= 2, `${draws} draws`);
      assert.notEqual(port, lowest);
      await bind(port);
    } finally {
      Math.random = random;
      await new Promise((resolve) => srv.close(resolve));
    }
  });
});
