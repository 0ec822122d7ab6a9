// The load test's memory figures (tools/lib/loadtest-memory.js): the host's resident memory summed
// over every server process per sample, and each worker's mark-compacts from its own /metrics.
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Registry, collectDefaultMetrics } from 'prom-client';
import { fixtureReport } from '../../test/ops/support/loadtest-fixture';

const ROOT = path.resolve(__dirname, '..', '..', '..');

interface Parsed {
  worker: string | null;
  gc: Record<string, { count: number; seconds: number }>;
  heapTotal: number | null;
  heapSpaces: Record<string, number>;
}
interface Rate {
  worker: string;
  markCompacts: number;
  markCompactsPerMinute: number;
  markingMsPerMinute: number;
  markingMsPerMarkCompact: number | null;
  scavengesPerMinute: number;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const mem = require(path.join(ROOT, 'tools', 'lib', 'loadtest-memory.js')) as {
  hostMemory(samples: { t: number; rss: Partial<Record<number, number>> }[], pids: number[], from: number, to: number): { samples: number; peakMB: number; avgMB: number; peakByPid: Record<number, number> } | null;
  parseWorkerMetrics(text: string): Parsed;
  scrapeWorkers(url: string, workers: number, o?: { tries?: number }): Promise<Record<string, Parsed & { t: number }>>;
  gcRates(a: Record<string, Parsed & { t: number }>, b: Record<string, Parsed & { t: number }>): Rate[];
};

// eslint-disable-next-line @typescript-eslint/no-require-imports
const proc = require(path.join(ROOT, 'tools', 'lib', 'loadtest-proc.js')) as { pssMB(pid: number): number | null; memory(pid: number): { rssMB: number | null } | null };
// eslint-disable-next-line @typescript-eslint/no-require-imports
const report = require(path.join(ROOT, 'tools', 'lib', 'loadtest-report.js')) as { markdown(rep: unknown, o?: { brief?: boolean }): string };

const text = (worker: string, major: number, majorS: number, minor: number, incS: number) =>
  [
    '# HELP nodejs_gc_duration_seconds Garbage collection duration by kind, one of major, minor, incremental or weakcb.',
    '# TYPE nodejs_gc_duration_seconds histogram',
    `nodejs_gc_duration_seconds_bucket{le="0.001",kind="major",worker="${worker}"} 0`,
    `nodejs_gc_duration_seconds_sum{kind="major",worker="${worker}"} ${majorS}`,
    `nodejs_gc_duration_seconds_count{kind="major",worker="${worker}"} ${major}`,
    `nodejs_gc_duration_seconds_sum{kind="minor",worker="${worker}"} 0.5`,
    `nodejs_gc_duration_seconds_count{kind="minor",worker="${worker}"} ${minor}`,
    `nodejs_gc_duration_seconds_sum{kind="incremental",worker="${worker}"} ${incS}`,
    `nodejs_gc_duration_seconds_count{kind="incremental",worker="${worker}"} 3`,
    `nodejs_heap_size_total_bytes{worker="${worker}"} 52428800`,
    `nodejs_heap_space_size_total_bytes{space="new",worker="${worker}"} 33554432`,
  ].join('\n');

describe('load test: memory of the host and GC of the workers', () => {
  it('sums every process per sample, inside the window only, and skips a sample that misses one', () => {
    const samples = [
      { t: 0, rss: { 1: 900, 2: 900, 3: 900 } }, // before the window
      { t: 1000, rss: { 1: 100, 2: 200, 3: 50 } },
      { t: 2000, rss: { 1: 120, 2: 210 } }, // the shipper not read: not summed
      { t: 3000, rss: { 1: 110, 2: 260, 3: 40 } },
      { t: 9000, rss: { 1: 999, 2: 999, 3: 999 } }, // after it
    ];
    const h = mem.hostMemory(samples, [1, 2, 3], 1000, 3000);
    assert.ok(h);
    assert.equal(h.samples, 2);
    assert.equal(h.peakMB, 410);
    assert.equal(h.avgMB, (350 + 410) / 2);
    assert.deepEqual(h.peakByPid, { 1: 110, 2: 260, 3: 50 });
    assert.equal(mem.hostMemory(samples, [1, 2, 3], 5000, 6000), null);
  });

  it('PSS of a live process is below its RSS (the Node binary is shared) and null for a gone one', () => {
    const me = proc.memory(process.pid);
    const pss = proc.pssMB(process.pid);
    assert.ok(me && me.rssMB !== null && pss !== null && pss > 0 && pss <= me.rssMB + 1, `PSS ${pss} MB, RSS ${me?.rssMB} MB`);
    assert.equal(proc.pssMB(2 ** 22 + 1), null);
  });

  it('reads mark-compacts, their marking time and scavenges per minute from two scrapes', () => {
    const a = { '0': { t: 0, ...mem.parseWorkerMetrics(text('0', 10, 1.0, 1000, 0.2)) } };
    const b = { '0': { t: 120_000, ...mem.parseWorkerMetrics(text('0', 18, 1.6, 3400, 0.6)) }, '1': { t: 120_000, ...mem.parseWorkerMetrics(text('1', 5, 1, 5, 0)) } };
    assert.equal(b['0'].worker, '0');
    assert.equal(b['0'].heapTotal, 52428800);
    assert.equal(b['0'].heapSpaces.new, 33554432);
    const [r, ...rest] = mem.gcRates(a, b);
    assert.equal(rest.length, 0, 'a worker without a first scrape has no rate');
    assert.equal(r.worker, '0');
    assert.equal(r.markCompacts, 8);
    assert.equal(r.markCompactsPerMinute, 4);
    // (0.6 s of pauses + 0.4 s of incremental steps) over 2 minutes, 8 mark-compacts.
    assert.ok(Math.abs(r.markingMsPerMinute - 500) < 1e-6);
    assert.ok(Math.abs((r.markingMsPerMarkCompact ?? 0) - 125) < 1e-6);
    assert.equal(r.scavengesPerMinute, 1200);
  });

  it('scrapes each worker of a cluster on new connections, and prom-client\'s own text parses', async () => {
    // Two "workers" behind one port, answering in turn as a PM2 cluster hands out connections.
    const registries = ['0', '1'].map((worker) => {
      const r = new Registry();
      r.setDefaultLabels({ worker });
      collectDefaultMetrics({ register: r });
      return r;
    });
    let next = 0;
    const server = http.createServer((req, res) => {
      const r = registries[next++ % 2];
      void r.metrics().then((body) => res.end(body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
      const seen = await mem.scrapeWorkers(url, 2);
      assert.deepEqual(Object.keys(seen).sort(), ['0', '1']);
      for (const w of Object.values(seen)) {
        assert.ok(w.heapTotal !== null && w.heapTotal > 0, 'the V8 heap figures are read');
        assert.ok('new' in w.heapSpaces && 'old' in w.heapSpaces);
      }
      assert.deepEqual(await mem.scrapeWorkers('http://127.0.0.1:1/metrics', 2, { tries: 2 }), {}, 'nothing listening: no worker, no throw');
    } finally {
      server.close();
    }
  });

  it('the report has the host\'s RSS and each worker\'s mark-compacts per minute in the measured phase', () => {
    const text = report.markdown(fixtureReport('memory-fixture'), { brief: true });
    assert.match(text, /Memory at 1300\/s: the host's resident memory and each worker's garbage collections/);
    const row = text.split('\n').find((l) => l.startsWith('| bidder, 2 workers') && l.includes('**390**'));
    assert.ok(row, text);
    assert.match(row, /\| \*\*390\*\* \/ 372 MB \(330 MB\) \| 530 \/ 512 MB \(470 MB\) \| worker 0 180 \(140\), worker 1 176 \(136\), shipper 120 \(90\), PM2 daemon 60 \(30\) MB \| 4\.0 \/ 4\.0 \| 42 \(10\.5\) \/ 42 \(10\.5\) \| 600 \/ 600 \|/);
    assert.ok(!text.split('\n').some((l) => l.startsWith('| bare Fastify baseline') && l.includes('**')), 'no memory row for a target without figures');
  });
});

