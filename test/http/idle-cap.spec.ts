/**
 * The connection cap against idle keep-alive connections (issue 23, finding 5): at
 * HTTP_MAX_CONNECTIONS a new client is served, and the connection idle the longest is closed to
 * make room, not the newcomer refused.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm } from '../support/prom';

const CAP = 20;
let t: TestApp;
before(async () => {
  t = await startTestApp({ HTTP_MAX_CONNECTIONS: String(CAP) });
});
after(async () => {
  await t.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A keep-alive connection that has made one request and then stays open and silent. */
interface Idle {
  socket: net.Socket;
  closed: boolean;
}

function idleConnection(url: string): Promise<Idle> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const c: Idle = { socket: net.connect(Number(u.port), u.hostname), closed: false };
    let got = '';
    c.socket.setEncoding('latin1');
    c.socket.on('connect', () => c.socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n'));
    c.socket.on('data', (d: string) => {
      got += d;
      if (/\r\n\r\n[^]*\}$/.test(got)) resolve(c);
    });
    c.socket.on('close', () => (c.closed = true));
    c.socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
  });
}

async function cut(reason: string): Promise<number> {
  const r = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  return parseProm(r.body.toString()).get('bidder_http_connections_cut_total')?.samples.find((s) => s.labels.reason === reason)?.value ?? 0;
}

async function open(port: string): Promise<number | undefined> {
  const r = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  return parseProm(r.body.toString()).get('bidder_http_connections_open')?.samples.find((s) => s.labels.port === port)?.value;
}

describe('open connections', () => {
  it('are counted per port while open, and no longer once closed', async () => {
    const base = await open('public');
    assert.equal(typeof base, 'number');
    const idle: Idle[] = [];
    for (let i = 0; i < 5; i++) idle.push(await idleConnection(t.url));
    assert.equal(await open('public'), base! + 5);
    assert.ok((await open('admin'))! >= 1, 'the scrape itself is an admin connection');
    for (const c of idle) c.socket.destroy();
    for (let i = 0; i < 50 && (await open('public')) !== base; i++) await sleep(20);
    assert.equal(await open('public'), base);
  });
});

describe('idle keep-alive connections at the cap', () => {
  it('a new client is served, and the longest-idle connections are closed first', async () => {
    const idle: Idle[] = [];
    // Opened one after another: idle[0] has been idle the longest.
    for (let i = 0; i < CAP; i++) {
      idle.push(await idleConnection(t.url));
      await sleep(10);
    }
    await sleep(100);
    const before = await cut('idle_at_cap');
    // Fresh clients, each on a new connection (Connection: close), while the cap is full of idle ones.
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      const a = await request(`${t.url}/health/live`, { method: 'GET', headers: { connection: 'close' } });
      assert.equal(a.status, 200);
      assert.ok(Date.now() - started < 2_000, `served after ${Date.now() - started} ms`);
    }
    await sleep(100);
    const closed = idle.map((c) => c.closed);
    // The oldest went first; the most recent ones are still open.
    assert.ok(closed[0], `closed: ${closed.map(Number).join('')}`);
    assert.ok(!closed[CAP - 1] && !closed[CAP - 2], `closed: ${closed.map(Number).join('')}`);
    const n = closed.filter(Boolean).length;
    assert.ok(n >= 1 && n <= 6, `${n} closed`);
    for (let i = 1; i < CAP; i++) if (closed[i]) assert.ok(closed[i - 1], `closed out of order: ${closed.map(Number).join('')}`);
    assert.ok((await cut('idle_at_cap')) - before >= 1);
    for (const c of idle) c.socket.destroy();
  });
});
