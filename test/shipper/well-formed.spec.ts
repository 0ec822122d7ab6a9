// Hostile strings against the bid log's way out: lone surrogates, NUL and invalid escapes in every
// string field the log keeps, through the real bidder (in-process, real Redis) and the real shipper
// process; lines a store refuses and frames that keep failing never hold the others back.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isUtf8 } from 'node:buffer';
import { after, before, describe, it } from 'node:test';
import * as zlib from 'node:zlib';
import type Redis from 'ioredis';
import { loadShipperConfig } from '../../src/shipper/shipper.config';
import { ParquetStore } from '../../src/shipper/parquet-store';
import { ShipperMetrics } from '../../src/shipper/shipper.metrics';
import { ShipperRedis } from '../../src/shipper/shipper-redis';
import { FRAME_TRIES, ShipperService } from '../../src/shipper/shipper.service';
import { request, startTestApp, type TestApp } from '../support/app';
import { startTestRedis, type TestRedis } from '../support/redis';
import { bidRequest } from '../log/support';
import { assertShippedOnce, frameOf, get, metric, readShipped, redisClient, spawnShipper, syntheticFrames, tmpDir, until, untilDrained } from './support';

declare global {
  // ES2024 (Node 20+); the project's TypeScript lib stops at ES2023.
  interface String {
    isWellFormed(): boolean;
    toWellFormed(): string;
  }
}

/** What a string field may hold that a strict JSON reader refuses, or that JavaScript turns into such. */
const HOSTILE: Readonly<Record<string, string>> = {
  loneHigh: 'a\ud800b',
  loneLow: 'a\udc00b',
  loneHighAtEnd: 'ab\udbff',
  reversedPair: 'a\udc00\ud800b',
  nul: 'a\u0000b',
  controls: 'a\u0001\u001f\u007fb',
  escapedBackslashU: 'a\\ud800b',
  pair: 'a\ud83d\ude00b',
};

/** Every string field of the bid request the log keeps (src/privacy/redact.ts's allowlist), as paths into bidRequest(). */
const FIELDS: ReadonlyArray<readonly (string | number)[]> = [
  ['id'],
  ['imp', 0, 'id'],
  ['imp', 0, 'tagid'],
  ['imp', 0, 'bidfloorcur'],
  ['imp', 0, 'displaymanager'],
  ['imp', 0, 'ext', 'gpid'],
  ['imp', 0, 'banner', 'id'],
  ['site', 'id'],
  ['site', 'name'],
  ['site', 'domain'],
  ['site', 'page'],
  ['site', 'ref'],
  ['site', 'search'],
  ['site', 'keywords'],
  ['site', 'cat', 0],
  ['site', 'publisher', 'id'],
  ['site', 'publisher', 'name'],
  ['site', 'publisher', 'domain'],
  ['site', 'content', 'title'],
  ['site', 'content', 'url'],
  ['device', 'ua'],
  ['device', 'make'],
  ['device', 'model'],
  ['device', 'os'],
  ['device', 'osv'],
  ['device', 'language'],
  ['device', 'carrier'],
  ['device', 'ifa'],
  ['device', 'geo', 'country'],
  ['device', 'geo', 'city'],
  ['device', 'geo', 'zip'],
  ['user', 'id'],
  ['user', 'buyeruid'],
  ['user', 'keywords'],
  ['user', 'consent'],
  ['regs', 'us_privacy'],
  ['regs', 'gpp'],
  ['source', 'tid'],
  ['cur', 0],
  ['bcat', 0],
  ['badv', 0],
  ['wseat', 0],
];

function setPath(o: Record<string, unknown>, p: readonly (string | number)[], v: unknown): void {
  let cur = o as Record<string | number, unknown>;
  for (let i = 0; i < p.length - 1; i++) {
    const k = p[i];
    if (typeof cur[k] !== 'object' || cur[k] === null) cur[k] = typeof p[i + 1] === 'number' ? [] : {};
    cur = cur[k] as Record<string | number, unknown>;
  }
  cur[p[p.length - 1]] = v;
}

