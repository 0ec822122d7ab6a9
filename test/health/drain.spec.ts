// The HTTP drain that makes `pm2 reload` and scale-down fail no request (src/health/lifecycle.ts).
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { drainHttpServer } from '../../src/health/lifecycle';
import { request, SteadyLoad } from '../ops/support/http';

async function server(): Promise<{ server: http.Server; url: string }> {
  const s = http.createServer({ keepAliveTimeout: 65_000 }, (req, res) => {
    req.resume();
    req.on('end', () => {
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return { server: s, url: `http://127.0.0.1:${(s.address() as AddressInfo).port}` };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('drainHttpServer', () => {
  it('fails no request that reached an open connection while draining under steady keep-alive load', async () => {
    const { server: s, url } = await server();
    const load = new SteadyLoad(url, { connections: 8, pauseMs: 2, prefix: 'drain' });
    load.start();
    // At least 300 ms and 50 requests of load before the drain (a loaded machine needs longer for them).
    await sleep(300);
    for (const end = Date.now() + 5_000; load.count <= 50 && Date.now() < end; ) await sleep(20);
    const before = load.count;
    const t0 = Date.now();
    await drainHttpServer(s, 500, 1_000);
    const took = Date.now() - t0;
    const result = await load.stop();
    assert.ok(before > 50, `load ran (${before} requests before the drain)`);
    // The server stopped accepting, so new connections are refused (under PM2 another worker takes
    // them); what must never happen is a reset or a 5xx on a connection that was open.
    const { ECONNREFUSED: _refused, ...others } = result.failures;
    assert.deepEqual(others, {}, `failures other than refused connections: ${JSON.stringify(result.failures)}`);
    assert.ok(took < 1_500, `drain took ${took} ms`);
    assert.equal(s.listening, false);
  });

  it('answers a request on an idle keep-alive connection with Connection: close, and closes idle ones only after the grace', async () => {
    const { server: s, url } = await server();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    assert.equal((await request(url, { agent })).headers.connection, 'keep-alive');
    const t0 = Date.now();
    const draining = drainHttpServer(s, 400, 400);
    await sleep(100);
    // Still served, on the same connection, and told to go away.
    const a = await request(url, { agent });
    assert.equal(a.status, 204);
    assert.equal(a.headers.connection, 'close');
    await draining;
    assert.ok(Date.now() - t0 < 1_000);

    // A connection idle through the whole grace is closed when it ends, not at once.
    const { server: s2, url: url2 } = await server();
    const agent2 = new http.Agent({ keepAlive: true, maxSockets: 1 });
    await request(url2, { agent: agent2 });
    const t1 = Date.now();
    await drainHttpServer(s2, 300, 300);
    const waited = Date.now() - t1;
    assert.ok(waited >= 280 && waited < 900, `idle connection closed after ${waited} ms`);
    agent.destroy();
    agent2.destroy();
  });
});
