import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { newFrameId, parseSpillName, SpillStore } from '../../src/log/spill';

/** A pid that is certainly not running: a child that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', '0']);
  return r.pid ?? 0;
}

describe('SpillStore', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'spill-spec-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('gives up at once on a directory that cannot be made: under /proc, through a regular file (never spins)', () => {
    // In a child process with a deadline: a recursive mkdir under /proc never returns and keeps a thread busy.
    const file = path.join(dir, 'a-file');
    fs.writeFileSync(file, 'x');
    const spill = path.join(__dirname, '..', '..', 'src', 'log', 'spill.js');
    for (const target of ['/proc/bidder-spill-test/spill', path.join(file, 'spill')]) {
      const code = `new (require(${JSON.stringify(spill)}).SpillStore)(${JSON.stringify(target)}, 1 << 20, 'w').init().then((ok) => { console.log(ok); process.exit(0); })`;
      const r = spawnSync(process.execPath, ['-e', code], { timeout: 5_000, encoding: 'utf8' });
      assert.equal(r.signal, null, `${target}: init() still running after 5 s`);
      assert.equal(r.stdout.trim(), 'false', `${target}: ${r.stdout}${r.stderr}`);
    }
  });

  it('writes files atomically with sortable names and drains them oldest first', async () => {
    const s = new SpillStore(dir, 1 << 20, 'w 1', 111);
    assert.equal(await s.init(), true);
    const ids = [newFrameId(), newFrameId(), newFrameId()];
    assert.equal(await s.write(Buffer.from('c'), ids[2], 3, 3000), true);
    assert.equal(await s.write(Buffer.from('a'), ids[0], 1, 1000), true);
    assert.equal(await s.write(Buffer.from('b'), ids[1], 2, 2000), true);
    const names = fs.readdirSync(dir).sort();
    assert.equal(names.length, 3);
    assert.ok(names.every((n) => !n.startsWith('.')), 'no temporary files left');
    assert.deepEqual(
      names.map((n) => parseSpillName(n)?.frameId),
      ids,
    );
    assert.ok(names[0].includes('_w-1_'), 'worker id made file-name safe');
    assert.equal(s.knownBytes, 3);
    const got: string[] = [];
    for (let e = s.next(); e; e = s.next()) {
      const data = await s.claim(e);
      assert.ok(data);
      assert.ok(e.path.endsWith('.claim-111'));
      got.push(data.toString());
      await s.remove(e);
    }
    assert.deepEqual(got, ['a', 'b', 'c']);
    assert.deepEqual(fs.readdirSync(dir), []);
    assert.equal(s.knownBytes, 0);
  });

  it('refuses to pass its size bound (the whole directory, as listed)', async () => {
    const other = new SpillStore(dir, 1 << 20, 'w2', 222);
    await other.init();
    assert.equal(await other.write(Buffer.alloc(600), newFrameId(), 1, 1), true);
    const s = new SpillStore(dir, 1000, 'w1', 111);
    await s.init();
    assert.equal(s.knownBytes, 600);
    assert.equal(await s.write(Buffer.alloc(300), newFrameId(), 1, 2), true);
    assert.equal(await s.write(Buffer.alloc(300), newFrameId(), 1, 3), false);
    assert.equal(fs.readdirSync(dir).length, 2);
    assert.equal(await new SpillStore(dir, 0, 'w3', 333).write(Buffer.alloc(1), newFrameId(), 1, 4), false);
  });

  it('lets only one worker claim a file, and takes over claims of dead processes', async () => {
    const writer = new SpillStore(dir, 1 << 20, 'w0', 100);
    await writer.init();
    await writer.write(Buffer.from('x'), newFrameId(), 1, 1);
    const a = new SpillStore(dir, 1 << 20, 'wa', process.pid);
    const b = new SpillStore(dir, 1 << 20, 'wb', deadPid());
    await a.init();
    await b.init();
    const ea = a.next();
    const eb = b.next();
    assert.ok(ea && eb);
    assert.ok(await a.claim(ea));
    assert.equal(await b.claim(eb), null, 'already claimed by a');
    assert.equal(b.count, 0);
    // A live claimer's file is not offered to others; a dead one's is.
    const c = new SpillStore(dir, 1 << 20, 'wc', 999_999_999);
    await c.init();
    assert.equal(c.count, 0);
    const dead = deadPid();
    fs.renameSync(ea.path, path.join(dir, `${ea.base}.claim-${dead}`));
    await c.refresh(true);
    const ec = c.next();
    assert.ok(ec);
    assert.equal(ec.claimedBy, dead);
    assert.equal((await c.claim(ec))?.toString(), 'x');
    assert.ok(fs.existsSync(path.join(dir, `${ea.base}.claim-999999999`)));
  });

  it('removes temporary files of crashed writers and ignores foreign files', async () => {
    fs.writeFileSync(path.join(dir, `.1_2_w_3_x.zst.${deadPid()}.tmp`), 'partial');
    fs.writeFileSync(path.join(dir, 'README'), 'not a spill file');
    const s = new SpillStore(dir, 1 << 20, 'w', 111);
    await s.init();
    assert.equal(s.count, 0);
    assert.deepEqual(fs.readdirSync(dir), ['README']);
  });
});
