// `npm run ab` (tools/ab-cpu.js) run for a few seconds with the build against itself, so that it
// cannot rot: both builds take their whole load at once, every round has a CPU figure for each,
// and the ratios and the pooled figures are computed from them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCRIPT = path.join(ROOT, 'tools', 'ab-cpu.js');

/* eslint-disable-next-line @typescript-eslint/no-require-imports */
const ab = require(SCRIPT) as { parse(argv: string[]): { against: string; idle: number; nodeArgsA: string[]; nodeArgsB: string[]; envB: Record<string, string> } };

interface Side {
  bidRequests: number;
  bids: number;
  cpuSeconds: number;
  usPerBidRequest: number;
}

describe('npm run ab (tools/ab-cpu.js)', () => {
  it('reads its options: --against is required, B runs with A’s Node options unless given its own, and B’s variables', () => {
    assert.throws(() => ab.parse([]), /--against <dir> is required/);
    assert.throws(() => ab.parse(['--against', '.', '--rounds', '0']), /--rounds 0/);
    const same = ab.parse(['--against', '.', '--node-args=--max-semi-space-size=16']);
    assert.equal(same.against, path.resolve('.'));
    assert.deepEqual(same.nodeArgsB, ['--max-semi-space-size=16']);
    const other = ab.parse(['--against', '/x', '--node-args=--a', '--node-args-b=--b --c']);
    assert.deepEqual([other.nodeArgsA, other.nodeArgsB], [['--a'], ['--b', '--c']]);
    assert.deepEqual(ab.parse(['--against', '.', '--env-b', 'LOG_JOURNAL=0', '--env-b', 'X=a=b']).envB, { LOG_JOURNAL: '0', X: 'a=b' });
    assert.throws(() => ab.parse(['--against', '.', '--env-b', 'no-equals']), /--env-b no-equals: expected NAME=value/);
    assert.equal(ab.parse(['--against', 'baseline']).against, 'baseline');
    assert.equal(ab.parse(['--against', '.']).idle, 0);
    assert.equal(ab.parse(['--against', '.', '--idle', '60']).idle, 60);
    assert.throws(() => ab.parse(['--against', '.', '--idle=-1']), /--idle -1: expected a number from 0 to 3600/);
  });

  it('measures the build against itself, both at once, round by round (with a pause without load before the second)', { timeout: 120_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ab-spec-'));
    try {
      const json = path.join(dir, 'ab.json');
      const rate = 150;
      const seconds = 3;
      const r = spawnSync(process.execPath, [SCRIPT, '--against', ROOT, '--rounds', '2', '--seconds', String(seconds), '--warmup', '2', '--rate', String(rate), '--idle', '1', '--json', json], {
        encoding: 'utf8',
        timeout: 100_000,
        // A shared CI machine may keep a request waiting past the shed budget; this run checks the
        // tool's figures, so both builds answer every request (bids are counted below).
        env: { ...process.env, SHED_MAX_WAIT_MS: '0' },
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const out = JSON.parse(fs.readFileSync(json, 'utf8')) as {
        rounds: { first: string; pausedMs: number; a: Side; b: Side; ratio: number }[];
        summary: { pooledA: number; pooledB: number; pooledRatio: number; medianRatio: number };
      };
      assert.deepEqual(
        out.rounds.map((x) => x.first),
        ['A', 'B'],
        'the order in which the two loads send alternates',
      );
      // No load for --idle's second before the second round (the generators stopped, then started again).
      assert.equal(out.rounds[0].pausedMs, 0);
      assert.ok(out.rounds[1].pausedMs >= 1000, `paused ${out.rounds[1].pausedMs} ms before round 2`);
      for (const [i, round] of out.rounds.entries()) {
        for (const [name, side] of [
          ['A', round.a],
          ['B', round.b],
        ] as const) {
          // Both loads ran through the whole window: each side got about rate × seconds requests.
          assert.ok(Math.abs(side.bidRequests - rate * seconds) < 0.25 * rate * seconds, `round ${i + 1}, ${name}: ${side.bidRequests} bid requests in ${seconds} s at ${rate}/s`);
          assert.ok(side.bids > 0.9 * side.bidRequests, `round ${i + 1}, ${name}: ${side.bids} bids of ${side.bidRequests}`);
          assert.ok(side.cpuSeconds > 0 && side.usPerBidRequest > 0, `round ${i + 1}, ${name}: CPU ${side.cpuSeconds} s`);
          assert.equal(side.usPerBidRequest, +((side.cpuSeconds / side.bidRequests) * 1e6).toFixed(1));
        }
        assert.equal(round.ratio, +(round.b.usPerBidRequest / round.a.usPerBidRequest).toFixed(3));
      }
      assert.equal(out.summary.pooledRatio, +(out.summary.pooledB / out.summary.pooledA).toFixed(3));
      assert.match(r.stdout, /^\| 2 \| B \| [\d.]+ \| [\d.]+ \| [\d.]+ \|/m);
      assert.match(r.stdout, /each after the first preceded by 1 s without load and 2 s with it/);
      assert.match(r.stdout, /B \/ A: median [\d.]+ \([\d.]+–[\d.]+ over 2 rounds\); pooled/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
