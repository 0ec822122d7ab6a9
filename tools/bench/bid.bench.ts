/**
 * Micro-benchmark of the bid path in-process, excluding HTTP: body bytes → parse → auction →
 * markup → tracking payload → response JSON → the two log appends. Reports CPU µs per bid
 * (process.cpuUsage, so a busy neighbour inflates wall time but not this) per request kind, and
 * the cost of the pieces. Run: `npm run bench` (writes bench/RESULTS-bid.md with `--write`).
 */
import { execSync } from 'node:child_process';
import { createHash, createHmac, createSecretKey, hash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as v8 from 'node:v8';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { AppModule } from '../../src/app.module';
import { BiddingService } from '../../src/bidding/bidding.service';
import { trackingUrls } from '../../src/bidding/markup';
import { nativeAdm, nativeAdmLiteral } from '../../src/bidding/response-json';
import { MType, NativeAssetKind, type NativeImp } from '../../src/openrtb/types';
import type { Match, NativeFill } from '../../src/targeting/types';
import { loadConfig } from '../../src/config/config';
import { LogService } from '../../src/log/log.service';
import { NativeRequestCache, parseBidRequest } from '../../src/openrtb/parse';
import { Hmac } from '../../src/crypto/hmac';
import { PrivacyPolicy } from '../../src/privacy/policy';
import { readPrivacySignals } from '../../src/privacy/signals';
import { OUR_VENDOR, tcString } from '../../test/privacy/consent-strings';
import { PacingGate } from '../../src/delivery/pacing.gate';
import { SpendService } from '../../src/delivery/spend.service';
import { PayloadCodec } from '../../src/tracking/payload';
import { ShadingService } from '../../src/delivery/shading.service';
import { CampaignStore } from '../../src/targeting/campaign-store';
import { CurrencyService } from '../../src/currency/currency.service';


const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const redisLib = require(path.join(ROOT, 'scripts', 'lib', 'redis.js')) as {
  startRedis(o: object): Promise<{ url: string; stop(): Promise<void> }>;
};

const nativeRequest = JSON.stringify({
  ver: '1.2',
  assets: [
    { id: 1, required: 1, title: { len: 90 } },
    { id: 2, required: 1, img: { type: 3, wmin: 300, hmin: 150 } },
    { id: 3, required: 0, data: { type: 1, len: 40 } },
  ],
  eventtrackers: [{ event: 1, methods: [1] }],
});

const site = { id: 's1', domain: 'news.example', page: 'https://news.example/a/1', publisher: { id: 'p1', name: 'News Example' } };
const device = { ua: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)', ip: '203.0.113.7', devicetype: 4, os: 'iOS', geo: { country: 'USA' } };

const KINDS: Record<string, object> = {
  native: { id: 'n', cur: ['USD'], imp: [{ id: '1', bidfloor: 0.2, native: { ver: '1.2', request: nativeRequest } }], site, device, user: { id: 'u1' }, bcat: ['IAB25', 'IAB26'], badv: ['blocked.example'] },
  banner: { id: 'b', cur: ['USD'], imp: [{ id: '1', bidfloor: 0.2, banner: { format: [{ w: 300, h: 250 }, { w: 320, h: 50 }] } }], site, device, user: { id: 'u1' }, bcat: ['IAB25'] },
  // The banner request in a first-price auction: the bid is shaded (ShadingService).
  'banner, first price': { id: 'f', at: 1, cur: ['USD'], imp: [{ id: '1', bidfloor: 0.2, banner: { format: [{ w: 300, h: 250 }, { w: 320, h: 50 }] } }], site, device, user: { id: 'u1' }, bcat: ['IAB25'] },
  video: { id: 'v', imp: [{ id: '1', bidfloor: 0.5, video: { mimes: ['video/mp4'], minduration: 5, maxduration: 30, protocols: [2, 3, 5, 6], w: 640, h: 360 } }], site, device },
  'nobid (floor)': { id: 'x', imp: [{ id: '1', bidfloor: 500, banner: { w: 300, h: 250 } }], site, device },
};

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

function measure(fn: (i: number) => void, iterations: number): number {
  for (let i = 0; i < Math.min(5000, iterations); i++) fn(i); // warm-up (JIT)
  const c0 = cpuMicros();
  for (let i = 0; i < iterations; i++) fn(i);
  return (cpuMicros() - c0) / iterations;
}

/**
 * JS heap bytes allocated per call of `fn` over `iterations` calls: the heap's growth plus what
 * every GC in between freed (v8.GCProfiler's before/after heap statistics). Off-heap memory (the
 * log's Buffers) is not in it.
 */
function heapBytesPer(fn: (i: number) => void, iterations: number): number {
  for (let i = 0; i < Math.min(5000, iterations); i++) fn(i);
  const profiler = new v8.GCProfiler();
  profiler.start();
  const start = v8.getHeapStatistics().used_heap_size;
  for (let i = 0; i < iterations; i++) fn(i);
  const end = v8.getHeapStatistics().used_heap_size;
  const gcs = profiler.stop()?.statistics ?? [];
  let freed = 0;
  for (const g of gcs) freed += g.beforeGC.heapStatistics.usedHeapSize - g.afterGC.heapStatistics.usedHeapSize;
  return (end - start + freed) / iterations;
}

async function main(): Promise<void> {
  const write = process.argv.includes('--write');
  const iterations = Number(process.env.BENCH_ITERATIONS ?? 50_000);
  const redis = await redisLib.startRedis({});
  const spill = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-spill-'));
  // A measured loop never yields, so the log cannot compress while it runs: a whole row's records
  // (~200 MB for 55 000 native bids) wait in memory, under a bound raised so that none is dropped.
  const config = loadConfig({ REDIS_URL: redis.url, LOG_SPILL_DIR: spill, LOG_FLUSH_INTERVAL_MS: '1000', LOG_MAX_MEMORY_BYTES: String(2 * 1024 ** 3) });
  const app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { logger: ['error', 'warn'] });
  const bidding = app.get(BiddingService);
  const log = app.get(LogService);
  // Between measured loops: the log's compression and Redis writes (thread pool and event loop)
  // finish outside them, so every row appends its records to an empty queue and pays no one else's.
  const settle = async (): Promise<void> => {
    const until = Date.now() + 60_000;
    while (log.stats().memoryBytes > 0) {
      if (Date.now() > until) throw new Error('the bid log did not drain within 60 s');
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  const rows: Array<[string, number, string]> = [];
  for (const [name, req] of Object.entries(KINDS)) {
    const body = Buffer.from(JSON.stringify(req));
    const base = req as { id: string };
    let status = 0;
    const user = (req as { user?: { id: string } }).user;
    const us = measure((i) => {
      // A unique id per request, as in real traffic (the log holds one record pair per id), and a
      // user id that changes from one request to the next (it is hashed for the user key and the log).
      let text = body.toString().replace(`"id":"${base.id}"`, `"id":"${base.id}-${i}"`);
      if (user !== undefined) text = text.replace(`"user":{"id":"${user.id}"`, `"user":{"id":"${user.id}-${i & 1023}"`);
      const b = Buffer.from(text);
      status = bidding.bid(b, performance.now()).status;
      // Its records to the crash journal, as the HTTP server does before the answer leaves: one write
      // per request here, the costliest case (a busy worker writes once for all the requests of a turn).
      log.journal.commit();
    }, iterations);
    rows.push([name, us, `status ${status}, ${body.length} B request`]);
    await settle();
  }
  // Issue 6's budget lease and frequency-cap gate: the sample requests (test/fixtures/samples) with
  // the gate on and off, interleaved in short runs so that JIT and GC drift hit both alike.
  const samplesDir = path.join(ROOT, 'test', 'fixtures', 'samples');
  const mix: Buffer[] = [];
  for (const d of fs.readdirSync(samplesDir)) {
    const dir = path.join(samplesDir, d);
    if (!fs.statSync(dir).isDirectory()) continue;
    for (const f of fs.readdirSync(dir)) {
      const j = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')) as { mockBidRequest?: { imp?: unknown }; imp?: unknown };
      const r = j.mockBidRequest ?? j;
      if (Array.isArray(r.imp)) for (let u = 0; u < 40; u++) mix.push(Buffer.from(JSON.stringify({ ...r, id: `mix-${mix.length}`, user: { id: `user-${u}` } })));
    }
  }
  const gate = app.get(PacingGate);
  const spend = app.get(SpendService);
  const realCheck = gate.check.bind(gate);
  const realCommit = spend.commit.bind(spend);
  let on = 0;
  let off = 0;
  const chunk = 2000;
  const rounds = Math.max(20, Math.round((2 * iterations) / chunk));
  const runMix = (): number =>
    measure((i) => {
      bidding.bid(mix[i % mix.length], performance.now());
      log.journal.commit();
    }, chunk);
  for (let k = 0; k < rounds; k++) {
    for (const mode of k % 2 === 0 ? ['on', 'off'] : ['off', 'on']) {
      if (mode === 'on') {
        gate.check = realCheck;
        spend.commit = realCommit;
        on += runMix();
      } else {
        gate.check = () => null;
        spend.commit = () => undefined;
        off += runMix();
      }
      await settle();
    }
  }
  gate.check = realCheck;
  spend.commit = realCommit;
  // Memory per bid: JS heap bytes allocated per request of the sample mix (GC work follows it).
  const heapRounds = 6;
  let heap = 0;
  for (let k = 0; k < heapRounds; k++) {
    heap += heapBytesPer((i) => {
      bidding.bid(mix[i % mix.length], performance.now());
      log.journal.commit();
    }, chunk);
    await settle();
  }
  const heapRow: [string, number, string] = ['sample mix: JS heap bytes allocated per request (÷1000: kB)', heap / heapRounds / 1000, `v8.GCProfiler before/after heap statistics, ${heapRounds} × ${chunk} requests; the log's Buffers are off-heap`];
  rows.push([`sample mix (${mix.length / 40} real requests), budget + cap gate on`, on / rounds, `interleaved ${rounds} × ${chunk} with the next row`]);
  rows.push(['sample mix, gate off', off / rounds, `the gate's cost: ${((on / off - 1) * 100).toFixed(1)} % (run-to-run noise is several %)`]);
  // Cold caches. Under HTTP a worker does not have its core's caches to itself between two requests:
  // the load generator, the kernel's network path and the other worker run there too, and the bid
  // path costs several times what it costs in the loops above (bench/README.md, the profile). Here
  // each request is timed alone (wall clock: one thread with nothing else to run) after
  // BENCH_EVICT_MB of memory was written, twice this machine's last-level cache by default, in rounds
  // that alternate with the same requests timed without it. The load test's own requests
  // (k6/lib/generator.js's pool) are larger than the samples and cost more either way.
  {
    const evictMb = Number(process.env.BENCH_EVICT_MB ?? 64);
    if (!Number.isInteger(evictMb) || evictMb < 1 || evictMb > 4096) throw new Error(`BENCH_EVICT_MB ${process.env.BENCH_EVICT_MB}: expected a whole number of MiB from 1 to 4096`);
    const evict = new Int32Array((evictMb * 2 ** 20) / 4);
    const gen = (await import(path.join(ROOT, 'k6', 'lib', 'generator.js'))) as {
      buildPool(size: number, seed: number): unknown[];
      bodyFor(entry: unknown, id: string): string;
    };
    // As k6/bid.js builds it (POOL_SIZE 2048, SEED 20240501).
    const pool = gen.buildPool(2048, 20240501);
    let n = 0;
    const mixes: Array<[string, () => Buffer]> = [
      ['sample mix', () => mix[n++ % mix.length]],
      ["load test's requests", () => Buffer.from(gen.bodyFor(pool[n % pool.length], `lt-${n++}`))],
    ];
    for (const [name, next] of mixes) {
      // Warm-up: the JIT and the inline caches meet these requests' shapes before anything is timed.
      for (let i = 0; i < 5000; i++) {
        bidding.bid(next(), performance.now());
        log.journal.commit();
      }
      await settle();
      const ns = { warm: 0, cold: 0 };
      const per = 500;
      const coldRounds = Math.max(4, Math.round(iterations / 5000));
      for (let k = 0; k < coldRounds * 2; k++) {
        const cold = k % 2 === 1;
        for (let i = 0; i < per; i++) {
          const body = next();
          if (cold) for (let j = 0; j < evict.length; j += 16) evict[j]++;
          const t0 = process.hrtime.bigint();
          bidding.bid(body, performance.now());
          log.journal.commit();
          ns[cold ? 'cold' : 'warm'] += Number(process.hrtime.bigint() - t0);
        }
        await settle();
      }
      const count = coldRounds * per;
      rows.push([`${name}, caches warm (each request timed alone)`, ns.warm / count / 1000, `wall clock, not CPU time; alternating with the next row, ${coldRounds} × ${per} each`]);
      rows.push([`${name}, caches cold (${evictMb} MiB written before each request)`, ns.cold / count / 1000, `wall clock; ${(ns.cold / ns.warm).toFixed(1)}× warm`]);
    }
  }
  rows.push(heapRow);
  // The pieces, for scale.
  const nativeText = JSON.stringify(KINDS.native);
  rows.push(['  JSON.parse of the native request', measure(() => JSON.parse(nativeText), iterations), '']);
  const parsed = JSON.parse(nativeText) as unknown;
  const natives = new NativeRequestCache();
  rows.push(['  parseBidRequest (lenient reader; the native request read once)', measure(() => parseBidRequest(parsed, natives), iterations), '']);
  // The privacy decision (src/privacy; tools/bench/privacy.bench.ts has its detail): no consent string, and a cached TC string.
  const policy = new PrivacyPolicy(OUR_VENDOR);
  rows.push(['  privacy: read signals + decide, no consent string', measure(() => policy.decide(readPrivacySignals(parsed)), iterations), 'aim < 2 µs']);
  const withTc = JSON.parse(JSON.stringify({ ...KINDS.native, regs: { gdpr: 1 }, user: { id: 'u1', consent: tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4] }) } })) as unknown;
  rows.push(['  privacy: read signals + decide, TC string (cached)', measure(() => policy.decide(readPrivacySignals(withTc)), iterations), 'aim < 10 µs; a first sight of a string decodes it (10-25 µs)']);
  const codec = app.get(PayloadCodec);
  const payload = { requestId: '80ce30c53c16e6ede735f123ef6e32361bfc7b22', bidId: 'b6a1c0a4-9d0b-4e43-8f4b-2f0c5b1f7a11', impId: '1', crid: 'cr-native-0042', cid: 'cmp-017', price: 1.37, cur: 'USD', ts: Date.now(), dealId: '', publisher: 'News Example', userKey: 'u1' };
  rows.push(['  tracking payload (packed + one HMAC, both signatures), once per bid', measure(() => codec.encode(payload), iterations), '']);
  // Pacing and shading on the bid path (docs/bidding.md): a first-price banner's shaded price (segment
  // key, map lookup, best price over the grid between floor and value), the pressure read, and the lease commit.
  {
    const shading = app.get(ShadingService);
    const spendService = app.get(SpendService);
    const firstPrice = parseBidRequest(JSON.parse(JSON.stringify(KINDS['banner, first price'])), natives);
    const imp = firstPrice.imps[0];
    const candidate = app.get(CampaignStore).current().candidates.find((c) => c.banner !== null && c.banner.w === 300 && c.banner.h === 250)!;
    const match = { candidate, mtype: MType.Banner, price: candidate.price, dealId: null, size: { w: 300, h: 250 }, native: null, json: { fields: '', bannerSafe: true, vastSafe: true, dsaHead: '' } } as unknown as Match;
    const rates = app.get(CurrencyService).current();
    rows.push([
      '  pacing + shading: shaded price, pressure, lease commit (a first-price banner)',
      measure(() => {
        const now = Date.now();
        shading.price(firstPrice, imp, match, 'USD', rates, now, spendService.pressure(candidate));
        spendService.commit(candidate);
        shading.noticeParam(firstPrice, match);
      }, iterations),
      `value ${candidate.price}, floor ${imp.bidfloor}: no notices yet, so the pooled prior`,
    ]);
  }
  // The MAC itself: src/crypto/hmac.ts against node:crypto three ways: createHmac with a KeyObject
  // made once, Hash.copy() of the two pad states hashed once, two one-shot crypto.hash calls.
  const packedText = codec.encode(payload).s2s.slice(2, -25);
  const key = Buffer.from('bench-tracking-secret-0123456789abcdef');
  const ours = new Hmac(key);
  const keyObject = createSecretKey(key);
  const innerPad = Buffer.alloc(64);
  const outerPad = Buffer.alloc(64);
  for (let i = 0; i < 64; i++) {
    innerPad[i] = (i < key.length ? key[i] : 0) ^ 0x36;
    outerPad[i] = (i < key.length ? key[i] : 0) ^ 0x5c;
  }
  const innerState = createHash('sha256').update(innerPad);
  const outerState = createHash('sha256').update(outerPad);
  const copied = (t: string): Buffer => outerState.copy().update(innerState.copy().update(t, 'utf8').digest()).digest();
  // K ^ ipad and K ^ opad written once into reused buffers, the message and the inner digest after them.
  const inner = Buffer.alloc(64 + 512);
  const outer = Buffer.alloc(64 + 32);
  innerPad.copy(inner);
  outerPad.copy(outer);
  const oneShot = (t: string): Buffer => {
    const n = inner.write(t, 64, 'utf8');
    hash('sha256', inner.subarray(0, 64 + n), 'buffer').copy(outer, 64);
    return hash('sha256', outer, 'buffer');
  };
  const withKeyObject = (t: string): Buffer => createHmac('sha256', keyObject).update(t, 'utf8').digest();
  for (const other of [withKeyObject, copied, oneShot]) if (!other(packedText).equals(ours.mac(packedText))) throw new Error('the HMACs differ');
  rows.push([`  HMAC-SHA256 of the payload (${packedText.length} chars), src/crypto/hmac.ts`, measure(() => ours.mac(packedText), iterations), '']);
  rows.push(['  the same, node:crypto createHmac with a KeyObject made once', measure(() => withKeyObject(packedText), iterations), '']);
  rows.push(['  the same, Hash.copy() of the pad states hashed once', measure(() => copied(packedText), iterations), '']);
  rows.push(['  the same, two one-shot crypto.hash calls', measure(() => oneShot(packedText), iterations), '']);
  // A native bid's markup as the JSON string of bid.adm: title, image and two data assets, img eventtracker.
  const q = codec.encode(payload).browser;
  const urls = trackingUrls(`https://track.example.com/t/click?${q}`, `https://track.example.com/t/imp?${q}`);
  const nativeImp: NativeImp = { ver: '1.2', assets: [], eventtrackers: [{ event: 1, methods: [1, 2] }], battr: [] };
  const fills: NativeFill[] = [
    { assetId: 1, kind: NativeAssetKind.Title, text: 'Summer sale: everything must go, up to 70 % off', img: null },
    { assetId: 2, kind: NativeAssetKind.Img, text: '', img: { url: 'https://cdn.example.com/creatives/summer-1200x627.jpg', w: 1200, h: 627 } },
    { assetId: 3, kind: NativeAssetKind.Data, text: 'Brand Example', img: null },
    { assetId: 4, kind: NativeAssetKind.Data, text: 'The best summer deals of the year, in every store and online.', img: null },
  ];
  rows.push(['  native markup, as the JSON string of bid.adm', measure(() => nativeAdmLiteral(nativeImp, fills, urls, true), iterations), 'written in its escaped form']);
  rows.push(['  the same by JSON.stringify of an object, then of the string', measure(() => JSON.stringify(nativeAdm(nativeImp, fills, urls)), iterations), 'before']);
  // Every bid's two records were appended (none dropped), or the figures would leave part of the log out.
  const dropped = log.stats().recordsDropped;
  if (dropped > 0) throw new Error(`the bid log dropped ${dropped} records: the figures would not include their cost`);
  const logged = log.stats().recordsLogged;
  await app.close();
  await redis.stop();
  fs.rmSync(spill, { recursive: true, force: true });

  let commit = 'unknown';
  try {
    commit = execSync('git rev-parse --short HEAD', { cwd: ROOT }).toString().trim();
  } catch {
    /* not a checkout */
  }
  const lines = [
    `Machine: ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB; Node ${process.version}; commit ${commit}; ${new Date().toISOString()}`,
    `Iterations: ${iterations} per row (after a warm-up), CPU time from process.cpuUsage(). Bid log on: ${logged} records appended, none dropped; compressed and sent between the measured loops.`,
    '',
    '| bid path, in-process, no HTTP | CPU µs per request | note |',
    '|---|---:|---|',
    ...rows.map(([n, us, note]) => `| ${n} | ${us.toFixed(1)} | ${note} |`),
  ];
  const text = lines.join('\n');
  process.stdout.write(`${text}\n`);
  if (write) {
    const file = path.join(ROOT, 'bench', 'RESULTS-bid.md');
    const head = '# Bid path micro-benchmark\n\nProduced by `npm run bench -- --write` (tools/bench/bid.bench.ts). Aim: under 50 µs per native bid, excluding HTTP.\n\n';
    fs.writeFileSync(file, `${head}${text}\n`);
    process.stdout.write(`written to ${file}\n`);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
