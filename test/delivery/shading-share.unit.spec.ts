/**
 * The sync's logic (ShadingService.sync) on an in-memory ShadingRepository that two workers share:
 * what one learns the other prices from, decayed from the writer's time; deltas after the first
 * write; the other's counts dropped once it stops sharing; segments made only when a bid or notice
 * needs them; the shared texts in the format every worker version reads (`<ms>:<base64 of 6-byte
 * entries: array, bin, count as a 32-bit float>`); a store that is away counted, not thrown.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../src/config/config';
import type { Rates } from '../../src/currency/rates';
import { Clock } from '../../src/delivery/clock';
import type { NoticedBid } from '../../src/delivery/noticed-bid';
import { Random } from '../../src/delivery/random';
import { binOf, Counts, GRID_SIZE, type Segment } from '../../src/delivery/shading';
import { floorBucket, segmentKey, ShadingService } from '../../src/delivery/shading.service';
import type { BidRequest, Imp } from '../../src/openrtb/types';
import type { CampaignStore } from '../../src/targeting/campaign-store';
import type { Candidate, Match } from '../../src/targeting/types';
import { MemoryShadingRepository } from '../support/fake-stores';

const NOW = Date.UTC(2026, 10, 28, 9, 30);
const HALF_LIFE = 600_000;
const banner = { id: 'cr-banner', campaignId: 'c1', price: 2, banner: { w: 300, h: 250 }, video: null } as unknown as Candidate;
const FLOOR = 0.5;
const SD = 2 + 16 * floorBucket(FLOOR);
const KEY = segmentKey(0, 'pub-a', '300x250', 2, floorBucket(FLOOR));

interface Worker {
  s: ShadingService;
  clock: { at: number };
  member: string;
}

function worker(repo: MemoryShadingRepository, id: string): Worker {
  const config = { shading: true, shadingExplore: 0, hostId: 'h', workerId: id, shadingSyncMs: 10_000, shadingLearnPerS: 1_000_000, shadingHalfLifeMs: HALF_LIFE } as unknown as Config;
  const store = { current: () => ({ get: () => banner }) } as unknown as CampaignStore;
  const at = { at: NOW };
  const clock = new Clock();
  clock.now = () => at.at;
  const s = new ShadingService(config, repo, store, new Random(), clock);
  const member = `h:${id}:${process.pid}`;
  repo.live.add(member);
  return { s, clock: at, member };
}

let seq = 0;
const noticed = (w: Worker, publisher = 'pub-a'): NoticedBid => ({ bidId: `b-${seq++}`, cid: 'c1', crid: 'cr-banner', price: 1.5, cur: 'USD', ts: w.clock.at, publisher, source: 0 });

/** `n` wins at 1.5 whose prices to win were told, spread over 0.6-0.9. */
function teach(w: Worker, n: number, publisher = 'pub-a'): void {
  for (let i = 0; i < n; i++) w.s.learn('win', noticed(w, publisher), 1.5, 0.6 + (0.3 * i) / n, SD, null);
  w.s.tick();
}

const rates = { convert: (v: number) => v } as unknown as Rates;
const match = { dealId: null, price: 2, candidate: banner } as unknown as Match;
const price = (w: Worker, publisher = 'pub-a'): number =>
  w.s.price({ at: 1, publisher, deviceType: 2, source: 0 } as unknown as BidRequest, { bidfloor: FLOOR, bidfloorcur: 'USD' } as unknown as Imp, match, 'USD', rates, w.clock.at);

/** Internals read by the tests: the segments made, and a segment's weight of observations. */
const segments = (w: Worker): Map<string, { weight: number; others: unknown }> => (w.s as unknown as { segments: Map<string, { weight: number; others: unknown }> }).segments;

const maxDiff = (x: ArrayLike<number>, y: ArrayLike<number>): number => {
  let d = 0;
  for (let k = 0; k < x.length; k++) d = Math.max(d, Math.abs(x[k] - y[k]));
  return d;
};

