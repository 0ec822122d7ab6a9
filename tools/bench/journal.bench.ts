/**
 * What the crash journal costs the bid path (not a test): the log pipeline alone, fed a bid's two
 * records (a ~0.9 KB request body, a ~2 KB response body, as bytes like the bid path hands them
 * over) with the journal on and off, in alternating rounds; CPU time (user + system, so the write(2)
 * counts) per request. The frames go to a sink that takes them at once, so segments come and go as
 * in a worker.
 *
 *   npm run build:test && node_modules/.bin/node .test-build/tools/bench/journal.bench.js [rounds] [answers per turn]
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Journal } from '../../src/log/journal';
import { LogPipeline } from '../../src/log/log-pipeline';
import { SpillStore } from '../../src/log/spill';
import { count, readCommandLine } from './cli';

const PAIRS = 20_000;
const USAGE = 'usage: node .test-build/tools/bench/journal.bench.js [rounds (10)] [answers per turn (1)]';
const { positionals } = readCommandLine({ name: 'journal.bench', usage: USAGE, allowPositionals: true, maxPositionals: 2 });
const ROUNDS = count('journal.bench', USAGE, positionals[0], 10);
const PER_TURN = count('journal.bench', USAGE, positionals[1], 1);
const quiet = { log: (): void => undefined, warn: (m: string): void => console.error(m) };
const sink = { ready: () => true, push: () => Promise.resolve(true) };

function head(type: string, i: number): string {
  return `{"ts":${Date.now()},"type":"${type}","worker":"0","host":"bench","name":"foobar.com","id":"req-${i}","exchange":"open"${type === 'request' ? ',"req":' : ',"status":200,"ms":0.41,"privacy":"none","res":'}`;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function round(p: LogPipeline, reqBody: Buffer, resBody: Buffer): Promise<number> {
  const t0 = process.cpuUsage();
  for (let i = 0; i < PAIRS; i++) {
    p.append(head('request', i), reqBody, false);
    p.append(head('response', i), resBody, false);
    // One journal write per event-loop turn: PER_TURN answers in each (1, the default, is the costliest case).
    if ((i + 1) % PER_TURN === 0) p.commitJournal();
  }
  const d = process.cpuUsage(t0);
  // Let the pipeline compress and "push" what was queued (and delete the journal's segments).
  while (p.stats().recordsQueued > 0 || p.stats().batchesPending > 0) await sleep(20);
  return (d.user + d.system) / PAIRS;
}

async function main(): Promise<void> {
  const rounds = ROUNDS;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'journal-bench-'));
  const reqBody = Buffer.from(JSON.stringify({ id: 'x', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { page: 'p'.repeat(700) } }));
  const resBody = Buffer.from(JSON.stringify({ id: 'x', seatbid: [{ bid: [{ id: 'b', impid: '1', price: 1.2, adm: 'a'.repeat(1900) }] }] }));
  const opts = { flushIntervalMs: 1_000, flushBytes: 8 << 20, maxMemoryBytes: 1 << 30 };
  const off = new LogPipeline(opts, sink, new SpillStore(path.join(dir, 'off'), 1 << 30, 'off'), quiet);
  const on = new LogPipeline(opts, sink, new SpillStore(path.join(dir, 'on'), 1 << 30, 'on'), quiet, null, new Journal(path.join(dir, 'on', 'journal'), quiet));
  off.start();
  on.start();
  const figures: Record<'off' | 'on', number[]> = { off: [], on: [] };
  await round(off, reqBody, resBody); // warm-up
  await round(on, reqBody, resBody);
  for (let r = 0; r < rounds; r++) {
    const order: Array<'off' | 'on'> = r % 2 === 0 ? ['off', 'on'] : ['on', 'off'];
    for (const which of order) figures[which].push(await round(which === 'on' ? on : off, reqBody, resBody));
  }
  await off.close(2_000);
  await on.close(2_000);
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  const diffs = figures.on.map((x, i) => x - figures.off[i]);
  console.log(`request ${reqBody.length} B, response ${resBody.length} B; ${PAIRS} requests per round, ${rounds} rounds, a journal write every ${PER_TURN} requests`);
  console.log(`journal off: median ${median(figures.off).toFixed(2)} µs CPU per request (${figures.off.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`journal on:  median ${median(figures.on).toFixed(2)} µs CPU per request (${figures.on.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`difference per round (on − off): median ${median(diffs).toFixed(2)} µs (${diffs.map((x) => x.toFixed(2)).join(' ')})`);
  console.log(`journal left: ${JSON.stringify(fs.readdirSync(path.join(dir, 'on', 'journal')))}`);
  fs.rmSync(dir, { recursive: true, force: true });
}

void main();
