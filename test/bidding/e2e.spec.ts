/** End-to-end over real HTTP against the real app and a real Redis: transport, bad input, fuzzing. */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { PayloadCodec, trackingKeys } from '../../src/tracking/payload';
import { request, startTestApp, type TestApp } from '../support/app';
import { sampleRequests } from '../support/samples';
import { validateBidResponse } from '../support/validate';

let t: TestApp;
let bidUrl: string;
before(async () => {
  t = await startTestApp();
  bidUrl = `${t.url}/openrtb2/bid`;
});
after(async () => {
  await t.close();
});

const banner = { id: 'e2e-1', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example', publisher: { name: 'A' } } };

describe('transport', () => {
  it('answers a bid without Content-Type, echoing x-openrtb-version', async () => {
    const r = await request(bidUrl, { body: JSON.stringify(banner), headers: { 'x-openrtb-version': '2.6' } });
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.headers['x-openrtb-version'], '2.6');
    assert.match(String(r.headers['content-type']), /application\/json/);
    assert.deepEqual(validateBidResponse(banner, JSON.parse(r.body.toString()), { codec: new PayloadCodec(trackingKeys(t.config)) }), []);
  });
  it('accepts a gzip body and gzips the answer when asked', async () => {
    const r = await request(bidUrl, {
      body: zlib.gzipSync(JSON.stringify(banner)),
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip', 'accept-encoding': 'gzip, deflate' },
    });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-encoding'], 'gzip');
    const res = JSON.parse(zlib.gunzipSync(r.body).toString()) as { id: string };
    assert.equal(res.id, 'e2e-1');
  });
  it('does not gzip when not asked', async () => {
    const r = await request(bidUrl, { body: JSON.stringify(banner) });
    assert.equal(r.headers['content-encoding'], undefined);
    assert.equal((JSON.parse(r.body.toString()) as { id: string }).id, 'e2e-1');
  });
  it('serves health', async () => {
    assert.equal((await request(`${t.url}/health/live`, { method: 'GET' })).status, 200);
    assert.equal((await request(`${t.url}/health/ready`, { method: 'GET' })).status, 200);
  });
});

/** Writes `head` (and nothing more unless `rest`) on a new connection and reads until the server closes or answers. */
function rawExchange(url: string, head: string, rest?: (s: net.Socket) => void): Promise<string> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname, () => {
      s.write(head);
      rest?.(s);
    });
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      got += d;
      // One whole answer (headers and a Content-Length body) is enough.
      const end = got.indexOf('\r\n\r\n');
      const len = /content-length: (\d+)/i.exec(got);
      if (end >= 0 && len && got.length >= end + 4 + Number(len[1])) {
        s.destroy();
        resolve(got);
      }
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

