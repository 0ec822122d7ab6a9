// Unit specs of the shipper's pieces without Redis: config, batch identity, backlog ts, backoff,
// report arguments, HTML rendering; and the Parquet store and its retention on real files.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { ConfigError } from '../../src/config/config';
import { firstRecordTs } from '../../src/bidlog/reader';
import { groupName, toBatch } from '../../src/shipper/batch';
import { ParquetStore, StorageError } from '../../src/shipper/parquet-store';
import { emptyFigures, type Report } from '../../src/shipper/report-data';
import { barChart, esc, renderHtml } from '../../src/shipper/report-html';
import { parseArgs, parseTime } from '../../src/shipper/report';
import { loadShipperConfig } from '../../src/shipper/shipper.config';
import { retryDelay } from '../../src/shipper/shipper.service';
import { frameOf, readShipped, syntheticFrames, tmpDir } from './support';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});
function dir(): string {
  const d = tmpDir('ship-unit-');
  dirs.push(d);
  return d;
}

describe('shipper config', () => {
  it('defaults: SHIP_DIR .run/bidlog under the cwd, 10 s, 256 frames / 8 MiB, 30 days, admin on 127.0.0.1', () => {
    const c = loadShipperConfig({}, '/srv/app');
    assert.equal(c.dir, '/srv/app/.run/bidlog');
    assert.equal(c.intervalMs, 10_000);
    assert.equal(c.batchFrames, 256);
    assert.equal(c.batchBytes, 8 * 1024 * 1024);
    assert.equal(c.retentionDays, 30);
    assert.equal(c.adminHost, '127.0.0.1');
    assert.equal(c.logRedisKey, 'bidlog');
    assert.match(c.shipperId, /-\d+$/, 'hostname-pid');
    assert.equal(c.testCrashAt, null);
    assert.ok(Object.isFrozen(c));
    assert.equal(loadShipperConfig({ SHIP_DIR: '/data/log', SHIP_RETENTION_DAYS: '0' }).dir, '/data/log');
  });

  it('one error naming every bad variable', () => {
    assert.throws(
      () => loadShipperConfig({ SHIP_INTERVAL_MS: '2s', SHIP_BATCH_FRAMES: '0', SHIP_ID: 'a{b}', REDIS_URL: 'http://x', SHIP_ADMIN_PORT: '70000', SHIP_TEST_CRASH_AT: 'never' }),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        for (const v of ['SHIP_INTERVAL_MS', 'SHIP_BATCH_FRAMES', 'SHIP_ID', 'REDIS_URL', 'SHIP_ADMIN_PORT', 'SHIP_TEST_CRASH_AT']) assert.ok(e.problems.some((p) => p.startsWith(v)), v);
        return true;
      },
    );
  });
});

describe('batch identity', () => {
  it('a frame is known by its bytes; the group name depends on the set of frames, not their order; repeats count once', () => {
    const { frames } = syntheticFrames(3, 2);
    const a = toBatch(frames);
    const b = toBatch([frames[2], frames[0], frames[1], frames[0]]);
    assert.equal(a.group, b.group);
    assert.equal(b.frames.length, 3);
    assert.equal(b.elements, 4);
    assert.match(a.frames[0].hash, /^[0-9a-f]{32}$/);
    assert.notEqual(toBatch(frames.slice(0, 2)).group, a.group);
    assert.equal(groupName([]), groupName([]));
  });

  it('firstRecordTs reads the first line of a frame from a prefix, and of a frame whose first line is long', () => {
    assert.equal(firstRecordTs(frameOf(['{"ts":1700000000001,"type":"request"}', '{"ts":5}'])), 1700000000001);
    const long = JSON.stringify({ ts: 1700000000002, pad: Array.from({ length: 30_000 }, (_, i) => i.toString(36)).join('') });
    assert.equal(firstRecordTs(frameOf([long])), 1700000000002);
    assert.equal(firstRecordTs(Buffer.from('junk')), null);
    assert.equal(firstRecordTs(frameOf(['{"type":"x"}'])), null);
  });

  it('retries back off 0.5 s, 1 s, 2 s … up to 30 s', () => {
    assert.deepEqual([1, 2, 3, 4, 7, 50].map(retryDelay), [500, 1000, 2000, 4000, 30_000, 30_000]);
  });
});

