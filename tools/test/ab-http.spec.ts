// Smoke run of tools/bench/ab-http.js (the time-interleaved A/B of server processes, bench/README.md), so
// that it cannot rot: two baseline servers (tools/bench/baseline/server.js), one short round each.
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { freePort } from '../../test/support/redis';

const ROOT = path.resolve(__dirname, '..', '..', '..');

async function startBaseline(port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'tools', 'bench', 'baseline', 'server.js')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: 'ignore',
  });
  for (let i = 0; i < 100; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health/ready`);
      if (res.ok) return child;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill();
  throw new Error(`baseline on port ${port} did not start`);
}

describe('tools/bench/ab-http.js (smoke)', () => {
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill();
  });

  it('measures CPU per request of each target and the ratio to the first', { timeout: 60_000 }, async () => {
    const ports = [await freePort(), await freePort()];
    for (const p of ports) children.push(await startBaseline(p));
    const targets = children.map((c, i) => `${c.pid}=http://127.0.0.1:${ports[i]}/openrtb2/bid`);
    const r = spawnSync(process.execPath, [path.join(ROOT, 'tools', 'bench', 'ab-http.js'), '--phase', '0.5', '--rounds', '2', '--conc', '2', '--warmup', '0.5', ...targets], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.equal(lines.length, 2, r.stdout);
    lines.forEach((line, i) => {
      const m = /^(\S+)\s+([\d.]+) µs\/req {2}ratio to the first ([\d.]+) {2}n=(\d+) {2}bids ([\d.]+) % {2}rounds: (\d+) (\d+)$/.exec(line);
      assert.ok(m, line);
      assert.equal(m[1], `http://127.0.0.1:${ports[i]}/openrtb2/bid`);
      assert.ok(Number(m[2]) > 0, `CPU per request ${m[2]}`);
      assert.ok(Number(m[4]) > 10, `requests ${m[4]}`);
      if (i === 0) assert.equal(m[3], '1.000');
      assert.ok(Number(m[5]) >= 0 && Number(m[5]) <= 100, `share of bids ${m[5]}`);
    });
  });

  it('refuses a target without a pid, with a usage line', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'tools', 'bench', 'ab-http.js'), 'http://127.0.0.1:1/openrtb2/bid'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /^ab-http: http:\/\/127\.0\.0\.1:1\/openrtb2\/bid: expected <pid>=<url>\nusage: node tools\/bench\/ab-http\.js/);
  });
});
