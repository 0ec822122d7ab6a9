/**
 * The HTTP server module (src/http/server.ts) on its own (no Nest, no Redis): route matching, body
 * reading and limits, and what a failing route does to the answer and the worker. A send never throws.
 */
import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../src/config/config';
import { errorAnswer, type HttpAnswer } from '../../src/http/answer';
import { serverSettings } from '../../src/http/http.module';
import { HttpServer, HttpStats, type RouteRequest } from '../../src/http/server';
import { TurnClock } from '../../src/http/turn-clock';
import { request } from '../support/app';

let pub: HttpServer;
let adm: HttpServer;
let base: string;
let admin: string;
const seen: RouteRequest[] = [];
const errors: object[] = [];
const stats = new HttpStats();
let fastifyServed = 0;

before(async () => {
  const settings = serverSettings(loadConfig({ BODY_LIMIT_BYTES: '1024', ADMIN_PORT: '0', ADMIN_HOST: '127.0.0.1' }));
  const deps = { stats, turns: new TurnClock(), accessLog: null, errors: { error: (o: object) => errors.push(o) } };
  pub = new HttpServer(settings, deps);
  adm = new HttpServer(settings, deps);
  const echo = {
    handle: (r: RouteRequest): HttpAnswer => (seen.push(r), { status: 200, headers: {}, payload: r.body ?? new URLSearchParams(r.query as Record<string, string>).toString() }),
  };
  pub.route({ method: 'POST', path: '/echo', route: echo });
  pub.route({ method: 'GET', path: '/t/', prefix: true, route: echo });
  adm.route({ method: 'POST', path: '/admin-only', route: echo });
  pub.route({
    method: 'POST',
    path: '/throws',
    route: {
      handle: () => {
        throw new TypeError('a bug');
      },
    },
  });
  pub.route({ method: 'GET', path: '/rejects', route: { handle: () => Promise.reject(new Error('async bug')) } });
  pub.route({ method: 'GET', path: '/bad-header', route: { handle: () => ({ status: 302, headers: { location: 'https://x.example/页面' }, payload: undefined }) } });
  pub.route({
    method: 'POST',
    path: '/counted',
    route: { handle: () => errorAnswer(200, 'x'), refused: (status, reason) => errorAnswer(status, `route says: ${reason}`) },
  });
  pub.route({ method: 'GET', path: '/empty', route: { handle: () => ({ status: 200, headers: { 'x-a': '1' }, payload: undefined }) } });
  pub.route({ method: 'GET', path: '/no-content', route: { handle: () => ({ status: 204, headers: { 'content-type': 'text/plain' }, payload: 'dropped' }) } });
  pub.route({ method: 'GET', path: '/text', route: { handle: () => ({ status: 200, headers: {}, payload: 'plain' }) } });
  pub.route({ method: 'GET', path: '/json-text', route: { handle: () => ({ status: 200, headers: { 'content-type': 'application/json' }, payload: '{"a":1}' }) } });
  // Counts what Fastify serves: every request.
  pub.fastify.addHook('onRequest', (_req, _reply, done) => {
    fastifyServed++;
    done();
  });
  base = await pub.listen(0, '127.0.0.1');
  admin = await adm.listen(0, '127.0.0.1');
});
after(async () => {
  await pub.close();
  await adm.close();
});

describe('HttpServer', () => {
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
    assert.equal(stats.sendErrors, 1);
    assert.equal((await request(`${base}/echo`, { body: 'alive' })).body.toString(), 'alive');
  });
  it('serves every request through Fastify, one path whatever the Content-Type or the spelling of the path', async () => {
    /** Status, body and headers but the date (Node's), as a comparable record. */
    const seenAs = (r: { status: number; headers: Record<string, unknown>; body: Buffer }): unknown => {
      const headers = { ...r.headers };
      delete headers.date;
      return { status: r.status, headers, body: r.body.toString('base64') };
    };
    const bodies: Array<[string, string | Buffer, Record<string, string>]> = [
      ['/echo', '{"a":1}', {}],
      ['/echo', zlib.gzipSync('{"zipped":1}'), { 'content-encoding': 'gzip' }],
      ['/echo', 'x'.repeat(2048), {}],
      ['/echo', '', {}],
      ['/echo', 'not gzip', { 'content-encoding': 'gzip' }],
      ['/counted', Buffer.alloc(2048), {}],
      ['/throws', '{}', {}],
    ];
    for (const [path, body, headers] of bodies) {
      const before = fastifyServed;
      const json = await request(`${base}${path}`, { body, headers: { ...headers, 'content-type': 'application/json' } });
      const other = await request(`${base}${path}`, { body, headers: { ...headers, 'content-type': 'application/x-other' } });
      assert.equal(fastifyServed, before + 2, `${path}: both through Fastify`);
      assert.deepEqual(seenAs(json), seenAs(other), path);
    }
    for (const [path, encoded] of [
      ['/t/win?p=1&s=2', '/t/w%69n?p=1&s=2'],
      ['/empty', '/%65mpty'],
      ['/no-content', '/no-cont%65nt'],
      ['/text', '/t%65xt'],
      ['/json-text', '/js%6Fn-text'],
      ['/rejects', '/r%65jects'],
    ]) {
      const before = fastifyServed;
      const plain = await request(`${base}${path}`, { method: 'GET' });
      const spelled = await request(`${base}${encoded}`, { method: 'GET' });
      assert.equal(fastifyServed, before + 2, `${path}: both through Fastify`);
      assert.deepEqual(seenAs(plain), seenAs(spelled), path);
    }
    // Fastify's reply rules: no body on a 204, its charset after a JSON type, a type for a bare text.
    const noContent = await request(`${base}/no-content`, { method: 'GET' });
    assert.equal(noContent.status, 204);
    assert.equal(noContent.body.length, 0);
    assert.equal((await request(`${base}/json-text`, { method: 'GET' })).headers['content-type'], 'application/json; charset=utf-8');
    assert.equal((await request(`${base}/text`, { method: 'GET' })).headers['content-type'], 'text/plain; charset=utf-8');
    assert.equal((await request(`${base}/text`, { method: 'HEAD' })).status, 200);
  });
});