/** The 6-byte entries of a shared text: [array, bin, count]. */
function decode(text: string): { at: number; entries: Array<[number, number, number]> } {
  const colon = text.indexOf(':');
  const buf = Buffer.from(text.slice(colon + 1), 'base64');
  const entries: Array<[number, number, number]> = [];
  for (let o = 0; o + 6 <= buf.length; o += 6) entries.push([buf[o], buf[o + 1], buf.readFloatLE(o + 2)]);
  return { at: Number(text.slice(0, colon)), entries };
}

describe('shading sync through its repository (in memory, two workers)', () => {
  it('what one worker learns, the other prices from, and the shared text is the wire format', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    // What a worker that learned nothing bids (the prior).
    const before = price(worker(new MemoryShadingRepository(), 'c'));
    teach(a, 200);
    await a.s.sync();
    const mine = repo.states.get(a.member)!;
    // The segment, its publisher's at the floor, the publisher, the exchange and the pool; and when it wrote.
    assert.deepEqual([...mine.keys()].sort(), ['*', 'p|0|pub-a', `pf|0|pub-a|${floorBucket(FLOOR)}`, 's|0', KEY, '~written'].sort());
    assert.equal(mine.get('~written'), `${NOW}:`);
    const { at, entries } = decode(mine.get(KEY)!);
    assert.equal(at, NOW);
    // 200 prices to win (array 2: exact), each in its bin, and 200 answered bids at 1.5's grid price (array 1).
    const exact = entries.filter(([array]) => array === 2);
    assert.ok(exact.every(([, bin]) => bin >= binOf(0.6) && bin <= binOf(0.9)), JSON.stringify(exact));
    assert.ok(Math.abs(exact.reduce((n, [, , v]) => n + v, 0) - 200) < 1e-3);
    assert.deepEqual(entries.filter(([array]) => array === 1).map(([, , v]) => v), [200]);
    assert.equal(repo.ttls.get(a.member), 3 * 10_000 + 60_000);

    // b made no segment while reading; the segment is made when first needed, with a's counts.
    await b.s.sync();
    assert.equal(segments(b).size, 0);
    assert.ok(maxDiff(b.s.cdfOf(KEY), a.s.cdfOf(KEY)) < 1e-6, 'b estimates what a estimates');
    assert.ok(segments(b).get(KEY)!.others !== null);
    assert.ok(Math.abs(segments(b).get(KEY)!.weight - segments(a).get(KEY)!.weight) < 1e-3);
    // And bids what a bids, not what the prior says.
    assert.equal(price(b).toFixed(6), price(a).toFixed(6));
    assert.notEqual(price(b).toFixed(6), before.toFixed(6));
  });

  it('counts are decayed from the writer\'s time; a worker that stops sharing is forgotten at the next sync', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    teach(a, 100);
    await a.s.sync();
    // b reads a half-life after a wrote; its first bid on the segment makes it.
    b.clock.at = NOW + HALF_LIFE;
    await b.s.sync();
    assert.equal(segments(b).size, 0);
    price(b);
    b.s.tick();
    const weight = segments(b).get(KEY)!.weight;
    // Half of a's, and b's own bid, unanswered (from an exchange that has sent no loss notice: a loss).
    assert.ok(Math.abs(weight - (segments(a).get(KEY)!.weight / 2 + 1)) < 1e-3, `b's weight ${weight}`);

    repo.live.delete(a.member);
    await b.s.sync();
    b.s.tick();
    assert.equal(segments(b).get(KEY)!.others, null);
    // What is left is b's own bid, unanswered (an exchange that has sent no loss notice: a loss).
    assert.ok(segments(b).get(KEY)!.weight <= 1, `weight ${segments(b).get(KEY)!.weight}`);
  });

  it('counts another worker wrote before this worker saw the segment\'s market move weigh what it kept of its own (MOVED_KEEP); those written after, in full', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    const seg = (w: Worker): Segment => segments(w).get(KEY) as unknown as Segment;
    const exactOf = (c: Counts | null | undefined): number => (c ? c.exact.reduce((x, y) => x + y, 0) : 0);
    teach(a, 100);
    await a.s.sync();
    // b learns the same market, then prices to win jump to 1.4: its segment sees the move.
    b.clock.at = NOW + 1000;
    teach(b, 150);
    b.clock.at = NOW + 2000;
    for (let i = 0; i < 100; i++) b.s.learn('win', noticed(b), 1.5, 1.4, SD, null);
    b.s.tick();
    assert.ok(seg(b).moves > 0, 'b saw the move');
    // a's counts were written at NOW, before the move: a twentieth of them.
    b.clock.at = NOW + 3000;
    await b.s.sync();
    const aWeight = exactOf(seg(a).own);
    const decay = (ms: number): number => Math.pow(0.5, ms / HALF_LIFE);
    assert.ok(Math.abs(exactOf(seg(b).others) - 0.05 * aWeight * decay(3000)) < 1e-3, `others ${exactOf(seg(b).others)} against a's ${aWeight}`);
    // a writes again after the move (it learned since): in full.
    a.clock.at = NOW + 4000;
    teach(a, 10);
    await a.s.sync();
    b.clock.at = NOW + 5000;
    await b.s.sync();
    const written = exactOf(seg(a).own);
    assert.ok(Math.abs(exactOf(seg(b).others) - written * decay(1000)) < 1e-2, `others ${exactOf(seg(b).others)} against a's ${written}`);
  });

  it('after the first write, a sync writes only the segments that learned since', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    for (let p = 0; p < 20; p++) teach(a, 30, `pub-${p}`);
    await a.s.sync();
    // 20 publishers × 3 levels, the exchange and the pool, and the time of the write (every sync's one field).
    assert.deepEqual(repo.published, [63]);
    await a.s.sync();
    assert.deepEqual(repo.published, [63, 1]);
    teach(a, 5, 'pub-7');
    await a.s.sync();
    // The segment and its parents up to the exchange (the pool has long stopped learning from the only exchange).
    assert.deepEqual(repo.published, [63, 1, 5]);
  });

  it('a segment made while a sync reads takes the last complete sync\'s counts, then this one\'s', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    teach(a, 20);
    for (let p = 0; p < 60; p++) teach(a, 20, `pub-${p}`);
    await a.s.sync();
    await b.s.sync();
    const first = segments(a).get(KEY)!.weight;
    teach(a, 40);
    await a.s.sync();
    const second = segments(a).get(KEY)!.weight;
    // b's next sync reads a's 185 fields in 4 pages, a turn each: the segment is made between two of them.
    const syncs = b.s.stats.syncs;
    const reading = b.s.sync();
    for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
    assert.equal(b.s.stats.syncs, syncs, 'still reading');
    b.s.cdfOf(KEY);
    assert.ok(Math.abs(segments(b).get(KEY)!.weight - first) < 1e-3, `${segments(b).get(KEY)!.weight} against ${first}`);
    await reading;
    b.s.tick();
    assert.ok(Math.abs(segments(b).get(KEY)!.weight - second) < 1e-3, `${segments(b).get(KEY)!.weight} against ${second}`);
  });

  it('a worker whose segments changed only by what the others share writes no segment', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    teach(a, 100);
    await a.s.sync();
    await b.s.sync();
    b.s.cdfOf(KEY);
    teach(a, 10);
    await a.s.sync();
    // b reads a's new counts and re-estimates its segments with them.
    await b.s.sync();
    for (let i = 0; i < 5; i++) b.s.tick();
    repo.published.length = 0;
    await b.s.sync();
    // The time of the write only.
    assert.deepEqual(repo.published, [1]);
  });

  it('the order a sync reads fields in changes nothing: the same segments updated at each tick whatever the store\'s order', async () => {
    // Redis's HSCAN order depends on a seed each Redis process draws at start: the simulator's
    // two-worker runs of one seed differed from run to run while the sync queued segments in the
    // order it read them (300 updated a tick).
    const writer = (repo: MemoryShadingRepository): Worker => worker(repo, 'a');
    const plain = new MemoryShadingRepository();
    const a = writer(plain);
    const publishers = Array.from({ length: 200 }, (_, i) => `pub-${i}`);
    for (const p of publishers) teach(a, 20, p);
    await a.s.sync();
    const reversed = new MemoryShadingRepository();
    reversed.reversed = true;
    for (const [m, state] of plain.states) reversed.states.set(m, new Map(state));
    reversed.live.add(a.member);
    const readers = [worker(plain, 'b'), worker(reversed, 'b')];
    for (const b of readers) {
      b.s.tickBudgetMs = Infinity;
      // The same segments made and estimated on both, in the same order (a notice each).
      for (const p of publishers) b.s.learn('win', noticed(b, p), 1.5, 0.75, SD, null);
      b.s.tick();
      b.clock.at += 1000;
      await b.s.sync();
      b.s.tick();
    }
    assert.ok(readers[0].s.backlog() > 0, 'more segments to update than one tick updates');
    assert.equal(readers[1].s.backlog(), readers[0].s.backlog());
    // Which segments this tick updated (their time), and their estimates.
    const state = (b: Worker): string[] =>
      [...(b.s as unknown as { segments: Map<string, Segment> }).segments].map(([k, seg]) => `${k} ${seg.at} ${Array.from(seg.cdf).join(',')}`).sort();
    const [one, other] = readers.map(state);
    const differ = one.filter((x, i) => x !== other[i]).map((x) => x.split(' ')[0]);
    assert.equal(differ.length, 0, `${differ.length} of ${one.length} segments differ: ${differ.slice(0, 5).join(' ')}`);
  });

  it('an exchange whose wins come late: a worker counts its bids and the answers it gets as of the others\' last write', async () => {
    // Its loss notices come at once and its wins late (bills): bids no notice answered are wins. With
    // two workers, the loss notices of a's bids reach b; counted at once, a read its own bids as wins
    // and b the losses of bids it had not seen, until the syncs brought each the other's half (with
    // the two bidding different grid prices, each read its own as cheaper than it was: simulator,
    // late-bills, seed 3, 84.9 % of the oracle's surplus).
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    const alone = worker(new MemoryShadingRepository(), 'r');
    const at = (t: number): void => {
      for (const w of [a, b, alone]) w.clock.at = NOW + t;
    };
    const weight = (w: Worker): number => segments(w).get(KEY)?.weight ?? 0;
    // The exchange's loss notices come 0.2 s after the bid, and no win notice yet: its unanswered bids
    // are wins. Told by a loss elsewhere whose reason (1) is not about price: it teaches nothing else.
    for (const w of [a, b, alone]) {
      w.s.learn('loss', { ...noticed(w, 'pub-z'), ts: w.clock.at - 200 }, 1, null, SD, 1);
      w.s.tick();
    }
    await a.s.sync();
    await b.s.sync();
    await a.s.sync();
    for (const w of [a, b]) w.s.tick();
    // a bids 100 times; the loss notices of 60 of them reach b 0.2 s later (the worker alone gets both).
    at(1_000);
    const bids = Array.from({ length: 100 }, () => {
      const usd = price(a);
      assert.equal(price(alone), usd);
      return { ...noticed(a), price: usd };
    });
    at(1_200);
    for (const bid of bids.slice(0, 60)) {
      b.s.learn('loss', bid, bid.price, null, SD, 102);
      alone.s.learn('loss', bid, bid.price, null, SD, 102);
    }
    for (const w of [a, b, alone]) w.s.tick();
    // Alone: 60 losses and 40 bids unanswered (wins).
    assert.ok(Math.abs(weight(alone) - 100) < 1, `alone: ${weight(alone)}`);
    assert.ok(weight(a) < 0.01, `a does not read its 100 bids as wins before b's state is as recent: ${weight(a)}`);
    assert.ok(weight(b) < 0.01, `b does not read 60 losses of bids it has not seen: ${weight(b)}`);
    // a's sync reads b's state as b wrote it before the notices: a's bids still wait.
    at(2_000);
    await a.s.sync();
    a.s.tick();
    assert.ok(weight(a) < 0.01, `a, after reading b's earlier state: ${weight(a)}`);
    // b's sync reads a's bids: its answers count with them.
    at(3_000);
    await b.s.sync();
    b.s.tick();
    const reference = alone.s.cdfOf(KEY);
    assert.ok(Math.abs(weight(b) - 100) < 1, `b: ${weight(b)}`);
    assert.ok(maxDiff(b.s.cdfOf(KEY), reference) < 5e-3, `b estimates what one worker alone does: ${maxDiff(b.s.cdfOf(KEY), reference)}`);
    // a's next sync reads b's answers: a's bids count with them.
    at(4_000);
    await a.s.sync();
    a.s.tick();
    assert.ok(Math.abs(weight(a) - 100) < 1, `a: ${weight(a)}`);
    assert.ok(maxDiff(a.s.cdfOf(KEY), reference) < 5e-3, `a estimates what one worker alone does: ${maxDiff(a.s.cdfOf(KEY), reference)}`);
  });

  it('reads the format an older worker writes: one entry per count, any order, unknown arrays and bins skipped', async () => {
    const repo = new MemoryShadingRepository();
    const b = worker(repo, 'b');
    const old = 'h:old:1';
    repo.live.add(old);
    // 50 prices to win in the bin of 0.7, 50 answered bids at 1.5, then an array (9) and a bin (200) no version has.
    const buf = Buffer.alloc(24);
    const put = (o: number, array: number, bin: number, v: number): void => {
      buf[o] = array;
      buf[o + 1] = bin;
      buf.writeFloatLE(v, o + 2);
    };
    put(0, 2, binOf(0.7), 50);
    put(6, 1, binOf(1.5) - 1, 50);
    put(12, 9, 3, 1000);
    put(18, 2, 200, 1000);
    const text = `${NOW}:${buf.toString('base64')}`;
    await repo.publish(old, { [KEY]: text, 's|0': text, '*': text }, 60_000);
    await b.s.sync();
    // Made now, from what the sync read.
    const cdf = b.s.cdfOf(KEY);
    const seg = segments(b).get(KEY)!;
    assert.ok(Math.abs(seg.weight - 50) < 1e-9, `weight ${seg.weight}`);
    const k = binOf(0.7);
    assert.ok(cdf[k] - (k > 0 ? cdf[k - 1] : 0) > 0.5, 'the bin of 0.7 holds most of the estimate');
    assert.equal(cdf.length, GRID_SIZE);
  });

  it('a store that is away: the sync counts an error, and the next one after it is back shares', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    teach(a, 100);
    repo.outage.down = true;
    await a.s.sync();
    repo.outage.down = false;
    const isReady = repo.isReady.bind(repo);
    // Ready, but failing on the first call (a store that went away during the sync).
    repo.isReady = () => true;
    repo.outage.down = true;
    await a.s.sync();
    assert.equal(a.s.stats.syncErrors, 1);
    repo.isReady = isReady;
    repo.outage.down = false;
    await a.s.sync();
    price(b);
    await b.s.sync();
    b.s.tick();
    assert.ok(segments(b).get(KEY)!.weight > 50);
  });
});

