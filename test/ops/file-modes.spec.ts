// What the shipper writes is the owner's only (issue 23, finding 12), and a SHIP_DIR that cannot be
// created fails at once instead of hanging the shipper "ready" forever (finding 8).
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { toBatch } from '../../src/shipper/batch';
import { ParquetStore } from '../../src/shipper/parquet-store';
import { frameOf, tmpDir } from '../shipper/support';

function walk(dir: string, out: string[] = []): string[] {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) walk(p, out);
  }
  return out;
}

describe('the shipper’s files', () => {
  it('Parquet files, bad frames and their directories are not readable by other users', async () => {
    const d = tmpDir('modes-');
    const store = new ParquetStore({ dir: d, shipperId: 'm', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      const ts = Date.UTC(2026, 4, 1, 10);
      const good = frameOf([JSON.stringify({ ts, type: 'request', id: 'r1', req: { id: 'r1' } })]);
      const r = await store.store(toBatch([good, Buffer.from('not zstd at all')]));
      assert.equal(r.written.length, 1);
      assert.equal(r.badFrames.length, 1);
      const all = walk(d);
      assert.ok(all.some((p) => p.endsWith('.parquet')) && all.some((p) => p.includes('bad-frames')), all.join('\n'));
      for (const p of all) {
        const st = fs.statSync(p);
        if (st.isFile()) assert.equal(st.mode & 0o777, 0o600, `${p}: ${(st.mode & 0o777).toString(8)}`);
        else assert.equal(st.mode & 0o007, 0, `${p}: ${(st.mode & 0o777).toString(8)}`);
      }
    } finally {
      store.close();
      fs.rmSync(d, { recursive: true, force: true });
    }
  });

  it('a SHIP_DIR where mkdir -p never returns (under /proc) fails the batch at once, with the reason (the shipper then says not ready and retries)', async () => {
    const store = new ParquetStore({ dir: '/proc/1/no-such/bidlog', shipperId: 'm', threads: 1, memoryMb: 256 });
    await store.open();
    const t0 = Date.now();
    try {
      const frame = frameOf([JSON.stringify({ ts: Date.UTC(2026, 4, 1, 10), type: 'request', id: 'r1', req: { id: 'r1' } })]);
      const outcome = await Promise.race([
        store.store(toBatch([frame])).then(
          () => 'stored',
          (e: Error) => e.message,
        ),
        new Promise<string>((r) => setTimeout(() => r('still waiting after 10 s'), 10_000).unref()),
      ]);
      assert.match(outcome, /^stage: ENOENT/);
      assert.ok(Date.now() - t0 < 10_000);
    } finally {
      store.close();
    }
  });
});
