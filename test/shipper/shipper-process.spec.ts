// The shipper as a real process (dist/shipper/main.js) against a real Redis and real files: crashes
// at the two points of a batch, two shippers at once, storage failing, graceful stop, bad input.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type Redis from 'ioredis';
import { procKey } from '../../src/bidlog/keys';
import { partitionFiles } from '../../src/shipper/report-data';
import { startTestRedis, type TestRedis } from '../support/redis';
import { assertShippedOnce, frameOf, get, metric, readShipped, redisClient, spawnShipper, syntheticFrames, tmpDir, until, untilDrained, type ShipperProc } from './support';

describe('shipper process (real Redis, real files)', () => {
  let redis: TestRedis;
  let admin: Redis;
  const dirs: string[] = [];
  const procs: ShipperProc[] = [];

  before(async () => {
    redis = await startTestRedis();
    admin = await redisClient(redis.url);
  });
  after(async () => {
    for (const p of procs) await p.stop('SIGKILL');
    admin.disconnect();
    await redis.stop();
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });

  function dir(): string {
    const d = tmpDir('ship-');
    dirs.push(d);
    return d;
  }

  function start(env: Record<string, string>): ShipperProc {
    const p = spawnShipper({ REDIS_URL: redis.url, ...env });
    procs.push(p);
    return p;
  }

  it('runs every thread in the idle scheduling class (nice 19 too) and in the idle I/O class, DuckDB\'s too', async () => {
    const key = 'p-priority';
    const shipDir = dir();
    const { frames, ids } = syntheticFrames(4, 50);
    const p = start({ LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'nice', SHIP_DUCKDB_THREADS: '2' });
    await p.adminUrl();
    await admin.rpush(key, ...frames);
    await untilDrained(admin, key);
    await assertShippedOnce(shipDir, ids);
    const pid = p.proc.pid!;
    const tids = fs.readdirSync(`/proc/${pid}/task`);
    // Node's own threads plus DuckDB's (created for the batch just written).
    assert.ok(tids.length >= 8, `threads: ${tids.length}`);
    for (const tid of tids) {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      // Field 19 is the nice value (fields counted after the command, which ends at the last ')').
      const nice = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      assert.equal(nice, 19, `thread ${tid} runs at nice ${nice}`);
      // Field 41 is the scheduling policy: 5 is SCHED_IDLE, whose threads a waking worker preempts
      // at once (a nice-19 thread may finish its time slice first).
      const policy = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
      assert.equal(policy, 5, `thread ${tid} runs under scheduling policy ${policy}`);
      assert.match(execFileSync('ionice', ['-p', tid], { encoding: 'utf8' }), /^idle/, `thread ${tid}`);
    }
    assert.match(p.output(), /"msg":"lowered its CPU and I\/O priority"/);
    assert.match(p.output(), /"cpuClass":"idle"/);
    await p.stop();
  });

  it('killed between claim and write, restarted: every record stored once', async () => {
    const key = 'p-after-claim';
    const shipDir = dir();
    const { frames, ids } = syntheticFrames(12, 40);
    await admin.rpush(key, ...frames);
    const env = { LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'crash1', SHIP_BATCH_FRAMES: '5', SHIP_HEARTBEAT_TTL_MS: '1000' };
    const crashed = start({ ...env, SHIP_TEST_CRASH_AT: 'after-claim' });
    assert.equal((await crashed.exited).signal, 'SIGKILL');
    assert.equal(await admin.llen(procKey(key, 'crash1')), 5, 'the claimed frames wait in the processing list');
    assert.equal(await admin.llen(key), 7);
    assert.deepEqual(await partitionFiles(shipDir), [], 'nothing written');

    const again = start(env);
    await untilDrained(admin, key);
    await again.stop();
    await assertShippedOnce(shipDir, ids);
    assert.match(again.output(), /resuming the batch in the processing list/);
  });

  it('killed between write and remove, restarted: the written files are found, nothing stored twice', async () => {
    const key = 'p-after-write';
    const shipDir = dir();
    const { frames, ids } = syntheticFrames(9, 40);
    await admin.rpush(key, ...frames);
    const env = { LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'crash2', SHIP_BATCH_FRAMES: '4', SHIP_HEARTBEAT_TTL_MS: '1000' };
    const crashed = start({ ...env, SHIP_TEST_CRASH_AT: 'after-write' });
    assert.equal((await crashed.exited).signal, 'SIGKILL');
    assert.equal(await admin.llen(procKey(key, 'crash2')), 4, 'written but not yet removed');
    const written = await partitionFiles(shipDir);
    assert.equal(written.length, 1);
    const mtime = fs.statSync(written[0]).mtimeMs;

    const again = start(env);
    await untilDrained(admin, key);
    const m = await get(`${await again.adminUrl()}/metrics`);
    await again.stop();
    await assertShippedOnce(shipDir, ids);
    assert.equal(fs.statSync(written[0]).mtimeMs, mtime, 'the file of the resumed group was not rewritten');
    assert.equal(metric(m.body, 'shipper_batches_total{source="resumed"}'), 1);
  });

  it('killed between write and remove, and never back: another shipper adopts the batch once the lease expires, nothing twice', async () => {
    const key = 'p-adopt';
    const shipDir = dir();
    const { frames, ids } = syntheticFrames(6, 30);
    await admin.rpush(key, ...frames);
    const base = { LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_BATCH_FRAMES: '3', SHIP_HEARTBEAT_TTL_MS: '800' };
    const crashed = start({ ...base, SHIP_ID: 'gone', SHIP_TEST_CRASH_AT: 'after-write' });
    assert.equal((await crashed.exited).signal, 'SIGKILL');
    assert.equal(await admin.llen(procKey(key, 'gone')), 3);

    const other = start({ ...base, SHIP_ID: 'other' });
    await untilDrained(admin, key);
    await other.stop();
    await assertShippedOnce(shipDir, ids);
    assert.match(other.output(), /adopted the processing list of a shipper whose heartbeat expired/);
    assert.equal(await admin.exists(procKey(key, 'gone')), 0);
  });

  it('two shippers at once: each frame in exactly one batch group, every record once', async () => {
    const key = 'p-two';
    const shipDir = dir();
    const { frames, ids } = syntheticFrames(120, 10);
    const base = { LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_BATCH_FRAMES: '3' };
    const a = start({ ...base, SHIP_ID: 'two-a' });
    const b = start({ ...base, SHIP_ID: 'two-b' });
    // Both running (holding their leases) before the frames arrive, so that both take part.
    await until('both shippers', async () => (await admin.exists(`${key}:hb:two-a`, `${key}:hb:two-b`)) === 2);
    await admin.rpush(key, ...frames);
    await untilDrained(admin, key, 60_000);
    const [ma, mb] = await Promise.all([get(`${await a.adminUrl()}/metrics`), get(`${await b.adminUrl()}/metrics`)]);
    await Promise.all([a.stop(), b.stop()]);
    const rows = await assertShippedOnce(shipDir, ids);
    const groupsOfFrame = new Map<string, Set<string>>();
    for (const r of rows) groupsOfFrame.set(r.frame, (groupsOfFrame.get(r.frame) ?? new Set()).add(path.basename(r.file)));
    assert.equal(groupsOfFrame.size, 120);
    for (const [f, g] of groupsOfFrame) assert.equal(g.size, 1, `frame ${f} in ${g.size} groups`);
    const fa = metric(ma.body, 'shipper_frames_shipped_total');
    const fb = metric(mb.body, 'shipper_frames_shipped_total');
    assert.equal(fa + fb, 120);
    assert.ok(fa > 0 && fb > 0, `both shipped (${fa} + ${fb})`);
  });

  it('storage failing (a file where SHIP_DIR should be): frames stay in Redis, the shipper says why and retries, then ships them once', async () => {
    const key = 'p-enotdir';
    const base = dir();
    const blocker = path.join(base, 'not-a-dir');
    fs.writeFileSync(blocker, 'x');
    const shipDir = path.join(blocker, 'bidlog');
    const { frames, ids } = syntheticFrames(4, 25);
    await admin.rpush(key, ...frames);
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'enotdir', SHIP_BATCH_FRAMES: '1' });
    const url = await s.adminUrl();
    await until('a storage error', async () => metric((await get(`${url}/metrics`)).body, 'shipper_errors_total{kind="stage"}') >= 2);
    const ready = await get(`${url}/health/ready`);
    assert.equal(ready.status, 503);
    assert.match(ready.body, /stage: ENOTDIR/);
    assert.match(s.output(), /shipping failed; the frames stay in Redis and are retried.*ENOTDIR/);
    assert.equal((await admin.llen(key)) + (await admin.llen(procKey(key, 'enotdir'))), 4, 'every frame still in Redis');
    // The backlog gauges stay current while shipping fails (the batch under way is in the processing list, the rest waits).
    assert.equal(await admin.llen(key), 3);
    await until('the backlog gauge', async () => metric((await get(`${url}/metrics`)).body, 'shipper_backlog_frames') === 3);

    fs.rmSync(blocker);
    fs.mkdirSync(blocker);
    await untilDrained(admin, key, 40_000);
    assert.equal((await get(`${url}/health/ready`)).status, 200);
    await s.stop();
    await assertShippedOnce(shipDir, ids);
    assert.match(s.output(), /shipping again/);
  });

  it('storage failing (disk full, a 1 MiB tmpfs): frames stay in Redis until there is room, then are shipped once', async (t) => {
    const mnt = dir();
    try {
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt], { stdio: 'pipe' });
    } catch (e) {
      t.skip(`cannot mount a tmpfs here (${e instanceof Error ? e.message.split('\n')[0] : String(e)}); the ENOTDIR test covers the failure path`);
      return;
    }
    try {
      const key = 'p-enospc';
      // ~2 MiB of frames that do not compress (random ids): more than the tmpfs holds.
      const lines: string[] = [];
      const ids: string[] = [];
      const frames: Buffer[] = [];
      for (let f = 0; f < 8; f++) {
        for (let i = 0; i < 200; i++) {
          const id = `full-${f}-${i}`;
          ids.push(id);
          const pad = Buffer.from(Array.from({ length: 900 }, () => Math.floor(Math.random() * 256))).toString('base64');
          lines.push(JSON.stringify({ ts: Date.now(), type: 'request', worker: '0', name: 'p', id, req: { id, pad } }));
          lines.push(JSON.stringify({ ts: Date.now(), type: 'response', worker: '0', name: 'p', id, status: 204, reason: 'no_candidates' }));
        }
        frames.push(frameOf(lines.splice(0)));
      }
      await admin.rpush(key, ...frames);
      const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: mnt, SHIP_ID: 'enospc' });
      const url = await s.adminUrl();
      await until('a storage error', async () => {
        const m = (await get(`${url}/metrics`)).body;
        return metric(m, 'shipper_errors_total{kind="stage"}') + metric(m, 'shipper_errors_total{kind="write"}') + metric(m, 'shipper_errors_total{kind="load"}') >= 2;
      });
      assert.match(s.output(), /ENOSPC|No space left|out of disk|Could not write/i);
      assert.equal((await admin.llen(key)) + (await admin.llen(procKey(key, 'enospc'))), 8, 'every frame still in Redis');
      execFileSync('mount', ['-o', 'remount,size=64m', mnt]);
      await untilDrained(admin, key, 60_000);
      await s.stop();
      await assertShippedOnce(mnt, ids);
    } finally {
      execFileSync('umount', ['-l', mnt]);
    }
  });

  it('lines that are not JSON and elements that are not zstd are kept (type NULL / bad-frames), not lost, not blocking', async () => {
    const key = 'p-bad';
    const shipDir = dir();
    const good = syntheticFrames(2, 5);
    const mixed = frameOf(['{"ts":1764000000000,"type":"imp","id":"m1"}', 'not json {', '{"type":"loss","id":"no-ts"}']);
    const notZstd = Buffer.from('definitely not a zstd frame');
    await admin.rpush(key, good.frames[0], mixed, notZstd, good.frames[1]);
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'bad' });
    await untilDrained(admin, key);
    const m = await get(`${await s.adminUrl()}/metrics`);
    await s.stop();
    await assertShippedOnce(shipDir, good.ids);
    const rows = await readShipped(shipDir, "type, id, raw, strftime(ts, '%Y-%m-%d %H') AS ts_hour, CAST(date AS VARCHAR) AS part_date, CAST(hour AS VARCHAR) AS part_hour");
    const invalid = rows.filter((r) => r.type === null);
    assert.deepEqual(
      invalid.map((r) => r.raw),
      ['not json {'],
    );
    const noTs = rows.find((r) => r.id === 'no-ts');
    assert.ok(noTs);
    assert.equal(noTs.ts_hour, null);
    assert.deepEqual([noTs.part_date, noTs.part_hour], ['2025-11-24', '16'], 'a record without ts goes to its frame\'s earliest hour');
    assert.equal(metric(m.body, 'shipper_invalid_lines_total'), 1);
    assert.equal(metric(m.body, 'shipper_bad_frames_total'), 1);
    const bad = fs.readdirSync(path.join(shipDir, 'bad-frames'));
    assert.equal(bad.length, 1);
    assert.deepEqual(fs.readFileSync(path.join(shipDir, 'bad-frames', bad[0])), notZstd);
  });

  it('frames trickling in (as the workers flush) make one batch per SHIP_INTERVAL_MS, not one per frame; every record once', async () => {
    // A batch has a fixed cost (the DuckDB load and COPY, a file, fsyncs): shipping every frame on its own multiplies it.
    const key = 'p-trickle';
    const shipDir = dir();
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'trickle', SHIP_INTERVAL_MS: '1500' });
    const url = await s.adminUrl();
    const { frames, ids } = syntheticFrames(40, 20);
    const t0 = Date.now();
    for (const f of frames) {
      await admin.rpush(key, f);
      await new Promise((r) => setTimeout(r, 75));
    }
    const seconds = (Date.now() - t0) / 1000;
    await untilDrained(admin, key);
    const batches = metric((await get(`${url}/metrics`)).body, 'shipper_batches_total{source="claimed"}');
    // 40 frames over ~3 s: a batch at the first frame, then at most one per 1.5 s (+1 for the last pause's end).
    assert.ok(batches >= 1 && batches <= Math.ceil(seconds / 1.5) + 2, `${batches} batches for 40 frames over ${seconds.toFixed(1)} s`);
    await assertShippedOnce(shipDir, ids);
    await s.stop();
  });

  it('idle, it costs next to no CPU (no 10 ms event-loop sampling timer)', async () => {
    const key = 'p-idle';
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: dir(), SHIP_ID: 'idle', SHIP_INTERVAL_MS: '10000' });
    const url = await s.adminUrl();
    await until('an empty round', async () => metric((await get(`${url}/metrics`)).body, 'shipper_last_success_timestamp_seconds') > 0);
    const ticks = (): number => {
      const stat = fs.readFileSync(`/proc/${s.proc.pid}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(f[11]) + Number(f[12]);
    };
    const hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    const t0 = ticks();
    await new Promise((r) => setTimeout(r, 5_000));
    const ms = ((ticks() - t0) * 1000) / hz;
    // With prom-client's default 10 ms sampling it used ~40 ms in 5 s; now ~5.
    assert.ok(ms <= 20, `${ms} ms of CPU in 5 s idle`);
    await s.stop();
  });

  it('a graceful stop ships what is left in the list (the workers\' final flush) before it exits', async () => {
    const key = 'p-stop-drain';
    const shipDir = dir();
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: shipDir, SHIP_ID: 'drain', SHIP_INTERVAL_MS: '60000' });
    const url = await s.adminUrl();
    // Idle: it found the list empty and sleeps for a minute.
    await until('an empty round', async () => metric((await get(`${url}/metrics`)).body, 'shipper_last_success_timestamp_seconds') > 0);
    const { frames, ids } = syntheticFrames(6, 30);
    await admin.rpush(key, ...frames);
    const r = await s.stop('SIGTERM');
    assert.equal(r.code, 0);
    assert.equal(await admin.llen(key), 0);
    assert.equal(await admin.exists(procKey(key, 'drain')), 0);
    await assertShippedOnce(shipDir, ids);
  });

  it('a bad variable stops it at once with one message naming every bad variable', async () => {
    const s = start({ SHIP_INTERVAL_MS: 'soon', SHIP_ID: 'has space', SHIP_RETENTION_DAYS: '-1', SHIP_TEST_CRASH_AT: 'sometime' });
    const r = await s.exited;
    assert.equal(r.code, 2);
    for (const v of ['SHIP_INTERVAL_MS', 'SHIP_ID', 'SHIP_RETENTION_DAYS', 'SHIP_TEST_CRASH_AT']) assert.match(s.output(), new RegExp(v));
  });

  it('answers /health/live, /health/ready and /metrics; a SIGTERM stops it cleanly with its lease given up', async () => {
    const key = 'p-admin';
    const s = start({ LOG_REDIS_KEY: key, SHIP_DIR: dir(), SHIP_ID: 'adm' });
    const url = await s.adminUrl();
    assert.equal((await get(`${url}/health/live`)).status, 200);
    await until('ready', async () => (await get(`${url}/health/ready`)).status === 200);
    const m = (await get(`${url}/metrics`)).body;
    for (const name of ['shipper_frames_shipped_total', 'shipper_records_shipped_total', 'shipper_bytes_shipped_total', 'shipper_errors_total', 'shipper_backlog_frames', 'shipper_backlog_bytes', 'shipper_backlog_oldest_age_seconds', 'shipper_last_success_timestamp_seconds', 'process_cpu_seconds_total']) {
      assert.match(m, new RegExp(`^# TYPE ${name} `, 'm'), name);
    }
    assert.equal((await get(`${url}/nope`)).status, 404);
    assert.equal(await admin.exists(`${key}:hb:adm`), 1);
    const r = await s.stop('SIGTERM');
    assert.equal(r.code, 0);
    assert.equal(await admin.exists(`${key}:hb:adm`), 0, 'lease released on a graceful stop');
  });
});