describe('the bid route (src/bidding/bid-route.ts, behind the HTTP front)', () => {
  it('takes the bid path with a query string', async () => {
    const r = await request(`${bidUrl}?exchange=x`, { body: JSON.stringify(banner) });
    assert.equal(r.status, 200, r.body.toString());
    assert.deepEqual(validateBidResponse(banner, JSON.parse(r.body.toString()), { codec: new PayloadCodec(trackingKeys(t.config)) }), []);
  });
  it('other methods and paths are not the bid route', async () => {
    assert.equal((await request(bidUrl, { method: 'GET' })).status, 404);
    assert.equal((await request(`${bidUrl}/`, { body: JSON.stringify(banner) })).status, 404);
    assert.equal((await request(`${t.url}/openrtb2/bidder`, { body: JSON.stringify(banner) })).status, 404);
  });
  it('refuses a declared Content-Length over the limit with 413 before the body is sent', async () => {
    const got = await rawExchange(t.url, `POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: ${t_limit() + 1}\r\n\r\n`);
    assert.match(got, /^HTTP\/1\.1 413 /);
    assert.match(got, /\r\nconnection: close\r\n/i);
    assert.match(got, /"error":"body over \d+ bytes"/);
  });
  it('refuses a chunked body that grows over the limit with 413', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const r = await new Promise<number>((resolve, reject) => {
      let answered = false;
      const req = http.request(bidUrl, { method: 'POST', headers: { 'transfer-encoding': 'chunked' } }, (res) => {
        answered = true;
        res.resume();
        assert.equal(res.headers.connection, 'close');
        resolve(res.statusCode ?? 0);
      });
      // Once answered, the server closes the connection: writes still queued may fail then.
      req.on('error', (e) => {
        if (!answered) reject(e);
      });
      for (let sent = 0; sent <= t_limit(); sent += chunk.length) req.write(chunk);
      req.end();
    });
    assert.equal(r, 413);
  });
  it('answers 400 when the body is shorter than its Content-Length, and keeps serving after clients that vanish mid-body', async () => {
    // The client half-closes after 10 of 100 declared bytes: the body ends short.
    const short = await rawExchange(t.url, 'POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"id":"x",', (s) => s.end());
    // (Node's parser sees the connection end inside the body; the client-error handler answers.)
    assert.match(short, /^HTTP\/1\.1 400 /);
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve) => {
        const u = new URL(t.url);
        const s = net.connect(Number(u.port), u.hostname, () => {
          s.write('POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{"id":');
          setTimeout(() => {
            s.destroy();
            resolve();
          }, 20);
        });
        s.on('error', () => resolve());
      });
    }
    const r = await request(bidUrl, { body: JSON.stringify(banner) });
    assert.equal(r.status, 200);
  });
});

describe('bad input gets 400/413 with a reason, never a 5xx', () => {
  const big = Buffer.alloc(t_limit() + 10, 0x20);
  const cases: Array<{ name: string; body: () => Buffer | string; headers?: Record<string, string>; status: number; reason: RegExp }> = [
    { name: 'malformed JSON', body: () => '{"id": "x", "imp": [', status: 400, reason: /malformed JSON/ },
    { name: 'empty body', body: () => '', headers: { 'content-type': 'application/json' }, status: 400, reason: /empty body/ },
    { name: 'JSON array', body: () => '[1,2]', status: 400, reason: /JSON object/ },
    { name: 'JSON string', body: () => '"hello"', status: 400, reason: /JSON object/ },
    { name: 'wrong types', body: () => JSON.stringify({ id: 'x', imp: [{ id: '1', banner: { format: 'big' } }] }), status: 400, reason: /format must be an array/ },
    { name: 'huge body', body: () => big, status: 413, reason: /./ },
    { name: 'gzip bomb', body: () => zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20)), headers: { 'content-encoding': 'gzip' }, status: 413, reason: /after decompression/ },
    { name: 'corrupt gzip', body: () => 'definitely not gzip', headers: { 'content-encoding': 'gzip' }, status: 400, reason: /not valid gzip/ },
    { name: 'form content type', body: () => 'a=1&b=2', headers: { 'content-type': 'application/x-www-form-urlencoded' }, status: 400, reason: /malformed JSON/ },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const r = await request(bidUrl, { body: c.body(), headers: c.headers });
      assert.equal(r.status, c.status, r.body.toString().slice(0, 200));
      const msg = JSON.stringify(JSON.parse(r.body.toString()));
      assert.match(msg, c.reason);
    });
  }
});

function t_limit(): number {
  return 1024 * 1024;
}