describe('shading counts as shared text', () => {
  it('addCompact reads what toCompact writes, from an offset, scaled, and stops at a character that is not base64', () => {
    const c = new Counts();
    let x = 7;
    for (let i = 0; i < 300; i++) {
      x = (x * 48271) % 2147483647;
      const arrays = [c.bids, c.answered, c.exact, c.won, c.lost];
      const a = arrays[x % 5];
      a[x % a.length] += (x % 1000) / 7;
    }
    const text = `${NOW}:${c.toCompact()}`;
    const back = new Counts();
    back.addCompact(text, 0.5, text.indexOf(':') + 1);
    for (const name of ['bids', 'answered', 'exact', 'won', 'lost'] as const) {
      for (let i = 0; i < c[name].length; i++) assert.ok(Math.abs(back[name][i] - c[name][i] * 0.5) <= 1e-6 * c[name][i], `${name}[${i}]: ${back[name][i]} against ${c[name][i]}`);
    }
    // Through Buffer, as a worker of an older version decodes it: the same entries.
    const viaBuffer = Buffer.from(text.slice(text.indexOf(':') + 1), 'base64');
    assert.equal(viaBuffer.length % 6, 0);
    const cut = new Counts();
    cut.addCompact(`${text.slice(0, text.indexOf(':') + 1 + 16)}!${text.slice(text.indexOf(':') + 1 + 16)}`, 1, text.indexOf(':') + 1);
    const entries = (k: Counts): number => [k.bids, k.answered, k.exact, k.won, k.lost].reduce((n, a) => n + a.filter((v) => v > 0).length, 0);
    assert.equal(entries(cut), 2);
    assert.equal(entries(back), viaBuffer.length / 6);
  });
});