/** Every string in a parsed JSON value (keys too). */
function strings(v: unknown, out: string[] = []): string[] {
  if (typeof v === 'string') out.push(v);
  else if (Array.isArray(v)) for (const e of v) strings(e, out);
  else if (typeof v === 'object' && v !== null) {
    for (const [k, e] of Object.entries(v)) {
      out.push(k);
      strings(e, out);
    }
  }
  return out;
}

/** Every line of every frame of `key`: each frame valid UTF-8, each line JSON whose strings are all well-formed. */
async function assertWellFormedLines(redis: Redis, key: string): Promise<Array<{ type: string; id: string }>> {
  const records: Array<{ type: string; id: string }> = [];
  const problems: string[] = [];
  for (const f of await redis.lrangeBuffer(key, 0, -1)) {
    const bytes = zlib.zstdDecompressSync(f);
    assert.ok(isUtf8(bytes), 'a frame is valid UTF-8');
    for (const line of bytes.toString('utf8').split('\n')) {
      if (line === '') continue;
      const rec = JSON.parse(line) as { type: string; id: string };
      const bad = strings(rec).filter((s) => !s.isWellFormed());
      if (bad.length > 0) problems.push(`${rec.type} ${JSON.stringify(rec.id)}: ${bad.length} strings with a lone surrogate, e.g. ${JSON.stringify(bad[0])}`);
      records.push(rec);
    }
  }
  assert.deepEqual(problems.slice(0, 5), [], `${problems.length} records are not well-formed`);
  return records;
}

