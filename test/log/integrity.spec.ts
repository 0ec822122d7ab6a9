/**
 * What the bid log trusts: spill files are verified before they are pushed (a truncated or corrupted
 * frame is set aside and counted, never pushed), the reader skips a bad frame with a note, the final
 * flush keeps its deadline even when Redis and the disk hang, and a worker that dies of a fatal error
 * writes its queued records to the spill directory before it exits.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { LogPipeline } from '../../src/log/log-pipeline';
import type { FrameSink } from '../../src/log/log-sink';
import { newFrameId, SpillStore } from '../../src/log/spill';
import { parseProm, sum } from '../support/prom';
import { request, startTestApp } from '../support/app';
import { freePort, startTestRedis, type TestRedis } from '../support/redis';
import { readRedisLog, runCli, sendBids, spawnBidder, until } from './support';

let redis: TestRedis;
const tmp: string[] = [];
before(async () => {
  redis = await startTestRedis();
});
after(async () => {
  await redis.stop();
  for (const d of tmp) fs.rmSync(d, { recursive: true, force: true });
});

function tmpdir(prefix: string): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tmp.push(d);
  return d;
}

function frame(records: Array<Record<string, unknown>>): Buffer {
  const text = records.map((r) => JSON.stringify(r)).join('\n') + '\n';
  return zlib.zstdCompressSync(Buffer.from(text), { params: { [zlib.constants.ZSTD_c_checksumFlag]: 1 } });
}

function spillName(records: number, ts: number): string {
  return `${String(ts).padStart(13, '0')}_000001_w_${records}_${newFrameId()}.zst`;
}

describe('spill files are verified before they are pushed', () => {
  it('a truncated and a byte-flipped frame are set aside and counted; the good one is pushed once', async () => {
    const spill = tmpdir('integrity-spill-');
    const good = frame([
      { ts: 1, type: 'request', id: 'g1', worker: 'w', name: '' },
      { ts: 1, type: 'response', id: 'g1', worker: 'w', name: '' },
    ]);
    const big = frame(Array.from({ length: 200 }, (_, i) => ({ ts: 2, type: 'win', id: `b${i}`, worker: 'w', name: 'x'.repeat(i) })));
    const truncated = big.subarray(0, big.length >> 1);
    const flipped = Buffer.from(big);
    flipped[flipped.length >> 1] ^= 0xff;
    fs.writeFileSync(path.join(spill, spillName(2, 1000)), good);
    fs.writeFileSync(path.join(spill, spillName(200, 1001)), truncated);
    fs.writeFileSync(path.join(spill, spillName(200, 1002)), flipped);

    const t = await startTestApp({ LOG_SPILL_DIR: spill, LOG_REDIS_KEY: 'verify', LOG_FLUSH_INTERVAL_MS: '50' });
    try {
      await until('the spill drained', () => fs.readdirSync(spill).filter((n) => n.includes('.zst') && !n.endsWith('.bad')).length === 0);
      const { records } = await readRedisLog(t.redis.url, 'verify');
      assert.deepEqual(
        records.map((r) => r.id),
        ['g1', 'g1'],
      );
      assert.equal(fs.readdirSync(spill).filter((n) => n.endsWith('.bad')).length, 2);
      const m = parseProm((await request(`${t.adminUrl}/metrics`, { method: 'GET' })).body.toString());
      assert.equal(sum(m, 'bidder_log_records_quarantined_total'), 400);
    } finally {
      await t.close();
    }
  });

  it('quarantined files count toward the spill bound', async () => {
    const dir = tmpdir('integrity-bound-');
    const s = new SpillStore(dir, 1000, 'w');
    await s.init();
    fs.writeFileSync(path.join(dir, `${spillName(1, 5)}.bad`), Buffer.alloc(900));
    await s.refresh(true);
    assert.equal(await s.write(Buffer.alloc(200), newFrameId(), 1, 10), false, 'the bound includes .bad files');
  });
});

describe('the reader skips a bad frame', () => {
  it('npm run logs -- count goes on past a corrupt list element and says so', async () => {
    const c = new Redis(redis.url);
    await c.del('reader-bad');
    await c.rpush('reader-bad', frame([{ ts: 1, type: 'request', id: 'r1', worker: 'w', name: '' }]));
    await c.rpush('reader-bad', Buffer.from('not a zstd frame'));
    await c.rpush('reader-bad', frame([{ ts: 2, type: 'response', id: 'r1', worker: 'w', name: '' }]));
    c.disconnect();
    const r = await runCli(['count', '--source', 'redis'], { REDIS_URL: redis.url, LOG_REDIS_KEY: 'reader-bad' });
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { records: number; badFrames: number };
    assert.equal(out.records, 2);
    assert.equal(out.badFrames, 1);
    assert.match(r.stderr, /reader-bad\[1\].*skipped/);
  });
});

describe('the final flush keeps its deadline', () => {
  it('resolves by SHUTDOWN_TIMEOUT_MS when Redis and the disk both hang, counting what it could not keep', async () => {
    const hang: FrameSink = { ready: () => true, push: () => new Promise<boolean>(() => undefined) };
    class HangingSpill extends SpillStore {
      override write(): Promise<boolean> {
        return new Promise<boolean>(() => undefined);
      }
    }
    const logger = { log: () => undefined, warn: () => undefined };
    const p = new LogPipeline({ flushIntervalMs: 60_000, flushBytes: 1 << 20, maxMemoryBytes: 64 << 20 }, hang, new HangingSpill(tmpdir('hang-'), 1 << 30, 'w'), logger);
    p.start();
    for (let i = 0; i < 20_000; i++) p.append(`{"ts":${i},"type":"request","id":"h${i}","worker":"w","name":""`, null);
    const started = Date.now();
    await p.close(600);
    const took = Date.now() - started;
    assert.ok(took < 1_000, `close took ${took} ms`);
    assert.equal(p.stats().recordsDropped, 20_000);
  });
});

describe('a fatal error does not lose the queued records', () => {
  it('the worker writes its queue to the spill directory before it exits; the next start pushes it once', async () => {
    const spill = tmpdir('fatal-spill-');
    const preload = path.join(tmpdir('fatal-preload-'), 'crash.js');
    // Test-only: an uncaught exception thrown on SIGUSR2, as a bug in any callback would throw one.
    fs.writeFileSync(preload, "process.on('SIGUSR2', () => setImmediate(() => { throw new Error('test: a fatal bug'); }));\n");
    const bidder = await spawnBidder({ REDIS_URL: redis.url, LOG_REDIS_KEY: 'fatal', LOG_SPILL_DIR: spill, LOG_FLUSH_INTERVAL_MS: '600000' }, await freePort(), preload);
    const { ids } = await sendBids(bidder.url, 25, 5, 'fatal');
    bidder.proc.kill('SIGUSR2');
    assert.equal(await bidder.exited, 1, bidder.output());
    assert.match(bidder.output(), /wrote 50 records to the spill directory/);
    assert.ok(fs.readdirSync(spill).some((n) => n.endsWith('.zst')), bidder.output());

    // The next start drains them.
    const t = await startTestApp({ LOG_SPILL_DIR: spill, LOG_REDIS_KEY: 'fatal-drain', LOG_FLUSH_INTERVAL_MS: '50' });
    try {
      let records: Awaited<ReturnType<typeof readRedisLog>>['records'] = [];
      await until('drained', async () => {
        records = (await readRedisLog(t.redis.url, 'fatal-drain')).records;
        return records.length >= 2 * ids.length && fs.readdirSync(spill).filter((n) => n !== 'journal').length === 0;
      });
      assert.equal(records.length, 2 * ids.length);
      for (const id of ids) {
        assert.equal(records.filter((r) => r.type === 'request' && r.id === id).length, 1);
        assert.equal(records.filter((r) => r.type === 'response' && r.id === id).length, 1);
      }
    } finally {
      await t.close();
    }
  });
});
