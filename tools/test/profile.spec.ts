// `npm run profile` (tools/profile.js) run for a few seconds per target, so that it cannot rot:
// the table has every bucket for the bidder and the baseline, the buckets add up to the CPU per
// request measured from /proc, and the bucket rule separates what only the bidder runs (its src/
// folders, Redis, zstd) from what both run. Skipped where perf is missing or not allowed.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SCRIPT = path.join(ROOT, 'tools', 'profile.js');

/* eslint-disable-next-line @typescript-eslint/no-require-imports */
const profile = require(SCRIPT) as {
  perfProblem(): string | null;
  latestMapEntries(text: string): string;
  sampleBucket(s: { tid: number; comm: string; frames: { sym: string; dso: string }[] }, pid: number): string;
  BUCKETS: [string, string][];
  MARKERS: [string, string];
  replaceBlock(text: string, block: string, file: string): string;
  profileBlock(o: {
    argv: string[];
    git: { commit: string; dirty: boolean } | null;
    settings: string;
    table: string;
    loadBefore: number[];
    loadAfter: number[];
    cpus?: { model: string }[];
    totalmem?: number;
    now?: Date;
  }): string;
};

interface Result {
  bidRequests: number;
  bids: number;
  notices: number;
  cpuPerBidRequestUs: number;
  samples: number;
  sampleCoverage: number;
  buckets: Record<string, { samples: number; us: number }>;
}

const problem = profile.perfProblem();
if (problem) console.log(`# tools/profile.js: skipped: ${problem}`);

