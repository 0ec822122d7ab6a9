// The load test's baseline (tools/bench/baseline/server.js) must receive the notices k6 sends after a bid
// exactly as the bidder does: k6/lib/lean.js finds a win notice and an impression tracker in every
// bid it answers, whatever the media type, and both answer as the bidder's do (204, and 200 with a
// GIF). Otherwise the baseline serves fewer HTTP requests per bid and the CPU ratio is not fair.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { freePort } from '../../test/support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/* eslint-disable @typescript-eslint/no-require-imports */
const gen = require(path.join(ROOT, 'k6', 'lib', 'generator.js')) as {
  buildPool(n: number, seed: number): { rest: string; meta: { imps: { mt: number[] }[] } }[];
  bodyFor(e: unknown, id: string): string;
};
const lean = require(path.join(ROOT, 'k6', 'lib', 'lean.js')) as {
  winNotice(body: string): string | null;
  impressionTracker(body: string): string | null;
};
/* eslint-enable @typescript-eslint/no-require-imports */

describe('tools/bench/baseline/server.js: the notices k6 follows', () => {
  let child: ChildProcess | null = null;
  let base = '';

  before(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [path.join(ROOT, 'tools', 'bench', 'baseline', 'server.js')], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
      stdio: 'ignore',
    });
    for (let i = 0; i < 100; i++) {
      try {
        if ((await fetch(`${base}/health/ready`)).ok) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the baseline did not start');
  });
  after(() => child?.kill());

  it('answers every bid with a win notice and an impression tracker that k6 finds and the baseline serves', { timeout: 60_000 }, async () => {
    const pool = gen.buildPool(200, 11);
    const seen = new Set<number>();
    for (let i = 0; i < pool.length; i++) {
      const res = await fetch(`${base}/openrtb2/bid`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: gen.bodyFor(pool[i], `b-${i}`) });
      assert.equal(res.status, 200);
      const body = await res.text();
      seen.add((JSON.parse(body) as { seatbid: { bid: { mtype: number }[] }[] }).seatbid[0].bid[0].mtype);
      // As k6/bid.js does for a target spoken to over plain HTTP.
      const win = lean.winNotice(body)?.replace('https://', 'http://') ?? null;
      const imp = lean.impressionTracker(body)?.replace('https://', 'http://') ?? null;
      assert.ok(win !== null, `no win notice k6 can find in ${body}`);
      assert.ok(imp !== null, `no impression tracker k6 can find in ${body}`);
      // The bidder's shapes: /t/win?p=<payload>&s=<signature>&price=…, /t/imp?p=<payload>&s=<signature>.
      assert.match(win, new RegExp(`^${base}/t/win\\?p=[\\w-]+&s=[\\w-]+&price=[\\d.]+&cur=USD$`));
      assert.match(imp, new RegExp(`^${base}/t/imp\\?p=[\\w-]+&s=[\\w-]+$`));
      if (i < 40) {
        const w = await fetch(win);
        assert.equal(w.status, 204);
        const m = await fetch(imp);
        assert.equal(m.status, 200);
        assert.equal(m.headers.get('content-type'), 'image/gif');
        await m.arrayBuffer();
      }
    }
    // Banner, video and native at least (the generator's mix).
    for (const mt of [1, 2, 4]) assert.ok(seen.has(mt), `no answer of mtype ${mt} among ${[...seen].join(',')}`);
  });
});
