/**
 * Hostile bid requests: every limit answers 400 with a reason, the work and the output stay bounded,
 * nothing answers 5xx, and every request that carries an id still gets exactly one request and one
 * response record in the bid log.
 */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import { REQUEST_LIMITS } from '../../src/openrtb/limits';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';

let t: TestApp;
let bidUrl: string;
before(async () => {
  t = await startTestApp({ LOG_FLUSH_INTERVAL_MS: '50', LOG_REDIS_KEY: 'limits-log', LOG_REQUEST_SAMPLE: '1' });
  bidUrl = `${t.url}/openrtb2/bid`;
});
after(async () => {
  await t.close();
});

const site = { domain: 'a.example', publisher: { name: 'A' } };
const imp = (id: string, extra: Record<string, unknown> = {}) => ({ id, banner: { w: 300, h: 250 }, ...extra });

function post(body: unknown): Promise<{ status: number; text: string; bytes: number }> {
  return request(bidUrl, { body: typeof body === 'string' ? body : JSON.stringify(body) }).then((r) => ({
    status: r.status,
    text: r.body.toString(),
    bytes: r.body.length,
  }));
}

function nested(depth: number): string {
  return `{"id":"deep","imp":[{"id":"1","banner":{"w":300,"h":250}}],"ext":${'['.repeat(depth)}${']'.repeat(depth)}}`;
}

const cases: Array<{ name: string; body: () => unknown; reason: RegExp }> = [
  { name: '3000 imps', body: () => ({ id: 'many-imps', imp: Array.from({ length: 3000 }, (_, i) => imp(String(i))), site }), reason: /imp: at most \d+ entries/ },
  { name: 'a 100 KB request id', body: () => ({ id: 'x'.repeat(100_000), imp: [imp('1')], site }), reason: /id: at most \d+ characters/ },
  { name: 'a 900 KB request id with 100 imps', body: () => ({ id: 'y'.repeat(900_000), imp: Array.from({ length: 100 }, (_, i) => imp(String(i))), site }), reason: /id: at most/ },
  { name: 'a long imp id', body: () => ({ id: 'long-imp', imp: [imp('i'.repeat(5000))], site }), reason: /imp\[0\]\.id: at most/ },
  { name: 'a long publisher name', body: () => ({ id: 'long-pub', imp: [imp('1')], site: { domain: 'a.example', publisher: { name: 'p'.repeat(5000) } } }), reason: /publisher\.name: at most/ },
  { name: 'a long deal id', body: () => ({ id: 'long-deal', imp: [imp('1', { pmp: { deals: [{ id: 'd'.repeat(5000) }] } })], site }), reason: /deals\[0\]\.id: at most/ },
  {
    name: '8000 formats',
    body: () => ({ id: 'formats', imp: [{ id: '1', banner: { format: Array.from({ length: 8000 }, (_, i) => ({ w: 300 + i, h: 250 })) } }], site }),
    reason: /format: at most \d+ entries/,
  },
  { name: '8000 badv entries', body: () => ({ id: 'badv', imp: [imp('1')], badv: Array.from({ length: 8000 }, (_, i) => `d${i}.example`), site }), reason: /badv: at most/ },
  { name: '8000 bcat entries', body: () => ({ id: 'bcat', imp: [imp('1')], bcat: Array.from({ length: 8000 }, (_, i) => `IAB${i}`), site }), reason: /bcat: at most/ },
  { name: '8000 bapp entries', body: () => ({ id: 'bapp', imp: [imp('1')], bapp: Array.from({ length: 8000 }, (_, i) => `com.app${i}`), site }), reason: /bapp: at most/ },
  { name: '5000 battr entries', body: () => ({ id: 'battr', imp: [{ id: '1', banner: { w: 300, h: 250, battr: Array.from({ length: 5000 }, (_, i) => i) } }], site }), reason: /battr: at most/ },
  { name: '5000 deals', body: () => ({ id: 'deals', imp: [imp('1', { pmp: { deals: Array.from({ length: 5000 }, (_, i) => ({ id: `d${i}` })) } })], site }), reason: /deals: at most/ },
  { name: 'JSON nested 100 000 deep', body: () => nested(100_000), reason: /nested deeper than \d+/ },
  { name: 'a size key that would collide (h over 65535)', body: () => ({ id: 'size', imp: [{ id: '1', banner: { w: 299, h: 65786 } }], site }), reason: /at most 65535/ },
];