describe('npm run profile (tools/profile.js)', () => {
  it('buckets samples by the documented rule', () => {
    const node = '/x/node';
    const k = '[kernel.kallsyms]';
    const js = (name: string, file: string) => ({ sym: `JS:*${name} ${file}:1:2`, dso: '/tmp/perf-1.map' });
    const bucket = (frames: { sym: string; dso: string }[], tid = 1) => profile.sampleBucket({ tid, comm: 'MainThread', frames }, 1);
    // JSON.stringify (a V8 builtin) passes to its caller: the log record.
    assert.equal(bucket([{ sym: 'v8::internal::JsonStringifier::Serialize_', dso: node }, js('record', path.join(ROOT, 'dist', 'log', 'log.service.js'))]), 'log');
    assert.equal(bucket([{ sym: 'v8::internal::JsonParser<unsigned char>::ParseJsonValue', dso: node }, js('read', path.join(ROOT, 'dist', 'http', 'body.js'))]), 'json');
    assert.equal(bucket([js('v4', path.join(ROOT, 'node_modules', 'uuid', 'dist', 'v4.js')), js('bid', path.join(ROOT, 'dist', 'bidding', 'bidding.service.js'))]), 'bidding');
    assert.equal(bucket([js('sign', path.join(ROOT, 'dist', 'crypto', 'hmac.js'))]), 'tracking');
    assert.equal(bucket([js('lookup', path.join(ROOT, 'node_modules', 'fastify', 'node_modules', 'find-my-way', 'index.js'))]), 'http');
    assert.equal(bucket([js('write', 'node:_http_outgoing'), js('send', path.join(ROOT, 'dist', 'http', 'answer.js'))]), 'http');
    assert.equal(bucket([js('sendCommand', path.join(ROOT, 'node_modules', 'ioredis', 'built', 'Redis.js'))]), 'redis');
    // GC anywhere in the stack wins, even under our own frames or in the kernel.
    assert.equal(bucket([{ sym: 'clear_page_erms', dso: k }, { sym: 'v8::internal::Scavenger::ScavengePage', dso: node }, js('bid', path.join(ROOT, 'dist', 'bidding', 'x.js'))]), 'gc');
    assert.equal(bucket([{ sym: 'tcp_sendmsg', dso: k }, { sym: 'uv__write', dso: node }]), 'knet');
    assert.equal(bucket([{ sym: 'do_epoll_wait', dso: k }, { sym: 'uv__io_poll', dso: node }]), 'ksys');
    assert.equal(bucket([{ sym: 'v8::internal::compiler::Pipeline::Run', dso: node }], 7), 'compiler');
    assert.equal(bucket([{ sym: 'ZSTD_compressBlock_fast', dso: node }], 7), 'zstd');
    assert.equal(bucket([{ sym: 'uv_run', dso: node }]), 'other');
  });

  it('--write: the table goes between the markers of bench/README.md with what measured it; nothing else changes', () => {
    const readme = fs.readFileSync(path.join(ROOT, 'bench', 'README.md'), 'utf8');
    const [begin, end] = profile.MARKERS;
    assert.ok(readme.includes(begin) && readme.indexOf(end) > readme.indexOf(begin), 'bench/README.md has the block');
    const block = profile.profileBlock({
      argv: ['--write'],
      git: { commit: '0123456789', dirty: false },
      settings: '30 s of perf samples per target.',
      table: '| bucket | bidder |\n|---|---:|\n| JSON.parse | 12.0 |',
      loadBefore: [3.4, 2, 1],
      loadAfter: [2.2, 2, 1],
      cpus: [{ model: 'Test CPU ' }, { model: 'Test CPU' }],
      totalmem: 8 * 2 ** 30,
      now: new Date('2026-01-01T00:00:00Z'),
    });
    assert.match(block, /^<!-- profile:begin -->\nWritten by `npm run profile -- --write` \(tools\/profile\.js\)/);
    assert.match(block, /Machine: Test CPU x2, 8 GiB; Node v[\d.]+; commit 0123456789; 2026-01-01T00:00:00\.000Z; load average 3\.4 2\.0 1\.0 before, 2\.2 2\.0 1\.0 after\./);
    assert.match(block, /\*\*The machine was busy\*\* \(load average up to 3\.4 on 2 CPUs\)/);
    assert.match(block, /\| JSON\.parse \| 12\.0 \|\n<!-- profile:end -->$/);
    const quiet = profile.profileBlock({ argv: [], git: null, settings: 's', table: 't', loadBefore: [0.2, 0, 0], loadAfter: [0.9, 0, 0], cpus: [{ model: 'c' }, { model: 'c' }] });
    assert.doesNotMatch(quiet, /busy/);
    assert.match(quiet, /commit unknown/);
    const once = profile.replaceBlock(readme, block, 'README');
    assert.equal(once.slice(0, once.indexOf(begin)), readme.slice(0, readme.indexOf(begin)), 'what comes before is kept');
    assert.equal(once.slice(once.indexOf(end)), readme.slice(readme.indexOf(end)), 'what comes after is kept');
    assert.equal(profile.replaceBlock(once, block, 'README'), once, 'a second write of the same block changes nothing');
    assert.throws(() => profile.replaceBlock('# no block\n', block, 'x.md'), /x\.md: no "<!-- profile:begin -->"/);
  });

  it('--write-file into a file without the block: refused before anything runs', { skip: problem ?? false }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-spec-'));
    try {
      const md = path.join(dir, 'plain.md');
      fs.writeFileSync(md, '# no block\n');
      const r = spawnSync(process.execPath, [SCRIPT, '--write-file', md], { encoding: 'utf8', timeout: 20_000 });
      assert.equal(r.status, 2, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, /plain\.md: no "<!-- profile:begin -->"/);
      assert.equal(fs.readFileSync(md, 'utf8'), '# no block\n');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('names a reused code address by the code written there last', () => {
    // Chronological, as V8 appends: a range freed and reused (0x1000-0x10ff, then 0x1080-0x117f),
    // one reused exactly (0x2000), and one never reused.
    const map = ['1000 100 JS:~old a.js:1:1', '2000 40 JS:~gone b.js:1:1', '3000 10 JS:*kept c.js:1:1', '1080 100 JS:*new d.js:1:1', '2000 40 JS:*later e.js:1:1', ''].join('\n');
    assert.deepEqual(profile.latestMapEntries(map).trim().split('\n').sort(), ['1080 100 JS:*new d.js:1:1', '2000 40 JS:*later e.js:1:1', '3000 10 JS:*kept c.js:1:1']);
    // Adjacent ranges do not overlap: both stay.
    assert.equal(profile.latestMapEntries('1000 10 JS:a\n1010 10 JS:b\n').trim().split('\n').length, 2);
  });

  it('profiles the bidder and the baseline: every bucket, totals that add up', { skip: problem ?? false, timeout: 240_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-spec-'));
    try {
      const json = path.join(dir, 'profile.json');
      const md = path.join(dir, 'README.md');
      fs.writeFileSync(md, `# head\n\n${profile.MARKERS[0]}\nold table\n${profile.MARKERS[1]}\n\ntail\n`);
      const r = spawnSync(process.execPath, [SCRIPT, '--seconds', '3', '--warmup', '2', '--rate', '150', '--json', json, '--write-file', md], { encoding: 'utf8', timeout: 200_000 });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const written = fs.readFileSync(md, 'utf8');
      assert.ok(written.startsWith(`# head\n\n${profile.MARKERS[0]}\nWritten by \`npm run profile -- --seconds 3 `), written);
      assert.ok(written.endsWith(`${profile.MARKERS[1]}\n\ntail\n`), written);
      assert.doesNotMatch(written, /old table/);
      assert.match(written, /\| \*\*total \(\/proc\/<pid>\/stat\)\*\* \|\s+[\d.]+ \|\s+[\d.]+ \|/);
      const out = JSON.parse(fs.readFileSync(json, 'utf8')) as { results: Record<string, Result> };
      assert.deepEqual(Object.keys(out.results), ['bidder', 'baseline']);
      for (const [, label] of profile.BUCKETS) assert.ok(r.stdout.includes(`| ${label} |`), `the table has no row "${label}":\n${r.stdout}`);
      assert.match(r.stdout, /\| \*\*total \(\/proc\/<pid>\/stat\)\*\* \|\s+[\d.]+ \|\s+[\d.]+ \|/);
      for (const [name, res] of Object.entries(out.results)) {
        assert.ok(res.bidRequests > 100, `${name}: ${res.bidRequests} bid requests answered in the window`);
        assert.ok(res.notices > 0, `${name}: no notices were sent`);
        assert.ok(res.cpuPerBidRequestUs > 0 && Number.isFinite(res.cpuPerBidRequestUs), `${name}: CPU per bid request ${res.cpuPerBidRequestUs}`);
        assert.ok(res.samples > 20, `${name}: ${res.samples} samples`);
        assert.ok(res.sampleCoverage > 0.2 && res.sampleCoverage < 2, `${name}: samples cover ${res.sampleCoverage} of the CPU time`);
        assert.deepEqual(Object.keys(res.buckets), profile.BUCKETS.map(([key]) => key));
        const samples = Object.values(res.buckets).reduce((a, b) => a + b.samples, 0);
        assert.equal(samples, res.samples, `${name}: every sample is in one bucket`);
        const us = Object.values(res.buckets).reduce((a, b) => a + b.us, 0);
        assert.ok(Math.abs(us - res.cpuPerBidRequestUs) < 0.01 * res.cpuPerBidRequestUs, `${name}: buckets add up to ${us}, not ${res.cpuPerBidRequestUs}`);
        assert.ok(res.buckets.http.samples > 0, `${name}: no sample in the HTTP layers`);
        assert.ok(res.buckets.other.samples < 0.5 * res.samples, `${name}: half the samples or more fell in "other"`);
      }
      const { bidder, baseline } = out.results;
      // Only the bidder runs these; a baseline sample in them would mean the rule misfiles frames.
      for (const k of ['srchttp', 'openrtb', 'targeting', 'privacy', 'tracking', 'delivery', 'log', 'redis', 'zstd']) {
        assert.equal(baseline.buckets[k].samples, 0, `baseline samples in ${k}`);
      }
      const ours = ['bidding', 'openrtb', 'targeting', 'privacy', 'tracking', 'delivery', 'log'].reduce((a, k) => a + bidder.buckets[k].samples, 0);
      assert.ok(ours > 0, 'no bidder sample in its own src/ folders');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