/** Deterministic PRNG (mulberry32) so a failing mutation can be reproduced from its index. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = a;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

const WEIRD: unknown[] = [null, 0, -1, 1e308, -0.5, '', 'x', '1', 'NaN', true, false, [], [null], {}, { a: 1 }, [1, 'a', {}], '\u0000', 'é漢字', 2 ** 53 + 2];

function mutate(value: unknown, rand: () => number): unknown {
  let copy = JSON.parse(JSON.stringify(value)) as unknown;
  const n = 1 + Math.floor(rand() * 4);
  for (let k = 0; k < n; k++) {
    copy = JSON.parse(JSON.stringify(copy)) as unknown; // a plain tree again: no shared nodes between steps
    // Walk to a random node.
    let parent: Record<string, unknown> | unknown[] | null = null;
    let key: string | number | null = null;
    let node: unknown = copy;
    const depth = Math.floor(rand() * 6);
    for (let d = 0; d < depth; d++) {
      if (typeof node !== 'object' || node === null) break;
      const keys: Array<string | number> = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
      if (keys.length === 0) break;
      key = keys[Math.floor(rand() * keys.length)]!;
      parent = node as Record<string, unknown>;
      node = (node as Record<string | number, unknown>)[key];
    }
    if (parent === null || key === null) continue;
    const op = rand();
    const p = parent as Record<string | number, unknown>;
    if (op < 0.5) p[key] = WEIRD[Math.floor(rand() * WEIRD.length)];
    else if (op < 0.7) delete p[key];
    else if (op < 0.85) p[key] = typeof node === 'string' ? JSON.stringify(node) : String(node);
    else p[key] = [node, node];
  }
  return copy;
}

describe('fuzz: 10 000 randomly mutated sample requests', () => {
  it('never answers 5xx, and every 200 is a valid bid response', async () => {
    const samples = sampleRequests();
    const rand = rng(20261122);
    const codec = new PayloadCodec(trackingKeys(t.config));
    const counts: Record<number, number> = {};
    const total = 10_000;
    let next = 0;
    const failures: string[] = [];
    async function worker(): Promise<void> {
      while (next < total) {
        const i = next++;
        const s = samples[Math.floor(rand() * samples.length)];
        const m = mutate(s.request, rand);
        let body = JSON.stringify(m) ?? 'null';
        if (rand() < 0.05) body = body.slice(0, Math.floor(rand() * body.length)); // truncated JSON
        const r = await request(bidUrl, { body });
        counts[r.status] = (counts[r.status] ?? 0) + 1;
        if (r.status >= 500) failures.push(`#${i} ${s.name}: ${r.status} ${r.body.toString().slice(0, 200)}`);
        else if (r.status === 200) {
          const problems = validateBidResponse(m as Record<string, unknown>, JSON.parse(r.body.toString()), { codec });
          if (problems.length > 0) failures.push(`#${i} ${s.name}: ${problems.join('; ')}`);
        } else if (r.status !== 204 && r.status !== 400) failures.push(`#${i} ${s.name}: unexpected ${r.status}`);
      }
    }
    await Promise.all(Array.from({ length: 8 }, worker));
    assert.deepEqual(failures.slice(0, 20), []);
    const sum = Object.values(counts).reduce((a, b) => a + b, 0);
    assert.equal(sum, total);
    assert.ok((counts[200] ?? 0) > 0 && (counts[400] ?? 0) > 0, `statuses: ${JSON.stringify(counts)}`);
  });
});

describe('debug explain endpoint', () => {
  it('is off by default, and never on the public port', async () => {
    assert.equal((await request(`${t.adminUrl}/debug/explain`, { body: JSON.stringify(banner) })).status, 404);
    assert.equal((await request(`${t.url}/debug/explain`, { body: JSON.stringify(banner) })).status, 404);
  });
  it('when on, names the filter that rejected each candidate', async () => {
    const d = await startTestApp({ DEBUG_ENDPOINTS: 'true' });
    try {
      const req = { ...banner, bcat: ['IAB1'], imp: [{ id: '1', bidfloor: 4, banner: { w: 300, h: 250 } }] };
      const r = await request(`${d.adminUrl}/debug/explain`, { body: JSON.stringify(req) });
      assert.equal(r.status, 200, r.body.toString());
      const out = JSON.parse(r.body.toString()) as { imps: Array<{ impid: string; candidates: Array<{ crid: string; reason: string | null }> }> };
      assert.equal(out.imps[0].impid, '1');
      const reasons = new Set(out.imps[0].candidates.map((c) => c.reason));
      assert.ok(out.imps[0].candidates.length > 10);
      assert.ok(reasons.has('size') && reasons.has('floor'), `reasons: ${[...reasons].join(',')}`);
    } finally {
      await d.close();
    }
  });
});