describe('a bid\'s win notice and its bill at different workers', () => {
  it('teach the win once: a bill from an exchange that sends win notices teaches nothing where its win notice did not arrive', () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'wa');
    const b = worker(repo, 'wb');
    const answered = (w: Worker): number => {
      const seg = segments(w).get(KEY) as unknown as { own: { answered: Float32Array } } | undefined;
      return seg === undefined ? 0 : seg.own.answered.reduce((x, y) => x + y, 0);
    };
    // Worker b has seen this exchange's win notices (a bid of its own won), so it knows the exchange sends them.
    b.s.learn('win', noticed(b), 1.5, 0.7, SD, null);
    // Bid x: its win notice reaches worker a, its bill worker b (an exchange calls whichever worker the balancer picks).
    const x = noticed(a);
    a.s.learn('win', x, 1.5, 0.7, SD, null);
    b.s.learn('bill', x, 1.5, 0.7, SD, null);
    assert.equal(answered(a), 1, 'worker a taught x once, from its win notice');
    assert.equal(answered(b), 1, 'worker b taught its own win only: the bill of x, whose win notice went to worker a, teaches nothing');
  });

  it('an exchange that bills without win notices still teaches from its bills', () => {
    const repo = new MemoryShadingRepository();
    const b = worker(repo, 'wb');
    b.s.learn('bill', noticed(b), 1.5, 0.7, SD, null);
    b.s.learn('bill', noticed(b), 1.5, 0.7, SD, null);
    const seg = segments(b).get(KEY) as unknown as { own: { answered: Float32Array } };
    assert.equal(seg.own.answered.reduce((x, y) => x + y, 0), 2);
  });
});

describe('shading memory per segment', () => {
  it('a segment\'s counts and estimate hold under 4 KB of typed arrays, under 9 KB with the other workers\' counts', async () => {
    const repo = new MemoryShadingRepository();
    const a = worker(repo, 'a');
    const b = worker(repo, 'b');
    const before = process.memoryUsage().arrayBuffers;
    for (let p = 0; p < 500; p++) teach(a, 2, `pub-${p}`);
    const own = (process.memoryUsage().arrayBuffers - before) / segments(a).size;
    await a.s.sync();
    await b.s.sync();
    const read = process.memoryUsage().arrayBuffers;
    for (const k of segments(a).keys()) b.s.cdfOf(k);
    // The second sync gives each segment its buffer for the next sync's sums.
    await b.s.sync();
    const shared = (process.memoryUsage().arrayBuffers - read) / segments(b).size;
    console.log(`typed arrays per segment: ${own.toFixed(0)} B with its own counts, ${shared.toFixed(0)} B with the others' too (${segments(b).size} segments)`);
    assert.ok(own < 4000, `${own} B`);
    assert.ok(shared < 9000, `${shared} B`);
  });
});
