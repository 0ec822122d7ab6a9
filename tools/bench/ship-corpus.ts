/**
 * The bid log corpus of the shipper benchmarks (tools/bench/ship.bench.ts, tools/bench/shipper-cpu.bench.ts):
 * records the bidder really writes (it is booted in-process and sent perturbed copies of the
 * OpenRTB samples), then lines made from them with fresh ids and times, in zstd frames as the
 * bidder's flusher writes them.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import 'reflect-metadata';
import Redis from 'ioredis';
import { createApp, listen } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { sampleRequests as loadSamples } from '../../test/support/samples';

const MiB = 1024 * 1024;
/** NDJSON bytes of one frame at most (the flusher's bound). */
export const FRAME_RAW = 4 * MiB;

type Json = Record<string, unknown>;

/** The OpenRTB sample requests of the test fixtures (test/support/samples.ts). */
function samples(): Json[] {
  return loadSamples().map((x) => x.request as Json);
}

/** A sample with what differs between real requests made fresh: ids, user, device, page. */
function vary(sample: Json): string {
  const r = structuredClone(sample) as Json & { device?: Json; user?: Json; site?: Json };
  r.id = randomUUID();
  if (r.device) r.device.ip = `${10 + (randomBytes(1)[0] % 200)}.${randomBytes(1)[0]}.${randomBytes(1)[0]}.${randomBytes(1)[0]}`;
  if (r.user) r.user.id = randomBytes(16).toString('hex');
  if (r.site) r.site.page = `https://${typeof r.site.domain === 'string' ? r.site.domain : 'example.com'}/a/${randomBytes(5).toString('hex')}.html`;
  return JSON.stringify(r);
}

function post(agent: http.Agent, url: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const q = http.request(`${url}/openrtb2/bid`, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    q.on('error', reject);
    q.end(body);
  });
}

/**
 * Boots the bidder in-process on `redisUrl` (its log under the key `bench:corpus`, deleted after),
 * sends it `n` bid requests over HTTP, 8 at a time, the i-th body from `body(i)`, and returns the
 * NDJSON lines it logged and the answers' statuses. `env` adds to or overrides the bidder's settings.
 */
export async function loggedLines(
  redisUrl: string,
  n: number,
  body: (i: number) => string,
  env: Record<string, string> = {},
): Promise<{ lines: string[]; statuses: Record<number, number> }> {
  const spill = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-corpus-'));
  const config = loadConfig({ LOG_LEVEL: 'error', PORT: '0', HOST: '127.0.0.1', REDIS_URL: redisUrl, LOG_REDIS_KEY: 'bench:corpus', LOG_SPILL_DIR: spill, WORKER_ID: '0', ADMIN_PORT: '0', ...env });
  const app = await createApp(config);
  const url = (await listen(app, config)).replace('[::1]', '127.0.0.1');
  const statuses: Record<number, number> = {};
  const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  let next = 0;
  try {
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        while (next < n) {
          const s = await post(agent, url, body(next++));
          statuses[s] = (statuses[s] ?? 0) + 1;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
  await app.close();
  fs.rmSync(spill, { recursive: true, force: true });
  const c = new Redis(redisUrl);
  const frames = await c.lrangeBuffer('bench:corpus', 0, -1);
  await c.del('bench:corpus');
  c.disconnect();
  return { lines: frames.flatMap((f) => zlib.zstdDecompressSync(f).toString('utf8').split('\n').filter(Boolean)), statuses };
}

/** The records the bidder logs for `n` varied copies of the OpenRTB samples. */
export function corpus(redisUrl: string, n: number): Promise<{ lines: string[]; statuses: Record<number, number> }> {
  const all = samples();
  return loggedLines(redisUrl, n, (i) => vary(all[i % all.length]));
}

/** `n` lines cycling through the corpus, ids replaced by fresh ones (everywhere in the line), ts from `t0` at `perSecond`. */
export function freshLines(base: string[], n: number, t0: number, perSecond: number): string[] {
  const out: string[] = new Array<string>(n);
  const ids = new Map<string, string>();
  for (let i = 0; i < n; i++) {
    const line = base[i % base.length];
    const old = /"id":"([^"]+)"/.exec(line)?.[1] ?? '';
    // Each pass over the corpus gets new ids (a request and its response keep sharing theirs).
    if (i % base.length === 0) ids.clear();
    let id = ids.get(old);
    if (id === undefined) {
      id = randomUUID();
      ids.set(old, id);
    }
    const ts = Math.floor(t0 + (i * 1000) / perSecond);
    out[i] = line.split(old).join(id).replace(/^\{"ts":\d+/, `{"ts":${ts}`);
  }
  return out;
}

/** Frames of at most FRAME_RAW bytes of NDJSON (or `perFrame` lines), zstd level 2 with a checksum. */
export function frames(lines: string[], perFrame = Infinity): Buffer[] {
  const out: Buffer[] = [];
  let cur: string[] = [];
  let bytes = 0;
  const flush = (): void => {
    if (cur.length === 0) return;
    const raw = Buffer.from(`${cur.join('\n')}\n`);
    out.push(zlib.zstdCompressSync(raw, { pledgedSrcSize: raw.length, params: { [zlib.constants.ZSTD_c_compressionLevel]: 2, [zlib.constants.ZSTD_c_checksumFlag]: 1 } }));
    cur = [];
    bytes = 0;
  };
  for (const l of lines) {
    const b = Buffer.byteLength(l) + 1;
    if (cur.length > 0 && (bytes + b > FRAME_RAW || cur.length >= perFrame)) flush();
    cur.push(l);
    bytes += b;
  }
  flush();
  return out;
}