describe('hostile strings: every bid log record is well-formed, and reaches Parquet', () => {
  const KEY = 'wf-bid';
  let t: TestApp;
  let admin: Redis;
  const dirs: string[] = [];

  before(async () => {
    t = await startTestApp({ LOG_REDIS_KEY: KEY, LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'warn', WORKER_ID: 'wf', CAMPAIGNS_FILE: path.join(__dirname, '..', '..', '..', 'data', 'campaigns.demo.json') });
    admin = await redisClient(t.redis.url);
  });
  after(async () => {
    admin?.disconnect();
    await t?.close();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  it('lone surrogates, NUL, controls and invalid escapes in every string field the log keeps: each request still has both records, all well-formed, all in Parquet', async () => {
    const expected: string[] = [];
    let refused = 0;
    let n = 0;
    for (const field of FIELDS) {
      for (const [name, value] of Object.entries(HOSTILE)) {
        const id = `wf-${n++}`;
        const body = JSON.parse(bidRequest(id)) as Record<string, unknown>;
        setPath(body, field, field[0] === 'id' ? `${id}${value}` : value);
        const text = JSON.stringify(body);
        const r = await request(`${t.url}/openrtb2/bid`, { body: text, headers: { 'content-type': 'application/json' } });
        assert.ok([200, 204, 400].includes(r.status), `${field.join('.')} ${name}: ${r.status} ${r.body.toString()}`);
        expected.push((field[0] === 'id' ? `${id}${value}` : id).toWellFormed());
      }
      // An invalid escape and a raw control character are not JSON: a 400, no record (no id can be read).
      for (const bad of ['\\x41', '\\u12', '\\ud800\\u', '\u0000', '\\']) {
        const body = JSON.parse(bidRequest(`wf-bad-${n++}`)) as Record<string, unknown>;
        setPath(body, field, 'MARK');
        const text = JSON.stringify(body).replace('MARK', bad);
        const r = await request(`${t.url}/openrtb2/bid`, { body: text, headers: { 'content-type': 'application/json' } });
        assert.equal(r.status, 400, `${field.join('.')} ${JSON.stringify(bad)}: ${r.status}`);
        refused++;
      }
    }
    assert.ok(refused > 0);
    // The final flush puts every record in Redis.
    await t.app.close();
    const records = await assertWellFormedLines(admin, KEY);
    const count = new Map<string, number>();
    for (const r of records) if (r.type === 'request' || r.type === 'response') count.set(`${r.type}:${r.id}`, (count.get(`${r.type}:${r.id}`) ?? 0) + 1);
    const missing = expected.flatMap((id) => ['request', 'response'].filter((type) => count.get(`${type}:${id}`) !== 1).map((type) => `${type} ${JSON.stringify(id)}`));
    assert.deepEqual(missing.slice(0, 5), [], `${missing.length} records missing`);

    // The shipper stores every record (none refused, none left in Redis).
    const shipDir = tmpDir('ship-wf-');
    dirs.push(shipDir);
    const s = spawnShipper({ REDIS_URL: t.redis.url, LOG_REDIS_KEY: KEY, SHIP_DIR: shipDir, SHIP_ID: 'wf' });
    try {
      await untilDrained(admin, KEY, 60_000);
      const m = await get(`${await s.adminUrl()}/metrics`);
      assert.equal(metric(m.body, 'shipper_dead_letter_lines_total'), 0);
      assert.equal(metric(m.body, 'shipper_invalid_lines_total'), 0);
    } finally {
      await s.stop();
    }
    const rows = await readShipped(shipDir, 'type, id');
    assert.equal(rows.length, records.length, 'every record in Parquet');
    await assertShippedOnce(shipDir, expected);
  });
});

describe('hostile lines: what the store refuses is kept apart, the rest is stored', () => {
  let redis: TestRedis;
  let admin: Redis;
  const dirs: string[] = [];
  before(async () => {
    redis = await startTestRedis();
    admin = await redisClient(redis.url);
  });
  after(async () => {
    admin.disconnect();
    await redis.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  function dir(): string {
    const d = tmpDir('ship-wf-');
    dirs.push(d);
    return d;
  }

  it('lines of another writer with escaped lone surrogates (any field), NUL, invalid escapes and invalid UTF-8: dead letters with the reason, counted; every other record stored', async () => {
    const key = 'wf-lines';
    const shipDir = dir();
    const ts = Date.now();
    const refused = [
      `{"ts":${ts},"type":"request","worker":"0","name":"p","id":"x\\ud800","req":{"id":"x\\ud800"}}`,
      `{"ts":${ts},"type":"request","worker":"0","name":"p\\udc00","id":"lone-name","req":{}}`,
      `{"ts":${ts},"type":"request","worker":"0","name":"p","id":"lone-ua","req":{"device":{"ua":"Mozilla \\udbff"}}}`,
      `{"ts":${ts},"type":"response","worker":"0","name":"p","id":"lone-res","status":200,"res":{"id":"a","seatbid":[{"bid":[{"id":"b","impid":"\\ud83d"}]}]}}`,
      `{"ts":${ts},"type":"win","worker":"0","name":"p","id":"lone-notice","bid":"b","imp":"\\udfff\\ud800","crid":"k","cid":"c"}`,
    ];
    // Not JSON at all: stored with type NULL, as before (and well-formed once wrapped).
    const notJson = [`{"ts":${ts},"type":"request","id":"nul\u0000raw"}`, `{"ts":${ts},"type":"request","id":"bad\\xescape"}`, `{"ts":${ts},"type":"request","id":"trunc\\u12"}`];
    const fine = [`{"ts":${ts},"type":"imp","worker":"0","name":"p","id":"nul-escaped\\u0000","bid":"b"}`, `{"ts":${ts},"type":"imp","worker":"0","name":"p","id":"pair\\ud83d\\ude00","bid":"b"}`, `{"ts":${ts},"type":"imp","worker":"0","name":"p","id":"literal\\\\ud800","bid":"b"}`];
    const good = syntheticFrames(3, 20);
    const badUtf8 = Buffer.concat([Buffer.from(`{"ts":${ts},"type":"click","worker":"0","name":"p","id":"bad-utf8-`), Buffer.from([0xed, 0xa0, 0x80, 0xff]), Buffer.from('"}\n')]);
    const mixed = frameOf([...refused.slice(0, 3), ...fine, ...notJson, ...refused.slice(3)]);
    const utf8Frame = zlib.zstdCompressSync(badUtf8);
    await admin.rpush(key, good.frames[0], mixed, good.frames[1], utf8Frame, good.frames[2]);
    const s = spawnShipper({ REDIS_URL: redis.url, LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'wf-lines' });
    let metrics = '';
    try {
      await untilDrained(admin, key);
      metrics = (await get(`${await s.adminUrl()}/metrics`)).body;
    } finally {
      await s.stop();
    }
    const rows = await readShipped(shipDir, 'type, id, raw');
    assert.ok(rows.every((r) => strings(r).every((x) => x.isWellFormed())));
    const goodRows = rows.filter((r) => r.type === 'request' || r.type === 'response');
    assert.equal(goodRows.length, good.ids.length * 2, 'every record of the good frames');
    assert.deepEqual(
      rows.filter((r) => r.type === 'imp').map((r) => r.id).sort(),
      ['literal\\ud800', 'nul-escaped\u0000', 'pair\ud83d\ude00'],
    );
    assert.equal(rows.filter((r) => r.type === null).length, notJson.length);
    const click = rows.find((r) => r.type === 'click');
    assert.ok(click && typeof click.id === 'string' && click.id.startsWith('bad-utf8-') && click.id.includes('\ufffd'), JSON.stringify(click));
    assert.equal(rows.length, goodRows.length + fine.length + notJson.length + 1);

    const letters = fs.readdirSync(path.join(shipDir, 'dead-letters'));
    assert.equal(letters.length, 1);
    const kept = fs
      .readFileSync(path.join(shipDir, 'dead-letters', letters[0]), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { frame: string; reason: string; line: string });
    assert.deepEqual(kept.map((k) => k.line).sort(), [...refused].sort(), 'each refused line as it was');
    assert.ok(kept.every((k) => /surrogate/.test(k.reason) && /^[0-9a-f]{32}$/.test(k.frame)), JSON.stringify(kept[0]));
    assert.equal(metric(metrics, 'shipper_dead_letter_lines_total'), refused.length);
    assert.equal(metric(metrics, 'shipper_frames_set_aside_total'), 0);
  });

  it(`a frame that keeps its batch from loading is set aside after ${FRAME_TRIES} tries (bad-frames/ with its reason), the rest is stored`, async () => {
    const key = 'wf-frame';
    const shipDir = dir();
    const good = syntheticFrames(4, 10);
    // Its lines load one by one (so none is a dead letter): the frame as a whole is what fails.
    const poison = frameOf(['p1', 'p2', 'p3'].map((id) => JSON.stringify({ ts: Date.now(), type: 'imp', id })));
    const { frameHash } = await import('../../src/shipper/batch');
    const poisonHash = frameHash(poison);
    await admin.rpush(key, good.frames[0], good.frames[1], poison, good.frames[2], good.frames[3]);
    // The store refuses whatever holds that frame, however it is staged: a frame DuckDB cannot read, whatever the cause.
    class Refusing extends ParquetStore {
      loads = 0;
      protected override async load(files: readonly string[], maxRecordBytes?: number): Promise<void> {
        this.loads++;
        if (files.some((f) => path.basename(f).startsWith(poisonHash))) throw new Error('Invalid Input Error: refused for the test');
        await super.load(files, maxRecordBytes);
      }
    }
    const config = loadShipperConfig({ REDIS_URL: redis.url, LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'wf-frame', SHIP_INTERVAL_MS: '50', LOG_LEVEL: 'silent' });
    const store = new Refusing({ dir: shipDir, shipperId: config.shipperId, threads: 1, memoryMb: 256 });
    const metrics = new ShipperMetrics();
    const service = new ShipperService(config, new ShipperRedis(config.redis, config.shipperId, 'test-token'), store, metrics);
    await service.onModuleInit();
    service.start();
    try {
      await untilDrained(admin, key, 60_000);
      await until('the batch stored', async () => (await readShipped(shipDir, 'id')).length === good.ids.length * 2, 10_000);
    } finally {
      await service.stop();
    }
    await assertShippedOnce(shipDir, good.ids);
    assert.deepEqual(fs.readdirSync(path.join(shipDir, 'bad-frames')).sort(), [`${poisonHash}.reason`, `${poisonHash}.zst`]);
    assert.deepEqual(fs.readFileSync(path.join(shipDir, 'bad-frames', `${poisonHash}.zst`)), poison);
    assert.match(fs.readFileSync(path.join(shipDir, 'bad-frames', `${poisonHash}.reason`), 'utf8'), /refused for the test/);
    const text = await metrics.render();
    assert.equal(metric(text, 'shipper_frames_set_aside_total'), 1);
    assert.equal(metric(text, 'shipper_errors_total{kind="load"}'), FRAME_TRIES - 1);
  });
});
