import { isUtf8 } from 'node:buffer';
// Helpers for the bid log tests: bid requests with unique ids, a keep-alive HTTP client, reading
// the log back from Redis with plain zlib, and counting records per id.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import Redis from 'ioredis';

export const ROOT = path.resolve(__dirname, '..', '..', '..');
export const NODE = process.execPath;

/** A valid OpenRTB 2.6 banner request (the shape of IAB's simple-banner example), with `id`. */
export function bidRequest(id: string): string {
  return JSON.stringify({
    id,
    at: 1,
    tmax: 120,
    cur: ['USD'],
    imp: [{ id: '1', bidfloor: 0.03, banner: { w: 300, h: 250, pos: 0 } }],
    site: {
      id: '102855',
      cat: ['IAB3-1'],
      domain: 'www.foobar.com',
      page: 'http://www.foobar.com/1234.html',
      publisher: { id: '8953', name: 'foobar.com', cat: ['IAB3-1'], domain: 'foobar.com' },
    },
    device: {
      ua: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36',
      ip: `203.0.113.${id.length % 250}`,
      language: 'en',
    },
    user: { id: `u-${id}` },
  });
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

export interface Answer {
  status: number;
  ms: number;
}

/** POSTs one bid request; resolves with the status and the latency. */
export function postBid(baseUrl: string, id: string): Promise<Answer> {
  const body = bidRequest(id);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const r = http.request(
      `${baseUrl}/openrtb2/bid`,
      { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
        res.on('error', reject);
      },
    );
    r.setTimeout(10_000, () => r.destroy(new Error(`bid request ${id} got no answer in 10 s`)));
    r.on('error', reject);
    r.end(body);
  });
}

/** Rejects when `p` takes longer than `ms` (a hung stop fails the test instead of stalling the run). */
export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`${what} took more than ${ms} ms`)), ms);
    p.then(
      (v) => {
        clearTimeout(t);
        resolve(v);
      },
      (e: unknown) => {
        clearTimeout(t);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

let counter = 0;
/** Sends `n` bid requests with fresh unique ids, `concurrency` at a time; returns the ids and answers. */
export async function sendBids(baseUrl: string, n: number, concurrency = 8, prefix = 't'): Promise<{ ids: string[]; answers: Answer[] }> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(`${prefix}-${process.pid}-${counter++}-${Math.random().toString(36).slice(2, 8)}`);
  const answers: Answer[] = new Array<Answer>(n);
  let next = 0;
  async function worker(): Promise<void> {
    while (next < n) {
      const i = next++;
      answers[i] = await postBid(baseUrl, ids[i]);
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, n) }, worker));
  for (const a of answers) assert.ok(a.status === 200 || a.status === 204, `bid answered ${a.status}`);
  return { ids, answers };
}

export interface LogLine {
  ts: number;
  type: string;
  id: string;
  worker: string;
  [k: string]: unknown;
}

/** Every record in the Redis list (and its line as written), each element decompressed with plain zlib.zstdDecompressSync. */
export async function readRedisLog(url: string, key: string): Promise<{ frames: number; records: LogLine[]; lines: string[] }> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await c.connect();
  try {
    const frames = await c.lrangeBuffer(key, 0, -1);
    const records: LogLine[] = [];
    const lines: string[] = [];
    for (const f of frames) {
      const bytes = zlib.zstdDecompressSync(f);
      assert.ok(isUtf8(bytes), 'a batch is valid UTF-8');
      const text = bytes.toString('utf8');
      assert.ok(text.endsWith('\n'), 'a batch is whole NDJSON lines');
      for (const line of text.split('\n')) {
        if (line === '') continue;
        records.push(JSON.parse(line) as LogLine);
        lines.push(line);
      }
    }
    return { frames: frames.length, records, lines };
  } finally {
    c.disconnect();
  }
}

/** Asserts exactly one request and one response record per id, and no other request/response record. */
export function assertExactlyOnce(records: LogLine[], ids: string[]): void {
  const want = new Set(ids);
  assert.equal(want.size, ids.length, 'ids are unique');
  const req = new Map<string, number>();
  const res = new Map<string, number>();
  for (const r of records) {
    assert.equal(typeof r.ts, 'number');
    if (r.type === 'request') req.set(r.id, (req.get(r.id) ?? 0) + 1);
    else if (r.type === 'response') res.set(r.id, (res.get(r.id) ?? 0) + 1);
  }
  const problems: string[] = [];
  for (const id of ids) {
    if (req.get(id) !== 1) problems.push(`${id}: ${req.get(id) ?? 0} request records`);
    if (res.get(id) !== 1) problems.push(`${id}: ${res.get(id) ?? 0} response records`);
  }
  for (const id of req.keys()) if (!want.has(id)) problems.push(`unexpected request record ${id}`);
  for (const id of res.keys()) if (!want.has(id)) problems.push(`unexpected response record ${id}`);
  assert.deepEqual(problems.slice(0, 10), [], `${problems.length} problems`);
  assert.equal(req.size, ids.length);
  assert.equal(res.size, ids.length);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `cond` every 20 ms until it holds; fails after `ms`. */
export async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops a test Redis with SHUTDOWN SAVE (it writes its data to its directory first, so a restart
 * on the same port and directory has it back) and waits for its process to end.
 */
export async function shutdownSave(url: string, pid: number): Promise<void> {
  const c = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  c.on('error', () => undefined);
  await c.connect();
  await c.call('SHUTDOWN', 'SAVE').catch(() => undefined);
  c.disconnect();
  await until('redis-server to exit', () => !pidAlive(pid), 10_000);
}

/** Runs the reader CLI (dist/log/cli.js) and returns its stdout and exit code. */
export function runCli(args: string[], env: Record<string, string>): Promise<RunResult> {
  return runNode(path.join(ROOT, 'dist', 'log', 'cli.js'), args, env);
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `node <file> ...args` from the project root with `env` added, and resolves with its exit code
 * and all it wrote: on 'close', after both pipes have ended ('exit' can come first, with output
 * still unread).
 */
export function runNode(file: string, args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(NODE, [file, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A bidder process (`node dist/main.js`) on its own port. */
export interface Bidder {
  proc: ChildProcess;
  url: string;
  output(): string;
  /** Resolves with the exit code once the process has exited. */
  exited: Promise<number | null>;
  /** Sends `signal` and waits for the exit; resolves with the exit code. */
  stop(signal: NodeJS.Signals): Promise<number | null>;
}

/** Starts `node dist/main.js`; `preload`: a test-only script run first (`node -r`), e.g. a fault on a signal. */
export async function spawnBidder(env: Record<string, string>, port: number, preload?: string): Promise<Bidder> {
  const args = preload === undefined ? [] : ['-r', preload];
  const proc = spawn(NODE, [...args, path.join(ROOT, 'dist', 'main.js')], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', HOST: '127.0.0.1', PORT: String(port), ADMIN_PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  try {
    await until(
      'the bidder to listen',
      () => {
        if (proc.exitCode !== null) throw new Error(`bidder exited: ${out}`);
        return out.includes('listening');
      },
      20_000,
    );
  } catch (e) {
    proc.kill('SIGKILL');
    throw e;
  }
  return {
    proc,
    url,
    output: () => out,
    exited,
    async stop(signal) {
      if (proc.exitCode === null) proc.kill(signal);
      const t = setTimeout(() => proc.kill('SIGKILL'), 30_000);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}