describe('request limits: 400 with a reason, and the bid log still has both records', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const r = await post(c.body());
      assert.equal(r.status, 400, r.text.slice(0, 200));
      assert.match((JSON.parse(r.text) as { error: string }).error, c.reason);
    });
  }
  it('every refused request that carried a readable id has exactly one request and one response record', async () => {
    const ids = ['many-imps', 'long-imp', 'long-pub', 'long-deal', 'formats', 'badv', 'bcat', 'bapp', 'battr', 'deals', 'size'];
    let records: Array<{ type: string; id: string; status?: number }> = [];
    await until('the refused requests are logged', async () => {
      records = (await readRedisLog(t.redis.url, 'limits-log')).records;
      return ids.every((id) => records.some((x) => x.type === 'response' && x.id === id));
    });
    for (const id of ids) {
      assert.equal(records.filter((x) => x.type === 'request' && x.id === id).length, 1, `request ${id}`);
      const res = records.filter((x) => x.type === 'response' && x.id === id);
      assert.equal(res.length, 1, `response ${id}`);
      assert.equal(res[0].status, 400);
    }
    // An over-long id is refused before it is copied anywhere: it is logged cut to the limit.
    const longId = records.find((x) => x.type === 'request' && x.id.startsWith('xxxx'));
    assert.ok(longId === undefined || longId.id.length <= REQUEST_LIMITS.idChars);
  });
});

describe('bounded output', () => {
  it('the largest valid request gives a response within a fixed multiple of the limits', async () => {
    const n = REQUEST_LIMITS.imps;
    const body = { id: 'i'.repeat(REQUEST_LIMITS.idChars), imp: Array.from({ length: n }, (_, i) => imp(`${i}`.padEnd(REQUEST_LIMITS.idChars, '-'))), site };
    const r = await post(body);
    assert.equal(r.status, 200);
    // Each bid stays a few KB whatever the ids: nothing in it grows with the request beyond the limits.
    assert.ok(r.bytes / n < 8_000, `${r.bytes} bytes for ${n} bids`);
  });
});

describe('the bid log holds what JSON readers can load', () => {
  it('a request with duplicate keys is logged once, as one valid JSON object', async () => {
    const raw = '{"id":"dup","id":"dup","imp":[{"id":"1","banner":{"w":300,"h":250}}],"site":{"domain":"a.example","domain":"b.example"}}';
    const r = await post(raw);
    assert.ok(r.status === 200 || r.status === 204);
    let line: string | undefined;
    await until('logged', async () => {
      const log = await readRedisLog(t.redis.url, 'limits-log');
      const i = log.records.findIndex((x) => x.type === 'request' && x.id === 'dup');
      line = i === -1 ? undefined : log.lines[i];
      return line !== undefined;
    });
    // The line as written, not as a JSON reader that keeps the last duplicate would see it.
    // Within `req` (the compact fields after it name the domain once more).
    assert.equal(line!.slice(line!.indexOf('"req":'), line!.indexOf(',"inv":')).split('"domain"').length, 2, line);
    assert.equal(line!.split('"id":"dup"').length, 3, line); // the record's id and the request's, once each
    assert.deepEqual((JSON.parse(line!) as { req: { site: unknown } }).req.site, { domain: 'b.example' });
  });
});

describe('hostile shapes: no 5xx, the worker keeps serving', () => {
  const shapes: Array<{ name: string; send: () => Promise<number> }> = [
    { name: 'nesting 400 000 deep', send: () => post(nested(400_000)).then((r) => r.status) },
    { name: '20 000 imps', send: () => post({ id: 'h1', imp: Array.from({ length: 20_000 }, (_, i) => imp(String(i))) }).then((r) => r.status) },
    {
      name: '50 000 formats',
      send: () => post({ id: 'h2', imp: [{ id: '1', banner: { format: Array.from({ length: 50_000 }, () => ({ w: 300, h: 250 })) } }] }).then((r) => r.status),
    },
    { name: 'long ids everywhere', send: () => post({ id: 'z'.repeat(500_000), imp: [imp('q'.repeat(400_000))] }).then((r) => r.status) },
    {
      name: 'a 64 MiB gzip bomb',
      send: () =>
        request(bidUrl, { body: zlib.gzipSync(Buffer.alloc(64 * 1024 * 1024, 0x20)), headers: { 'content-encoding': 'gzip' } }).then((r) => r.status),
    },
    {
      name: 'a truncated body',
      send: () =>
        new Promise<number>((resolve) => {
          const u = new URL(bidUrl);
          const s = net.connect(Number(u.port), u.hostname, () => {
            s.end('POST /openrtb2/bid HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\n\r\n{"id":"trunc","imp":[');
          });
          s.on('error', () => resolve(0));
          s.on('close', () => resolve(0));
          s.resume();
        }),
    },
  ];
  for (const s of shapes) {
    it(s.name, async () => {
      const status = await s.send();
      assert.ok(status < 500, `status ${status}`);
    });
  }
  it('a good request still bids afterwards', async () => {
    const r = await post({ id: 'good-after', imp: [imp('1')], site });
    assert.equal(r.status, 200);
  });
  it('the limits are the documented ones', () => {
    for (const [k, v] of Object.entries(REQUEST_LIMITS)) assert.ok(Number.isInteger(v) && v > 0, k);
  });
});
