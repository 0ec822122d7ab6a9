// The crash journal (src/log/journal.ts) on a real directory: segments written by "dead" workers
// (a pid whose process has exited) recovered into spill files, once; a living worker's left alone.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import * as zlib from 'node:zlib';
import { Journal, processStart, recoverJournals, segmentFrameId } from '../../src/log/journal';
import { LogPipeline } from '../../src/log/log-pipeline';
import { SpillStore } from '../../src/log/spill';

const quiet = { warn: (): void => undefined };
/** The pid of a process that has exited (a dead worker). */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  assert.ok(r.pid !== undefined && r.pid > 0);
  return r.pid;
}
/** Recovers as a third process (neither the journal's owner nor this one). */
const RECOVERER = { pid: 2 ** 22 + 17, start: '1' };

function line(id: string): string {
  return `{"ts":1,"type":"request","worker":"w","host":"h","name":"","id":${JSON.stringify(id)}}\n`;
}

describe('crash journal', () => {
  let root: string;
  let jdir: string;
  let spill: SpillStore;

  beforeEach(async () => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-spec-'));
    jdir = path.join(root, 'journal');
    spill = new SpillStore(root, 1 << 30, 'test');
    assert.equal(await spill.init(), true);
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  function write(j: Journal, ids: string[]): number {
    const b = Buffer.from(ids.map(line).join(''));
    j.write(b, 0, b.length);
    return b.length;
  }
  function spilled(): Array<{ name: string; frameId: string; lines: string[] }> {
    return fs
      .readdirSync(root)
      .filter((n) => n.endsWith('.zst'))
      .sort()
      .map((name) => ({
        name,
        frameId: name.slice(-40, -4),
        lines: zlib.zstdDecompressSync(fs.readFileSync(path.join(root, name))).toString().split('\n').filter(Boolean),
      }));
  }
  const recover = () => recoverJournals(jdir, spill, quiet, undefined, RECOVERER.pid, RECOVERER.start);
  const journals = () => fs.readdirSync(jdir);

  it('a torn last write is cut off; the whole writes before it are recovered', async () => {
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    assert.equal(j.open(), true);
    write(j, ['a', 'b', 'c']);
    const [name] = journals();
    const whole = fs.statSync(path.join(jdir, name)).size;
    write(j, ['d', 'e']);
    // The process died inside the second write: it stopped after the first line of it (its footer never written).
    fs.truncateSync(path.join(jdir, name), whole + 30 + line('d').length);
    const r = await recover();
    assert.deepEqual(r, { segments: 1, frames: 1, records: 3 });
    const files = spilled();
    assert.equal(files.length, 1);
    assert.deepEqual(files[0].lines.map((l) => (JSON.parse(l) as { id: string }).id), ['a', 'b', 'c']);
    assert.match(files[0].name, /_3_[0-9a-f-]{36}\.zst$/);
    assert.deepEqual(journals(), []);
  });

  it('a turn of any size is one whole frame: small ones copied into one write, one over 256 KiB written in pieces', async () => {
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    j.open();
    const many = Array.from({ length: 4000 }, (_, i) => `big-${i}`);
    const b = Buffer.from(many.map(line).join(''));
    assert.ok(b.length > 256 * 1024, `${b.length} bytes`);
    write(j, ['a']);
    // From the middle of a larger buffer, as the log's chunks hand it over.
    const padded = Buffer.concat([Buffer.from('xx'), b, Buffer.from('yy')]);
    j.write(padded, 2, b.length);
    write(j, ['z']);
    assert.deepEqual(await recover(), { segments: 1, frames: 1, records: 4002 });
    assert.deepEqual(
      spilled()[0].lines.map((l) => (JSON.parse(l) as { id: string }).id),
      ['a', ...many, 'z'],
    );
  });

  it('a sealed segment yields the frame ids its worker used (their push is then a no-op), and is recovered once', async () => {
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    j.open();
    const first = write(j, ['a', 'b']);
    const second = write(j, ['c', 'd', 'e']);
    const seg = j.seal([
      { bytes: first, records: 2 },
      { bytes: second, records: 3 },
    ]);
    assert.ok(seg !== null);
    write(j, ['f']); // the next segment, never sealed
    const r = await recover();
    assert.deepEqual(r, { segments: 2, frames: 3, records: 6 });
    const byId = new Map(spilled().map((f) => [f.frameId, f.lines.length]));
    assert.equal(byId.get(seg.frameIds[0]), 2);
    assert.equal(byId.get(seg.frameIds[1]), 3);
    assert.equal(seg.frameIds[1], segmentFrameId(seg.frameIds[0], 1));
    assert.equal(byId.size, 3);
    assert.deepEqual(journals(), []);
    // Nothing left for a second recoverer.
    assert.deepEqual(await recover(), { segments: 0, frames: 0, records: 0 });
    assert.equal(spilled().length, 3);
  });

  it('a segment whose frames are all safe is deleted by its worker; a claim left by a dead recoverer is taken over', async () => {
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    j.open();
    const n = write(j, ['a']);
    const seg = j.seal([{ bytes: n, records: 1 }]);
    j.done(seg, true);
    assert.equal(journals().length, 1, 'only the new, empty segment');
    write(j, ['b', 'c']);
    const [name] = journals();
    fs.renameSync(path.join(jdir, name), path.join(jdir, `${name}.claim-${deadPid()}-9`));
    assert.deepEqual(await recover(), { segments: 1, frames: 1, records: 2 });
    assert.deepEqual(journals(), []);
  });

  it('a finished segment is kept and written over by a later one; what is left of the older one is never recovered', async () => {
    const pid = deadPid();
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, pid, '7');
    j.open();
    const old = Array.from({ length: 200 }, (_, i) => `old-${i}`);
    const n = write(j, old);
    const seg = j.seal([{ bytes: n, records: old.length }]);
    j.done(seg);
    assert.equal(journals().filter((f) => f.endsWith('.jnl.free')).length, 1, 'kept for reuse');
    // The next segment was opened at the seal, before the old one was safe; the one after reuses the kept file.
    const m = write(j, ['x']);
    const seg2 = j.seal([{ bytes: m, records: 1 }]);
    assert.ok(seg2 !== null);
    assert.equal(journals().filter((f) => f.endsWith('.jnl.free')).length, 0, 'the kept file is the current segment now');
    write(j, ['new-1', 'new-2']);
    const torn = journals().find((f) => !f.endsWith('.free') && fs.statSync(path.join(jdir, f)).size > 10_000);
    assert.ok(torn !== undefined, 'the current segment is the reused, larger file');
    // The worker dies: its unsealed segment holds two new records, then the old segment's bytes.
    const r = await recover();
    assert.deepEqual(r, { segments: 2, frames: 2, records: 3 });
    const ids = spilled()
      .flatMap((f) => f.lines)
      .map((l) => (JSON.parse(l) as { id: string }).id)
      .sort();
    assert.deepEqual(ids, ['new-1', 'new-2', 'x']);
    assert.deepEqual(journals(), []);
  });

  it("a dead worker's kept files are deleted by a recoverer", async () => {
    const j = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    j.open();
    const n = write(j, ['a']);
    j.done(j.seal([{ bytes: n, records: 1 }]));
    assert.equal(journals().length, 2);
    assert.deepEqual(await recover(), { segments: 1, frames: 0, records: 0 }, 'the empty current segment only');
    assert.deepEqual(journals(), [], 'the empty current segment and the kept file are gone');
  });

  it("two dead workers' journals are both recovered", async () => {
    const a = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '7');
    const b = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, deadPid(), '8');
    a.open();
    b.open();
    write(a, ['a1', 'a2']);
    write(b, ['b1']);
    write(a, ['a3']);
    const r = await recover();
    assert.deepEqual(r, { segments: 2, frames: 2, records: 4 });
    const ids = spilled()
      .flatMap((f) => f.lines)
      .map((l) => (JSON.parse(l) as { id: string }).id)
      .sort();
    assert.deepEqual(ids, ['a1', 'a2', 'a3', 'b1']);
  });

  it('Redis away: past its bound the journal makes the waiting frames spill, and their segments go', async () => {
    const j = new Journal(jdir, quiet, 0, 256 * 1024);
    const down = { ready: () => false, push: () => Promise.reject(new Error('down')) };
    const p = new LogPipeline({ flushIntervalMs: 20, flushBytes: 32 * 1024, maxMemoryBytes: 64 << 20 }, down, spill, { log: () => undefined, warn: () => undefined }, null, j);
    p.start();
    try {
      const body = Buffer.from(JSON.stringify({ pad: 'x'.repeat(1000) }));
      for (let i = 0; i < 2000; i++) {
        p.append(`{"ts":1,"type":"response","id":"${i}","res":`, body, false);
        p.commitJournal();
        if (i % 100 === 99) await new Promise((r) => setTimeout(r, 5));
      }
      const deadline = Date.now() + 10_000;
      while (p.stats().recordsSpilled === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 200));
      assert.ok(p.stats().recordsSpilled > 0, 'frames spilled though memory was far from its bound');
      assert.ok(j.diskBytes <= 256 * 1024 + 64 * 1024, `journal ${j.diskBytes} bytes`);
      const onDisk = fs.readdirSync(jdir).reduce((n, f) => n + fs.statSync(path.join(jdir, f)).size, 0);
      assert.ok(onDisk < 2000 * 1000, `journal files hold ${onDisk} bytes`);
    } finally {
      await p.close(500);
    }
  });

  it("a living worker's journal is not touched; the same pid with another start time is a dead one", async () => {
    const alive = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, process.pid, processStart() ?? '0');
    alive.open();
    write(alive, ['live']);
    const before = journals();
    assert.deepEqual(await recover(), { segments: 0, frames: 0, records: 0 });
    assert.deepEqual(journals(), before);
    assert.equal(spilled().length, 0);
    // Its own process does not recover it either.
    assert.deepEqual(await recoverJournals(jdir, spill, quiet), { segments: 0, frames: 0, records: 0 });
    // A pid reused by another process (a restarted container's pid 1): the journal's owner is gone.
    const reused = new Journal(jdir, quiet, 0, Number.MAX_SAFE_INTEGER, process.pid, '12345');
    reused.open();
    write(reused, ['gone']);
    assert.deepEqual(await recover(), { segments: 1, frames: 1, records: 1 });
    assert.deepEqual(journals(), before);
    alive.close();
    assert.deepEqual(journals(), before, 'a non-empty segment stays at close');
  });
});
