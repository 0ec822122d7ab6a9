/**
 * HttpFront on its own (no Nest, no Redis): route matching, body reading and limits, and what a
 * failing route does to the answer and the worker. A send never throws out of the front.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { errorAnswer, type HttpAnswer } from '../../src/http/answer';
import { type FrontRequest, HttpFront } from '../../src/http/front';
import { request } from '../support/app';

let front: HttpFront;
let base: string;
let admin: string;
const seen: FrontRequest[] = [];
const errors: object[] = [];

before(async () => {
  front = new HttpFront(loadConfig({ BODY_LIMIT_BYTES: '1024', ADMIN_PORT: '0', ADMIN_HOST: '127.0.0.1' }), null, { error: (o) => errors.push(o) });
  const echo = { handle: (r: FrontRequest): HttpAnswer => (seen.push(r), { status: 200, headers: {}, payload: r.body ?? r.query }) };
  front.route({ method: 'POST', path: '/echo', port: 'public', route: echo });
  front.route({ method: 'GET', path: '/t/', prefix: true, port: 'public', route: echo });
  front.route({ method: 'POST', path: '/admin-only', port: 'admin', route: echo });
  front.route({
    method: 'POST',
    path: '/throws',
    port: 'public',
    route: {
      handle: () => {
        throw new TypeError('a bug');
      },
    },
  });
  front.route({ method: 'GET', path: '/rejects', port: 'public', route: { handle: () => Promise.reject(new Error('async bug')) } });
  front.route({ method: 'GET', path: '/bad-header', port: 'public', route: { handle: () => ({ status: 302, headers: { location: 'https://x.example/页面' }, payload: undefined }) } });
  front.route({
    method: 'POST',
    path: '/counted',
    port: 'public',
    route: { handle: () => errorAnswer(200, 'x'), refused: (status, reason) => errorAnswer(status, `route says: ${reason}`) },
  });
  // What Fastify would do with the rest.
  front.serverFactory((_req, res) => {
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => front.publicServer.listen(0, '127.0.0.1', resolve));
  await front.listenAdmin();
  base = `http://127.0.0.1:${(front.publicServer.address() as AddressInfo).port}`;
  admin = front.adminUrl();
});
after(async () => {
  for (const s of [front.publicServer, front.adminServer]) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

describe('HttpFront', () => {
  it('matches exact paths with or without a query string, and prefixes', async () => {
    assert.equal((await request(`${base}/echo?x=1`, { body: 'hi' })).body.toString(), 'hi');
    assert.equal((await request(`${base}/echo`, { body: 'hi' })).status, 200);
    assert.equal((await request(`${base}/t/win?p=1&s=2`, { method: 'GET' })).body.toString(), 'p=1&s=2');
    assert.equal(seen[seen.length - 1].path, '/t/win');
    // Not the route: /echoes is another path.
    assert.equal((await request(`${base}/echoes`, { body: 'hi' })).status, 404);
  });
  it('serves each route on its own port only', async () => {
    assert.equal((await request(`${base}/admin-only`, { body: 'x' })).status, 404);
    assert.equal((await request(`${admin}/admin-only`, { body: 'x' })).status, 200);
    assert.equal((await request(`${admin}/echo`, { body: 'x' })).status, 404);
  });
  it('decodes gzip bodies and refuses what is over the limit before and after decompression, closing the connection', async () => {
    const ok = await request(`${base}/echo`, { body: zlib.gzipSync('zipped'), headers: { 'content-encoding': 'gzip' } });
    assert.equal(ok.body.toString(), 'zipped');
    const big = await request(`${base}/echo`, { body: Buffer.alloc(2048, 0x20) });
    assert.equal(big.status, 413);
    assert.equal(big.headers.connection, 'close');
    const bomb = await request(`${base}/echo`, { body: zlib.gzipSync(Buffer.alloc(1 << 20)), headers: { 'content-encoding': 'gzip' } });
    assert.equal(bomb.status, 413);
    const bad = await request(`${base}/echo`, { body: 'not gzip', headers: { 'content-encoding': 'gzip' } });
    assert.equal(bad.status, 400);
  });
  it('lets the route word its refusals (the bid route counts them)', async () => {
    const r = await request(`${base}/counted`, { body: Buffer.alloc(2048) });
    assert.equal(r.status, 413);
    assert.deepEqual(JSON.parse(r.body.toString()), { error: 'route says: body over 1024 bytes' });
  });
  it('answers 500 when a route throws or rejects, and goes on serving', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await request(`${base}/throws`, { body: '{}' });
      assert.equal(r.status, 500);
      assert.deepEqual(JSON.parse(r.body.toString()), { error: 'internal error' });
      assert.equal((await request(`${base}/rejects`, { method: 'GET' })).status, 500);
    }
    assert.ok(errors.length >= 6);
    assert.equal((await request(`${base}/echo`, { body: 'still' })).body.toString(), 'still');
  });
  it('never throws out of a send: an answer Node refuses becomes a 500', async () => {
    const r = await request(`${base}/bad-header`, { method: 'GET' });
    assert.equal(r.status, 500);
    assert.equal(front.sendErrors, 1);
    assert.equal((await request(`${base}/echo`, { body: 'alive' })).body.toString(), 'alive');
  });
});
