/**
 * The HTTP servers (src/http/): deadlines, the connection cap, the admin port and the body limit, on the
 * real app over real sockets. Hostile clients must be cut and counted, never kept.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { request, startTestApp, type TestApp } from '../support/app';
import { parseProm } from '../support/prom';

let t: TestApp;
before(async () => {
  t = await startTestApp({ HTTP_HEADERS_TIMEOUT_MS: '400', HTTP_REQUEST_TIMEOUT_MS: '800', HTTP_MAX_CONNECTIONS: '40' });
});
after(async () => {
  await t.close();
});

/** Opens a connection, writes `data`, and resolves with what came back and how long until the server closed it. */
function hold(url: string, data: string, maxMs = 10_000): Promise<{ got: string; ms: number; closedByServer: boolean }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let got = '';
    const s = net.connect(Number(u.port), u.hostname, () => s.write(data));
    const guard = setTimeout(() => {
      s.destroy();
      resolve({ got, ms: Date.now() - started, closedByServer: false });
    }, maxMs);
    s.setEncoding('latin1');
    s.on('data', (d: string) => (got += d));
    s.on('close', () => {
      clearTimeout(guard);
      resolve({ got, ms: Date.now() - started, closedByServer: true });
    });
    s.on('error', reject);
  });
}

async function cuts(): Promise<Record<string, number>> {
  const r = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
  assert.equal(r.status, 200);
  const out: Record<string, number> = {};
  for (const s of parseProm(r.body.toString()).get('bidder_http_connections_cut_total')?.samples ?? []) out[s.labels.reason] = s.value;
  return out;
}

describe('deadlines', () => {
  it('cuts a bid request whose body never completes, with 408, and counts it', async () => {
    const before = (await cuts()).body_timeout ?? 0;
    const r = await hold(t.url, 'POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n0123456789');
    assert.ok(r.closedByServer, 'the server must close the connection');
    assert.ok(r.ms < 3_000, `cut after ${r.ms} ms`);
    assert.match(r.got, /^HTTP\/1\.1 408 /);
    assert.equal((await cuts()).body_timeout, before + 1);
  });
  it('cuts a client that never finishes its headers, on any path', async () => {
    const before = (await cuts()).headers_timeout ?? 0;
    const r = await hold(t.url, 'GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: ');
    assert.ok(r.closedByServer && r.ms < 3_000, `cut after ${r.ms} ms`);
    assert.equal((await cuts()).headers_timeout, before + 1);
  });
  it('cuts a slow body on the routes behind Fastify too', async () => {
    const r = await hold(t.url, 'POST /health/ready HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc');
    assert.ok(r.closedByServer && r.ms < 3_000, `cut after ${r.ms} ms`);
  });
  it('150 clients each holding most of a 1 MiB body are all cut, and a good request still bids', async () => {
    const body = 'x'.repeat(64 * 1024);
    const held = await Promise.all(
      Array.from({ length: 30 }, () => hold(t.url, `POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: ${1024 * 1024 - 1}\r\n\r\n${body}`)),
    );
    for (const h of held) assert.ok(h.closedByServer && h.ms < 3_000, `held for ${h.ms} ms`);
    const ok = await request(`${t.url}/openrtb2/bid`, {
      body: JSON.stringify({ id: 'after-slow', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' } }),
    });
    assert.equal(ok.status, 200);
  });
  it('does not cut a complete request whose answer takes a while (the deadline is for receiving it)', async () => {
    // A keep-alive connection that sends one complete request: answered, not cut.
    const r = await request(`${t.url}/health/live`, { method: 'GET' });
    assert.equal(r.status, 200);
  });
});

describe('connection cap', () => {
  it('drops connections past HTTP_MAX_CONNECTIONS and counts them', async () => {
    const before = (await cuts()).over_connection_limit ?? 0;
    const sockets: net.Socket[] = [];
    const u = new URL(t.url);
    for (let i = 0; i < 50; i++) {
      const s = net.connect(Number(u.port), u.hostname);
      s.on('error', () => undefined);
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    for (const s of sockets) s.destroy();
    await new Promise((r) => setTimeout(r, 200));
    const after = (await cuts()).over_connection_limit ?? 0;
    assert.ok(after - before >= 10, `dropped ${after - before}`);
  });
});

describe('admin port', () => {
  it('serves /metrics and /metrics/cluster on ADMIN_PORT only', async () => {
    assert.equal((await request(`${t.url}/metrics`, { method: 'GET' })).status, 404);
    assert.equal((await request(`${t.url}/metrics/cluster`, { method: 'GET' })).status, 404);
    assert.equal((await request(`${t.url}/debug/explain`, { body: '{}' })).status, 404);
    const m = await request(`${t.adminUrl}/metrics`, { method: 'GET' });
    assert.equal(m.status, 200);
    assert.ok(parseProm(m.body.toString()).has('bidder_ready'));
  });
  it('serves health on both ports and bids only on the public one', async () => {
    assert.equal((await request(`${t.url}/health/ready`, { method: 'GET' })).status, 200);
    assert.equal((await request(`${t.adminUrl}/health/ready`, { method: 'GET' })).status, 200);
    assert.equal((await request(`${t.adminUrl}/openrtb2/bid`, { body: '{}' })).status, 404);
  });
});

describe('one path per route whatever the flags', () => {
  it('the bid route answers the same with ACCESS_LOG on, and logs one line per request', async () => {
    const a = await startTestApp({ ACCESS_LOG: 'true', LOG_LEVEL: 'silent' });
    try {
      const r = await request(`${a.url}/openrtb2/bid`, { body: Buffer.alloc(a.config.bodyLimitBytes + 1, 0x20) });
      assert.equal(r.status, 413);
      assert.equal(r.headers.connection, 'close');
    } finally {
      await a.close();
    }
  });
});

describe('a Content-Type that is not a media type', () => {
  it('the bid route refuses it with 400 and a reason, counted as a bad request, and closes the connection', async () => {
    const count = async (): Promise<number> => {
      const m = parseProm((await request(`${t.adminUrl}/metrics`, { method: 'GET' })).body.toString());
      return (m.get('bidder_bid_requests_total')?.samples ?? []).filter((s) => s.labels.outcome === 'bad_request').reduce((a, s) => a + s.value, 0);
    };
    const before = await count();
    const r = await hold(t.url, 'POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Type: ;;\r\nContent-Length: 2\r\n\r\n{}', 3_000);
    assert.match(r.got, /^HTTP\/1\.1 400 /);
    assert.match(r.got, /[Cc]onnection: close/);
    assert.match(r.got, /Content-Type is not a media type/);
    assert.ok(r.closedByServer);
    assert.equal(await count(), before + 1);
  });
});

describe('dependencies', () => {
  it('runs on fastify 5.12 or later (the security releases)', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const v = (require('fastify/package.json') as { version: string }).version.split('.').map(Number);
    assert.ok(v[0] === 5 && v[1] >= 12, `fastify ${v.join('.')}`);
  });
});