describe('ParquetStore (real DuckDB, real files)', () => {
  it('writes one file per UTC hour of a group, with the report columns; a second store of the same group writes nothing', async () => {
    const d = dir();
    const store = new ParquetStore({ dir: d, shipperId: 'u', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      const h10 = Date.UTC(2026, 4, 1, 10, 59, 59, 999);
      const lines = [
        JSON.stringify({ ts: h10, type: 'request', host: 'h1', worker: '3', name: 'pub', id: 'r1', req: { id: 'r1', imp: [{ id: '1', banner: {} }, { id: '2', video: {} }] } }),
        JSON.stringify({
          ts: h10 + 1,
          type: 'response',
          worker: '3',
          name: 'pub',
          id: 'r1',
          status: 200,
          ms: 1.5,
          privacy: { gdpr: true },
          res: { id: 'r1', cur: 'EUR', seatbid: [{ bid: [{ id: 'b1', impid: '1', price: 2.5, cid: 'c1', crid: 'k1', mtype: 1 }, { id: 'b2', impid: '2', price: '3', cid: 'c2', crid: 'k2', dealid: 'd9', mtype: 2 }] }] },
        }),
        JSON.stringify({ ts: h10 + 5, type: 'bill', worker: '3', name: 'pub', id: 'r1', bid: 'b1', imp: '1', crid: 'k1', cid: 'c1', price: null, bidPrice: 2.5, cur: 'EUR', deal: null, bidTs: h10 + 1, counted: true }),
        JSON.stringify({ ts: h10 + 9, type: 'click', id: 'r1', landing: 'https://l.example/', user: 'u1' }),
      ];
      const batch = toBatch([frameOf(lines)]);
      const r = await store.store(batch);
      assert.equal(r.records, 4);
      assert.deepEqual(
        r.written.map((w) => path.relative(d, w.file)),
        [`date=2026-05-01/hour=10/${batch.group}.parquet`, `date=2026-05-01/hour=11/${batch.group}.parquet`],
      );
      assert.ok(r.written.every((w) => w.bytes > 0));
      const again = await store.store(batch);
      assert.deepEqual(again.written, []);
      assert.equal(again.skipped.length, 2);
      assert.deepEqual(fs.readdirSync(path.join(d, '.staging')), [], 'staging cleaned');

      const rows = await readShipped(
        d,
        'type, host, worker, id, status, ms, imps, media, bids, bid_ids, prices, cids, crids, deals, cur, privacy, bid, price, bid_price, counted, landing, user_id, raw, frame',
      );
      const by = new Map(rows.map((x) => [String(x.type), x]));
      const req = by.get('request')!;
      assert.deepEqual([req.host, req.worker, req.imps, req.media], ['h1', '3', 2n, ['banner', 'video']]);
      const res = by.get('response')!;
      assert.deepEqual([res.status, res.ms, res.bids, res.cur, res.privacy], [200, 1.5, 2n, 'EUR', '{"gdpr":true}']);
      assert.deepEqual([res.bid_ids, res.prices, res.cids, res.crids, res.deals, res.media], [['b1', 'b2'], [2.5, 3], ['c1', 'c2'], ['k1', 'k2'], ['d9'], ['banner', 'video']]);
      const bill = by.get('bill')!;
      assert.deepEqual([bill.bid, bill.price, bill.bid_price, bill.counted, bill.cur], ['b1', null, 2.5, true, 'EUR']);
      const click = by.get('click')!;
      assert.deepEqual([click.landing, click.user_id], ['https://l.example/', 'u1']);
      assert.deepEqual(JSON.parse(String(req.raw)), JSON.parse(lines[0]), 'raw keeps the whole line of a record with a body (req)');
      assert.deepEqual(JSON.parse(String(res.raw)), JSON.parse(lines[1]), 'raw keeps the whole line of a record with a body (res)');
      assert.equal(click.raw, null, 'a record without a body is its columns alone');
      assert.ok(rows.every((x) => x.frame === batch.frames[0].hash));
    } finally {
      store.close();
    }
  });

  it('holds no DuckDB memory between batches: resident memory after the sixth batch of the reference size is within 40 MiB of the first', async () => {
    // DuckDB keeps much of what a batch allocated (outside its buffer pool) until its instance is
    // closed: ~60-100 MiB more after a few batches of the reference load with one instance for all.
    const anonMiB = (): number => Number(/^Anonymous:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/self/smaps_rollup', 'utf8'))![1]) / 1024;
    const d = dir();
    const store = new ParquetStore({ dir: d, shipperId: 'u', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      // What a shipper finds every 10 s at 1300 bid requests/s: 10 frames, 26,000 records.
      const batches = Array.from({ length: 6 }, (_, b) => toBatch(syntheticFrames(10, 1300, Date.UTC(2026, 4, 1, b)).frames));
      const after: number[] = [];
      for (const batch of batches) {
        assert.equal((await store.store(batch)).records, 26_000);
        after.push(anonMiB());
      }
      const growth = Math.max(...after.slice(1)) - after[0];
      assert.ok(growth < 40, `resident memory after each batch (MiB): ${after.map((x) => x.toFixed(0)).join(', ')}`);
      const rows = await readShipped(d, 'count(*) AS n');
      assert.equal(rows[0].n, 156_000n);
    } finally {
      store.close();
    }
  });

  it('a record longer than the fast path reads (2 MiB) is stored whole by the slow path', async () => {
    const d = dir();
    const store = new ParquetStore({ dir: d, shipperId: 'u', threads: 1, memoryMb: 512 });
    await store.open();
    try {
      const pad = 'x'.repeat(17 * 1024 * 1024);
      const r = await store.store(toBatch([frameOf([JSON.stringify({ ts: Date.UTC(2026, 4, 1), type: 'request', id: 'big', req: { id: 'big', pad } }), '{"ts":1,"type":"win","id":"small"}'])]));
      assert.equal(r.records, 2);
      assert.equal(r.invalidLines, 0);
      const rows = await readShipped(d, 'id, length(raw) AS n');
      assert.ok(rows.some((x) => x.id === 'big' && Number(x.n) > pad.length));
    } finally {
      store.close();
    }
  });

  it('a storage failure is a StorageError naming the step and errno; nothing half-written is left', async () => {
    const d = dir();
    fs.writeFileSync(path.join(d, 'date=2026-05-01'), 'a file where a directory should be');
    const store = new ParquetStore({ dir: d, shipperId: 'u', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      const batch = toBatch([frameOf([JSON.stringify({ ts: Date.UTC(2026, 4, 1, 3), type: 'win', id: 'x' })])]);
      await assert.rejects(store.store(batch), (e: unknown) => e instanceof StorageError && e.step === 'write' && e.code === 'ENOTDIR');
      fs.rmSync(path.join(d, 'date=2026-05-01'));
      const r = await store.store(batch);
      assert.equal(r.written.length, 1);
    } finally {
      store.close();
    }
  });

  it('retention deletes whole date partitions older than SHIP_RETENTION_DAYS (0 keeps all) and stale temporary files', async () => {
    const d = dir();
    const store = new ParquetStore({ dir: d, shipperId: 'u', threads: 1, memoryMb: 256 });
    for (const day of ['2026-03-01', '2026-03-09', '2026-03-10', '2026-03-11']) fs.mkdirSync(path.join(d, `date=${day}`, 'hour=00'), { recursive: true });
    fs.mkdirSync(path.join(d, 'bad-frames'));
    const stale = path.join(d, 'date=2026-03-11', 'hour=00', 'g.parquet.tmp-0123456789ab');
    const fresh = path.join(d, 'date=2026-03-11', 'hour=00', 'h.parquet.tmp-0123456789ac');
    fs.writeFileSync(stale, 'x');
    fs.writeFileSync(fresh, 'x');
    const now = Date.UTC(2026, 2, 11, 12);
    fs.utimesSync(stale, new Date(now - 2 * 3_600_000), new Date(now - 2 * 3_600_000));
    fs.utimesSync(fresh, new Date(now), new Date(now));
    assert.deepEqual(await store.retain(0, now), [], '0 keeps everything');
    // 1 day: a day is kept until a whole day has passed since its end.
    assert.deepEqual(await store.retain(1, now), ['date=2026-03-01', 'date=2026-03-09']);
    assert.deepEqual(fs.readdirSync(d).sort(), ['bad-frames', 'date=2026-03-10', 'date=2026-03-11']);
    assert.deepEqual(fs.readdirSync(path.join(d, 'date=2026-03-11', 'hour=00')), ['h.parquet.tmp-0123456789ac']);
  });
});

describe('report', () => {
  const NOW = Date.UTC(2026, 6, 15, 13, 30);
  it('reads time bounds as UTC: dates, hours, today, yesterday, relative; a bare --to date means its end', () => {
    assert.equal(parseTime('2026-07-01', false, NOW).toISOString(), '2026-07-01T00:00:00.000Z');
    assert.equal(parseTime('2026-07-01', true, NOW).toISOString(), '2026-07-02T00:00:00.000Z');
    assert.equal(parseTime('2026-07-01T05', false, NOW).toISOString(), '2026-07-01T05:00:00.000Z');
    assert.equal(parseTime('2026-07-01T05:06:07Z', false, NOW).toISOString(), '2026-07-01T05:06:07.000Z');
    assert.equal(parseTime('yesterday', false, NOW).toISOString(), '2026-07-14T00:00:00.000Z');
    assert.equal(parseTime('yesterday', true, NOW).toISOString(), '2026-07-15T00:00:00.000Z');
    assert.equal(parseTime('today', false, NOW).toISOString(), '2026-07-15T00:00:00.000Z');
    assert.equal(parseTime('-6h', false, NOW).toISOString(), '2026-07-15T07:30:00.000Z');
    for (const bad of ['2026-13-45', 'noon', '6h', '2026-07-01T25']) assert.throws(() => parseTime(bad, false, NOW), new RegExp(bad));
  });

  it('arguments: --day, --dir, --html, --json; unknown options and an empty window are refused', () => {
    const a = parseArgs(['--day', 'yesterday', '--dir', 'x/y', '--html', 'r.html', '--json'], {}, NOW);
    assert.equal(a.from?.toISOString(), '2026-07-14T00:00:00.000Z');
    assert.equal(a.to?.toISOString(), '2026-07-15T00:00:00.000Z');
    assert.equal(a.dir, path.resolve('x/y'));
    assert.equal(a.html, path.resolve('r.html'));
    assert.equal(a.json, true);
    assert.equal(parseArgs([], { SHIP_DIR: '/d' }, NOW).dir, '/d');
    assert.equal(parseArgs([], { BIDDER_RUN_DIR: '/run' }, NOW).dir, '/run/bidlog', 'where npm start puts them');
    assert.equal(parseArgs([], { BIDDER_RUN_DIR: '/run', SHIP_DIR: '/d' }, NOW).dir, '/d');
    assert.throws(() => parseArgs(['--frm', 'x'], {}, NOW), /unknown option --frm/);
    assert.throws(() => parseArgs(['--from', 'today', '--to', 'yesterday'], {}, NOW), /before/);
    assert.throws(() => parseArgs(['--dir'], {}, NOW), /needs a value/);
  });

  it('the HTML page escapes what it shows and draws its charts inline', () => {
    assert.equal(esc(`<a href="x">&'`), '&lt;a href=&quot;x&quot;&gt;&amp;&#39;');
    const svg = barChart('t', ['a', 'b', 'c'], [60, 60, 26], [{ label: 's', color: '#000', values: [0, 5, 2] }, { label: 'u', color: '#111', values: [1, null, 3] }]);
    assert.match(svg, /^<figure><figcaption>t<\/figcaption><svg /);
    assert.equal(svg.match(/<rect [^>]*><title>/g)?.length, 5, 'a bar per value, the null one skipped');
    assert.equal(svg.match(/partial hour: 26 min of data/g)?.length, 2, 'the partial hour marked on each of its bars');
    assert.match(svg, />c \(26m\)</, 'and in its label');
    const hour = { hour: '2026-07-15 10:00', ...emptyFigures() };
    const r: Report = {
      dir: '/d',
      from: null,
      to: null,
      files: 1,
      records: 2,
      first: null,
      last: null,
      totals: emptyFigures(),
      hours: [hour, { ...hour, hour: '2026-07-15 11:00', requests: 4 }],
      campaigns: [{ cid: '<script>x</script>', bids: 1, avgBidPrice: 1, wins: 0, winRate: 0, losses: 0, impressions: 0, clicks: 0, clicksWithoutImpression: 0, ctr: null, billed: 0, money: [] }],
      reasons: [],
      types: { request: 2 },
      repeats: 0,
    };
    const page = renderHtml(r);
    assert.ok(!page.includes('<script>'));
    assert.ok(page.includes('&lt;script&gt;x&lt;/script&gt;'));
    assert.equal((page.match(/<svg /g) ?? []).length, 3, 'requests, rates, answer time (no spend: nothing billed)');
  });
});
