'use strict';
// `npm run profile`: where a request's CPU goes, bidder beside the bare-Fastify baseline
// (bench/README.md, "npm run profile"). Each target runs as one process on
// 127.0.0.1 under the same fixed-rate keep-alive load (the sample requests of tools/bench/ab-http.js, or
// the load test's generated requests; win notices and impression trackers for a share of them, as
// k6/bid.js sends them), in turn; `perf record -e cpu-clock -g -p <pid>` samples it for --seconds
// after a warm-up, and the samples are put into buckets by their stacks (the rule is below).
// The µs per bid request come from /proc/<pid>/stat over the same window (all threads), split by
// each bucket's share of the samples.
//
// Node runs with --perf-basic-prof (V8 writes /tmp/perf-<pid>.map, which `perf script` reads to
// name JIT frames; --perf-prof would write a jitdump that needs `perf inject` first) and
// --interpreted-frames-native-stack (interpreted functions get their own frames).
//
// The bucket rule, per sample:
//   1. a GC frame anywhere in the stack (the collectors, sweeper, concurrent marking, cppgc): V8 GC;
//      else a compiler frame anywhere (TurboFan, Maglev, Sparkplug, the parser, deopt): V8 compiler;
//   2. on a thread other than the main one: zstd when a ZSTD_ frame is in the stack, else other;
//   3. a kernel leaf: kernel network when any kernel frame is in the TCP/socket/IP/loopback code,
//      else kernel syscalls and other;
//   4. else the first frame from the leaf up that has a category: JSON.parse (V8's JsonParser),
//      zstd, Node's HTTP/net/stream JS and llhttp / stream native code, Fastify and Nest, ioredis,
//      the project's own code by its src/ folder. Frames without one (V8 builtins and runtime,
//      libc, uuid, Buffer, events, JSON.stringify) pass to their caller, so that JSON.stringify in
//      the log record counts as the log record, uuid in the bid path as src/bidding;
//   5. nothing matched: other (Node's event loop and timers, the microtask queue's own frames).
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { sampleBodies } = require('./lib/sample-bodies');
const { parseArgs } = require('node:util');
const { startRedis, freePort, waitFor } = require('../scripts/lib/redis');

const ROOT = path.resolve(__dirname, '..');
const README = path.join(ROOT, 'bench', 'README.md');
/** The block of bench/README.md that `--write` rewrites (the markers stay). */
const MARKERS = ['<!-- profile:begin -->', '<!-- profile:end -->'];
const USAGE = `usage: npm run profile -- [--seconds 30] [--warmup 25] [--rate 650] [--targets bidder,baseline]
       [--mix samples|loadtest] [--notices 0.1] [--freq 999] [--node-args="<flags>"] [--out <dir>]
       [--json <file>] [--top 0] [--no-pin] [--write | --write-file <file>]
  --write              also write the table into bench/README.md, between its profile markers, with the
                       commit, the machine and its load in the block's header
  --write-file <file>  the same into another Markdown file that has the markers`;


/** The buckets, in the table's order. */
const BUCKETS = [
  ['http', 'HTTP layers: Node http/net/stream, llhttp, Fastify, Nest'],
  ['json', 'JSON.parse'],
  ['srchttp', 'src/http (body reader, answer, turn clock)'],
  ['bidding', 'bid path: src/bidding (baseline: its handler)'],
  ['openrtb', 'bid path: src/openrtb'],
  ['targeting', 'bid path: src/targeting'],
  ['privacy', 'bid path: src/privacy'],
  ['tracking', 'bid path: src/tracking + src/crypto'],
  ['delivery', 'bid path: src/delivery'],
  ['srcother', 'src: other (metrics, currency, exchanges, health, redis, ...)'],
  ['log', 'log record: src/log'],
  ['zstd', 'zstd (thread pool and main thread)'],
  ['redis', 'Redis client (ioredis)'],
  ['gc', 'V8 GC (all threads)'],
  ['compiler', 'V8 compiler, parser, deopt (all threads)'],
  ['knet', 'kernel: network (tcp, sock, ip, loopback)'],
  ['ksys', 'kernel: syscalls and other'],
  ['other', 'other (event loop, timers, microtasks, other threads)'],
];
const BID_PATH = ['bidding', 'openrtb', 'targeting', 'privacy', 'tracking', 'delivery'];

const GC_RE =
  /v8::internal::(Heap::(CollectGarbage|PerformGarbageCollection|CollectAllGarbage|FinalizeIncrementalMarking|StartIncrementalMarking)|Scavenger|ScavengerCollector|MarkCompactCollector|MinorMarkSweep|ConcurrentMarking|Sweeper|IncrementalMarking|MemoryReducer|ArrayBufferSweeper|Evacuat|MarkingVisitor|MainMarkingVisitor|YoungGeneration|GCTracer|PagedSpace::.*Sweep|MarkingBarrier::)|heap::base::|cppgc::/;
const COMPILER_RE =
  /v8::internal::(compiler::|maglev::|baseline::|turboshaft::|Compiler::|OptimizingCompileDispatcher|interpreter::BytecodeGenerator|Parser::|ParserBase|PreParser|Scanner::|Deoptimizer|wasm::)|Builtins_(CompileLazy|InstantiateAsmJs)|v8::internal::Runtime_(CompileLazy|CompileOptimized|InstallBaselineCode|NotifyDeoptimized)/;
const KNET_RE =
  /^(tcp_|__tcp_|sock_|__sock_|sk_|__sk_|inet_|__inet_|inet6_|ip_|__ip_|ip6_|ipv6_|skb_|__skb_|kfree_skb|consume_skb|__alloc_skb|alloc_skb|__kfree_skb|net_rx_action|__netif_|netif_|__dev_queue_xmit|dev_hard_start_xmit|loopback_xmit|process_backlog|__napi_poll|napi_|do_softirq|__do_softirq|security_sock|tcp4_|tcp6_)/;
const HTTP_NODE_RE = /^node:(_http_|net$|stream$|internal\/streams\/|internal\/http|internal\/net|internal\/stream_base_commons|internal\/js_stream_socket)/;
const HTTP_PKG_RE = /[\\/]node_modules[\\/](fastify|find-my-way|avvio|light-my-request|@fastify[\\/][^\\/]+|fast-json-stringify|fast-querystring|fast-decode-uri-component|toad-cache|secure-json-parse|process-warning|fastq|reusify|rfdc|@nestjs[\\/][^\\/]+|path-to-regexp|rxjs)[\\/]/;
const REDIS_PKG_RE = /[\\/]node_modules[\\/](ioredis|@ioredis[\\/][^\\/]+|redis-parser|redis-errors|denque|cluster-key-slot|standard-as-callback)[\\/]/;
const HTTP_NATIVE_RE = /^(llhttp|node::http_parser::|node::LibuvStreamWrap::|node::StreamBase::|node::StreamResource::|node::TCPWrap::|node::WriteWrap|node::ShutdownWrap|node::StreamReq::|node::EmitToJSStreamListener|node::CustomBufferJSListener|uv__read|uv__write|uv_try_write|uv__try_write|uv_write|uv__stream_|uv__server_io|uv_accept)/;
const SRC_FOLDERS = { bidding: 'bidding', openrtb: 'openrtb', targeting: 'targeting', privacy: 'privacy', tracking: 'tracking', crypto: 'tracking', delivery: 'delivery', log: 'log', http: 'srchttp' };

function parseOptions(argv) {
  const { values: v } = parseArgs({
    args: argv,
    options: {
      seconds: { type: 'string', default: '30' },
      warmup: { type: 'string', default: '25' },
      rate: { type: 'string', default: '650' },
      targets: { type: 'string', default: 'bidder,baseline' },
      mix: { type: 'string', default: 'samples' },
      notices: { type: 'string', default: '0.1' },
      freq: { type: 'string', default: '999' },
      'node-args': { type: 'string', default: '' },
      out: { type: 'string' },
      json: { type: 'string' },
      top: { type: 'string', default: '0' },
      'no-pin': { type: 'boolean', default: false },
      write: { type: 'boolean', default: false },
      'write-file': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (v.help) return { help: true };
  const num = (k, lo, hi) => {
    const n = Number(v[k]);
    if (!Number.isFinite(n) || n < lo || n > hi) throw new Error(`--${k} ${v[k]}: expected a number from ${lo} to ${hi}`);
    return n;
  };
  const targets = v.targets.split(',').map((s) => s.trim()).filter(Boolean);
  if (targets.length === 0 || targets.some((t) => t !== 'bidder' && t !== 'baseline') || new Set(targets).size !== targets.length) {
    throw new Error(`--targets ${v.targets}: expected bidder, baseline or both, comma-separated, each once`);
  }
  if (v.mix !== 'samples' && v.mix !== 'loadtest') throw new Error(`--mix ${v.mix}: expected samples or loadtest`);
  return {
    seconds: num('seconds', 1, 600),
    warmup: num('warmup', 0, 600),
    rate: num('rate', 1, 20000),
    targets,
    mix: v.mix,
    notices: num('notices', 0, 1),
    freq: num('freq', 1, 10000),
    nodeArgs: v['node-args'].split(/\s+/).filter(Boolean),
    out: v.out ? path.resolve(v.out) : null,
    json: v.json ? path.resolve(v.json) : null,
    top: num('top', 0, 1000),
    pin: !v['no-pin'],
    write: v['write-file'] ? path.resolve(v['write-file']) : v.write ? README : null,
  };
}

/** perf's path: $PERF, else /usr/bin/perf, else the one on PATH, or null. */
function findPerf() {
  if (process.env.PERF) return process.env.PERF;
  if (fs.existsSync('/usr/bin/perf')) return '/usr/bin/perf';
  const r = spawnSync('sh', ['-c', 'command -v perf'], { encoding: 'utf8' });
  return r.stdout.trim() || null;
}

/**
 * Null when `perf record -e cpu-clock -g` works here, else why not (perf missing, or
 * kernel.perf_event_paranoid forbids it to this user). Used by the test to skip.
 */
function perfProblem() {
  if (process.platform !== 'linux') return `perf profiling needs Linux (this is ${process.platform})`;
  const perf = findPerf();
  if (!perf) return 'perf is not installed (Debian: apt-get install linux-perf; or set PERF=/path/to/perf)';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-probe-'));
  try {
    const r = spawnSync(perf, ['record', '-e', 'cpu-clock', '-F', '99', '-g', '-o', path.join(dir, 'probe.data'), '--', 'sleep', '0.05'], { encoding: 'utf8', timeout: 20_000 });
    if (r.status === 0) return null;
    let paranoid = '?';
    try {
      paranoid = fs.readFileSync('/proc/sys/kernel/perf_event_paranoid', 'utf8').trim();
    } catch {
      /* not readable */
    }
    const why = (r.stderr || r.error?.message || '').trim().split('\n').slice(0, 3).join(' ');
    return `${perf} record failed (kernel.perf_event_paranoid=${paranoid}; run as root or lower it to 1 for kernel frames): ${why}`;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** utime + stime of a process in seconds, all threads (USER_HZ ticks of 1/100 s). */
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function requestBodies(mix) {
  if (mix === 'loadtest') {
    const gen = require(path.join(ROOT, 'k6', 'lib', 'generator.js'));
    // The load test's pool (k6/bid.js: POOL_SIZE 2048, SEED 20240501).
    const pool = gen.buildPool(2048, 20240501);
    return { count: pool.length, body: (i, id) => gen.bodyFor(pool[i % pool.length], id) };
  }
  const bodies = sampleBodies();
  return { count: bodies.length, body: (i, id) => bodies[i % bodies.length].replace('"__ID__"', JSON.stringify(id)) };
}

/**
 * Open-loop load: bid requests at a fixed rate over keep-alive connections (answered or not, as
 * exchanges send them); for a share of them the win notice and the impression tracker of the last
 * bid seen (k6/bid.js's rule). Counters are read and reset by the caller around the window.
 */
function startLoad({ url, rate, mix, notices }) {
  const lean = require(path.join(ROOT, 'k6', 'lib', 'lean.js'));
  const bodies = requestBodies(mix);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const c = { bidRequests: 0, bids: 0, nobids: 0, shed: 0, errors: 0, notices: 0, noticeErrors: 0, skipped: 0 };
  let pending = 0;
  let seq = 0;
  let lastWin = null;
  let lastImp = null;
  let stopped = false;
  const get = (u) => {
    pending++;
    const req = http.get(u, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        pending--;
        c.notices++;
        if (res.statusCode !== 204 && res.statusCode !== 200) c.noticeErrors++;
      });
    });
    req.on('error', () => {
      pending--;
      c.noticeErrors++;
    });
  };
  const send = () => {
    // A target far behind the rate would pile requests up without bound: count them as skipped.
    if (pending > 4 * 256) {
      c.skipped++;
      return;
    }
    const n = seq++;
    const body = bodies.body(n, `pf${process.pid}-${n}`);
    pending++;
    const req = http.request(
      { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        const chunks = [];
        res.on('data', (d) => chunks.push(d));
        res.on('end', () => {
          pending--;
          c.bidRequests++;
          let answer = null;
          if (res.statusCode === 200) {
            c.bids++;
            answer = Buffer.concat(chunks).toString('utf8');
          } else if (res.headers['x-bidder-shed'] === '1') c.shed++;
          else if (res.statusCode === 204) c.nobids++;
          else c.errors++;
          if (notices > 0 && !stopped && Math.random() < notices) {
            if (answer !== null) {
              const win = lean.winNotice(answer);
              const imp = lean.impressionTracker(answer);
              if (win !== null && imp !== null) {
                lastWin = win.replace('https://', 'http://');
                lastImp = imp.replace('https://', 'http://');
              }
            }
            if (lastWin !== null && lastImp !== null) {
              get(lastWin);
              get(lastImp);
            }
          }
        });
      },
    );
    req.on('error', () => {
      pending--;
      c.bidRequests++;
      c.errors++;
    });
    req.end(body);
  };
  let next = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    for (; next <= now; next += 1000 / rate) send();
  }, 1);
  return {
    counters: c,
    snapshot: () => ({ ...c }),
    async stop() {
      stopped = true;
      clearInterval(timer);
      await waitFor(async () => pending === 0, 10_000, 'requests in flight').catch(() => undefined);
      agent.destroy();
    },
  };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Runs a command to its end without blocking the event loop; resolves { status, stderr }. */
function run(cmd, args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ status: null, stderr: e.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ status: code, stderr });
    });
  });
}

/** True when the URL answers 200 within a second. */
function ready(url) {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * Starts one target process; returns { pid, url, child, stop() }. `kind` is bidder or baseline
 * (default: `name`), `root` the checkout whose build it runs (default: this one), `perfMap` whether
 * V8 writes the perf map (`npm run ab` runs without), `env` variables set over the defaults.
 */
async function startTarget(name, { redisUrl, nodeArgs, cpu, dir, kind = name, root = ROOT, perfMap = true, env: extraEnv = {} }) {
  const port = await freePort();
  const adminPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const script = kind === 'bidder' ? path.join(root, 'dist', 'main.js') : path.join(root, 'tools', 'bench', 'baseline', 'server.js');
  const env = { ...process.env, PORT: String(port), HOST: '127.0.0.1' };
  delete env.NODE_OPTIONS;
  if (kind === 'bidder') {
    const spill = path.join(dir, 'spill');
    Object.assign(env, {
      NODE_ENV: 'production',
      // The load comes from loopback, to the open endpoint as before (production refuses that unless said).
      EXCHANGES_OPEN: '1',
      // A throwaway Redis without an append-only file (production refuses that unless said).
      REDIS_ALLOW_VOLATILE: '1',
      ADMIN_PORT: String(adminPort),
      REDIS_URL: redisUrl,
      LOG_REDIS_KEY: `profile:${process.pid}:${name}:bidlog`,
      LOG_SPILL_DIR: spill,
      TRACKING_BASE_URL: base,
      TRACKING_SECRET: crypto.randomBytes(32).toString('base64url'),
      PII_HASH_SECRET: crypto.randomBytes(32).toString('base64url'),
    });
  }
  Object.assign(env, extraEnv);
  const args = [...(perfMap ? ['--perf-basic-prof', '--interpreted-frames-native-stack'] : []), ...nodeArgs, script];
  const logFile = path.join(dir, `${name}.log`);
  const out = fs.openSync(logFile, 'a');
  const [cmd, cmdArgs] = cpu !== null ? ['taskset', ['-c', String(cpu), process.execPath, ...args]] : [process.execPath, args];
  const child = spawn(cmd, cmdArgs, { cwd: root, env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  let exited = null;
  child.once('exit', (code, signal) => (exited = signal || `exit code ${code}`));
  const stop = async () => {
    if (exited === null) {
      child.kill('SIGTERM');
      await waitFor(async () => exited !== null, 20_000, `${name} to exit`).catch(() => child.kill('SIGKILL'));
    }
  };
  // The perf map V8 wrote for this process (ours: named by its pid), once `perf script` has read it.
  const removeMap = () => fs.rmSync(`/tmp/perf-${child.pid}.map`, { force: true });
  try {
    await waitFor(
      async () => {
        if (exited !== null) throw new Error(`${name} exited (${exited}) before it was ready; its output: ${logFile}`);
        return ready(`${base}/health/ready`);
      },
      60_000,
      `${name} on ${base}`,
    );
  } catch (e) {
    await stop();
    removeMap();
    throw e;
  }
  return { name, pid: child.pid, url: new URL(`${base}/openrtb2/bid`), logFile, stop, removeMap };
}

/** Parses `perf script` output into samples: { tid, comm, frames: [{ sym, dso }] } leaf first. */
function* samplesOf(text) {
  let cur = null;
  for (const line of text.split('\n')) {
    if (line === '') {
      if (cur) yield cur;
      cur = null;
    } else if (line[0] !== ' ' && line[0] !== '\t') {
      if (cur) yield cur;
      const m = /^(.*?)\s+(\d+)\s*$/.exec(line);
      cur = m ? { comm: m[1], tid: Number(m[2]), frames: [] } : null;
    } else if (cur) {
      const m = /^\s+[0-9a-f]+\s+(.*?)\s+\((.*)\)\s*$/.exec(line);
      if (m) cur.frames.push({ sym: m[1].replace(/\+0x[0-9a-f]+$/, ''), dso: m[2] });
    }
  }
  if (cur) yield cur;
}

/** The category of one frame, or null (pass to the caller). */
function frameBucket({ sym, dso }) {
  if (sym.startsWith('JS:')) {
    const m = /\s(\S+):\d+:\d+$/.exec(sym);
    const file = m ? m[1] : '';
    if (file.startsWith('node:')) {
      if (HTTP_NODE_RE.test(file)) return 'http';
      if (file === 'node:zlib') return 'zstd';
      return null;
    }
    if (HTTP_PKG_RE.test(file)) return 'http';
    if (REDIS_PKG_RE.test(file)) return 'redis';
    if (file.includes(`${path.sep}node_modules${path.sep}`)) return null;
    if (file.endsWith(path.join('tools', 'bench', 'baseline', 'server.js'))) return 'bidding';
    const rel = path.relative(path.join(ROOT, 'dist'), file);
    if (!rel.startsWith('..') && !path.isAbsolute(rel)) {
      const top = rel.split(path.sep)[0];
      return SRC_FOLDERS[top] || 'srcother';
    }
    return null;
  }
  if (/JsonParser|JsonParseInternalizer|Builtins_JsonParse/.test(sym)) return 'json';
  if (/ZSTD_|Zstd/.test(sym)) return 'zstd';
  if (HTTP_NATIVE_RE.test(sym)) return 'http';
  if (dso.includes('[kernel')) return null;
  return null;
}

/** The bucket of one sample (the rule at the top of this file). */
function sampleBucket(s, pid) {
  const f = s.frames;
  if (f.some((x) => GC_RE.test(x.sym))) return 'gc';
  if (f.some((x) => COMPILER_RE.test(x.sym))) return 'compiler';
  if (s.tid !== pid) return f.some((x) => /ZSTD_|Zstd/.test(x.sym)) ? 'zstd' : 'other';
  if (f.length > 0 && f[0].dso.includes('[kernel')) {
    for (const x of f) {
      if (!x.dso.includes('[kernel')) break;
      if (KNET_RE.test(x.sym)) return 'knet';
    }
    return 'ksys';
  }
  for (const x of f) {
    const b = frameBucket(x);
    if (b !== null) return b;
  }
  return 'other';
}

/**
 * The GCs that --trace-gc printed into a target's output: per kind (Scavenge, Mark-Compact, ...)
 * the count, pauses, heap before and after (MB) and the reasons V8 gave.
 */
function gcSummary(text, seconds) {
  const kinds = {};
  const re = /: (Scavenge|Mark-Compact|Minor Mark-Sweep|Mark-Compact \(reduce\))\s+([\d.]+) \(([\d.]+)\) -> ([\d.]+) \(([\d.]+)\) MB, (?:pooled: [\d.]+ MB, )?([\d.]+) \/ [\d.]+ ms (.*)$/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const k = (kinds[m[1]] ??= { count: 0, pauseMs: 0, maxPauseMs: 0, heapBeforeMb: [Infinity, 0], heapAfterMb: [Infinity, 0], reasons: {} });
    const pause = Number(m[6]);
    k.count++;
    k.pauseMs = +(k.pauseMs + pause).toFixed(2);
    k.maxPauseMs = Math.max(k.maxPauseMs, pause);
    k.heapBeforeMb = [Math.min(k.heapBeforeMb[0], Number(m[2])), Math.max(k.heapBeforeMb[1], Number(m[2]))];
    k.heapAfterMb = [Math.min(k.heapAfterMb[0], Number(m[4])), Math.max(k.heapAfterMb[1], Number(m[4]))];
    // The reason follows V8's "(average mu = …, current mu = …)"; ", GC in old space requested" and the like after a ';'.
    const rest = m[7];
    const why = rest.slice(rest.indexOf(')', rest.lastIndexOf('current mu')) + 1).replace(/;\s*$/, '').trim() || '?';
    k.reasons[why] = (k.reasons[why] || 0) + 1;
  }
  for (const k of Object.values(kinds)) k.everySeconds = +(seconds / k.count).toFixed(2);
  return kinds;
}

/**
 * The perf map as of the end of the recording: V8 appends a line per code object it makes and
 * never says when one dies, so an address range freed by the GC and reused for later code is named
 * twice, and `perf script` may pick the stale name (seen: ioredis's execAndUnwrap "calling" the
 * bid route). Keeps, of every set of overlapping ranges, the line written last: the code that
 * lived there during the window, which follows a warm-up.
 */
function latestMapEntries(text) {
  const lines = text.split('\n').filter((l) => l !== '');
  const kept = []; // [start, end, line], sorted by start, disjoint
  const firstEndingAfter = (a) => {
    let lo = 0;
    let hi = kept.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (kept[mid][1] <= a) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  for (let i = lines.length - 1; i >= 0; i--) {
    const m = /^([0-9a-fA-F]+) ([0-9a-fA-F]+) /.exec(lines[i]);
    if (m === null) continue;
    const start = parseInt(m[1], 16);
    const end = start + parseInt(m[2], 16);
    const k = firstEndingAfter(start);
    if (k < kept.length && kept[k][0] < end) continue; // overlaps a later line
    kept.splice(k, 0, [start, end, lines[i]]);
  }
  return kept.map((e) => e[2]).join('\n') + '\n';
}

/** Runs `perf script` on a recording and counts samples per bucket. */
function bucketize(perf, data, pid, top) {
  const mapFile = `/tmp/perf-${pid}.map`;
  if (fs.existsSync(mapFile)) fs.writeFileSync(mapFile, latestMapEntries(fs.readFileSync(mapFile, 'utf8')));
  const r = spawnSync(perf, ['script', '-F', 'comm,tid,ip,sym,dso', '-i', data], { encoding: 'utf8', maxBuffer: 2 ** 31 - 1, timeout: 600_000 });
  if (r.status !== 0) throw new Error(`perf script failed: ${(r.stderr || r.error?.message || '').slice(0, 500)}`);
  const counts = Object.fromEntries(BUCKETS.map(([k]) => [k, 0]));
  const otherLeaves = new Map();
  let total = 0;
  let mainThread = 0;
  for (const s of samplesOf(r.stdout)) {
    const b = sampleBucket(s, pid);
    counts[b]++;
    total++;
    if (s.tid === pid) mainThread++;
    if (top > 0 && b === 'other') {
      const leaf = `${s.tid === pid ? '' : `[${s.comm}] `}${s.frames.slice(0, 3).map((x) => x.sym).join(' < ')}`;
      otherLeaves.set(leaf, (otherLeaves.get(leaf) || 0) + 1);
    }
  }
  const topOther = [...otherLeaves].sort((a, b) => b[1] - a[1]).slice(0, top);
  return { counts, total, mainThread, topOther };
}

async function profileTarget(name, o, ctx) {
  const dir = path.join(ctx.dir, name);
  fs.mkdirSync(dir, { recursive: true });
  const t = await startTarget(name, { redisUrl: ctx.redisUrl, nodeArgs: o.nodeArgs, cpu: ctx.serverCpu, dir });
  ctx.running.add(t);
  const load = startLoad({ url: t.url, rate: o.rate, mix: o.mix, notices: o.notices });
  try {
    ctx.log(`profile: ${name} (pid ${t.pid}) at ${o.rate}/s, warm-up ${o.warmup} s`);
    await sleep(o.warmup * 1000);
    const data = path.join(dir, 'perf.data');
    const out0 = fs.statSync(t.logFile).size;
    const c0 = load.snapshot();
    const cpu0 = cpuSeconds(t.pid);
    const r0 = ctx.redisPid ? cpuSeconds(ctx.redisPid) : 0;
    const t0 = performance.now();
    const perfArgs = ['record', '-q', '-e', 'cpu-clock', '-F', String(o.freq), '-g', '-p', String(t.pid), '-o', data, '--', 'sleep', String(o.seconds)];
    const [cmd, args] = ctx.clientCpu !== null ? ['taskset', ['-c', String(ctx.clientCpu), ctx.perf, ...perfArgs]] : [ctx.perf, perfArgs];
    ctx.log(`profile: ${name}: perf ${perfArgs.join(' ')}`);
    // Not spawnSync: the load generator runs in this process's event loop.
    const rec = await run(cmd, args, (o.seconds + 60) * 1000);
    const wall = (performance.now() - t0) / 1000;
    const cpu1 = cpuSeconds(t.pid);
    const r1 = ctx.redisPid ? cpuSeconds(ctx.redisPid) : 0;
    const c1 = load.snapshot();
    const out1 = fs.statSync(t.logFile).size;
    if (rec.status !== 0) throw new Error(`perf record failed (exit ${rec.status}): ${rec.stderr.slice(0, 500)}`);
    await load.stop();
    await t.stop();
    ctx.running.delete(t);
    let gc = null;
    if (o.nodeArgs.includes('--trace-gc')) {
      const buf = Buffer.alloc(out1 - out0);
      const fd = fs.openSync(t.logFile, 'r');
      fs.readSync(fd, buf, 0, buf.length, out0);
      fs.closeSync(fd);
      gc = gcSummary(buf.toString('utf8'), wall);
    }
    const d = Object.fromEntries(Object.keys(c1).map((k) => [k, c1[k] - c0[k]]));
    ctx.log(`profile: ${name}: perf script`);
    const b = bucketize(ctx.perf, data, t.pid, o.top);
    if (ctx.keep) fs.copyFileSync(`/tmp/perf-${t.pid}.map`, path.join(dir, `perf-${t.pid}.map`));
    else fs.rmSync(data, { force: true });
    t.removeMap();
    const cpu = cpu1 - cpu0;
    const perBid = d.bidRequests > 0 ? (cpu / d.bidRequests) * 1e6 : NaN;
    const buckets = {};
    for (const [k] of BUCKETS) buckets[k] = { samples: b.counts[k], us: b.total > 0 ? (perBid * b.counts[k]) / b.total : NaN };
    return {
      pid: t.pid,
      wallSeconds: +wall.toFixed(3),
      cpuSeconds: +cpu.toFixed(2),
      cpuShare: +(cpu / wall).toFixed(3),
      ...d,
      cpuPerBidRequestUs: +perBid.toFixed(1),
      cpuPerHttpRequestUs: +((cpu / Math.max(1, d.bidRequests + d.notices)) * 1e6).toFixed(1),
      redisCpuPerBidRequestUs: ctx.redisPid && name === 'bidder' ? +(((r1 - r0) / Math.max(1, d.bidRequests)) * 1e6).toFixed(1) : null,
      samples: b.total,
      mainThreadShare: b.total > 0 ? +(b.mainThread / b.total).toFixed(3) : NaN,
      sampleCoverage: +(b.total / o.freq / Math.max(cpu, 0.01)).toFixed(2),
      buckets,
      topOther: b.topOther,
      gc,
      log: t.logFile,
    };
  } finally {
    await load.stop();
    if (ctx.running.has(t)) {
      await t.stop();
      ctx.running.delete(t);
    }
    t.removeMap();
  }
}

function table(o, results) {
  const names = Object.keys(results);
  const col = (s, w) => String(s).padStart(w);
  const lines = [];
  lines.push(`| bucket, µs of CPU per bid request | ${names.join(' | ')} | ${names.map((n) => `${n} %`).join(' | ')} |`);
  lines.push(`|---|${names.map(() => '---:').join('|')}|${names.map(() => '---:').join('|')}|`);
  const row = (label, f) => lines.push(`| ${label} | ${names.map((n) => col(f(results[n]).toFixed(1), 6)).join(' | ')} | ${names.map((n) => col(((100 * f(results[n])) / results[n].cpuPerBidRequestUs).toFixed(1), 5)).join(' | ')} |`);
  for (const [k, label] of BUCKETS) row(label, (r) => r.buckets[k].us);
  row('**bid path, src/bidding to src/delivery**', (r) => BID_PATH.reduce((a, k) => a + r.buckets[k].us, 0));
  row('**total (/proc/<pid>/stat)**', (r) => r.cpuPerBidRequestUs);
  lines.push('');
  for (const n of names) {
    const r = results[n];
    lines.push(
      `${n}: ${r.bidRequests} bid requests in ${r.wallSeconds} s (${(r.bidRequests / r.wallSeconds).toFixed(0)}/s; bids ${r.bids}, no-bids ${r.nobids}, shed ${r.shed}, errors ${r.errors}, not sent ${r.skipped}), ` +
        `${r.notices} notice requests (${(r.notices / Math.max(1, r.bidRequests)).toFixed(3)} per bid request, ${r.noticeErrors} failed); ` +
        `CPU ${r.cpuSeconds} s (${(100 * r.cpuShare).toFixed(1)} % of a core), ${r.cpuPerBidRequestUs} µs per bid request, ${r.cpuPerHttpRequestUs} µs per HTTP request` +
        `${r.redisCpuPerBidRequestUs !== null ? `, Redis beside it ${r.redisCpuPerBidRequestUs} µs per bid request` : ''}; ` +
        `${r.samples} samples (${(100 * r.mainThreadShare).toFixed(1)} % on the main thread, ${r.sampleCoverage} of the CPU time covered)`,
    );
  }
  if (names.length === 2) {
    const [a, b] = names;
    lines.push(`ratio ${a}/${b}: ${(results[a].cpuPerBidRequestUs / results[b].cpuPerBidRequestUs).toFixed(2)}`);
  }
  for (const n of names) {
    for (const [kind, g] of Object.entries(results[n].gc || {})) {
      lines.push(
        `${n}: ${g.count} ${kind} in the window (every ${g.everySeconds} s, ${((1e4 * g.count) / Math.max(1, results[n].bidRequests)).toFixed(2)} per 10,000 bid requests), ` +
          `pauses ${g.pauseMs} ms in all, longest ${g.maxPauseMs} ms, heap ${g.heapBeforeMb.join('-')} -> ${g.heapAfterMb.join('-')} MB; ${Object.entries(g.reasons).map(([r, c]) => `${c}× ${r}`).join(', ')}`,
      );
    }
  }
  for (const n of names) {
    if (results[n].topOther.length === 0) continue;
    lines.push('', `${n}: most frequent stacks (leaf < caller < caller) in "other":`);
    for (const [s, c] of results[n].topOther) lines.push(`  ${c}  ${s}`);
  }
  return lines.join('\n');
}

/** The commit this tree is at (short), and whether the files a profile runs are changed; null outside git. */
function gitState() {
  const git = (args) => spawnSync('git', args, { cwd: ROOT, encoding: 'utf8' });
  const head = git(['rev-parse', '--short=10', 'HEAD']);
  if (head.status !== 0) return null;
  const dirty = git(['status', '--porcelain', '--untracked-files=no', '--', 'src', 'tools', 'package.json', 'package-lock.json']).stdout.trim() !== '';
  return { commit: head.stdout.trim(), dirty };
}

/**
 * The block `--write` puts between the markers: what produced it (command, commit, machine, Node,
 * load average before and after, whether the machine was busy), the run's settings and the table.
 */
function profileBlock({ argv, git, settings, table: text, loadBefore, loadAfter, cpus = os.cpus(), totalmem = os.totalmem(), now = new Date() }) {
  const load = (l) => l.map((x) => x.toFixed(1)).join(' ');
  const busiest = Math.max(loadBefore[0], loadAfter[0]);
  const busy = busiest > 0.5 * cpus.length;
  return [
    MARKERS[0],
    `Written by \`npm run profile -- ${argv.join(' ')}\` (tools/profile.js); run it again to refresh this block, do not edit it by hand.`,
    '',
    `Machine: ${cpus[0]?.model.trim() ?? 'cpu'} x${cpus.length}, ${Math.round(totalmem / 2 ** 30)} GiB; Node ${process.version}; ` +
      `commit ${git ? `${git.commit}${git.dirty ? ' with uncommitted changes' : ''}` : 'unknown'}; ${now.toISOString()}; ` +
      `load average ${load(loadBefore)} before, ${load(loadAfter)} after.`,
    ...(busy ? ['', `**The machine was busy** (load average up to ${busiest.toFixed(1)} on ${cpus.length} CPUs): the shares are indicative, the µs more so.`] : []),
    '',
    settings,
    '',
    text,
    MARKERS[1],
  ].join('\n');
}

/** `text` with the block between the markers replaced by `block` (markers included); throws without them. */
function replaceBlock(text, block, file) {
  const a = text.indexOf(MARKERS[0]);
  const b = text.indexOf(MARKERS[1]);
  if (a < 0 || b < a) throw new Error(`${file}: no "${MARKERS[0]}" ... "${MARKERS[1]}" block to write the table into`);
  return text.slice(0, a) + block + text.slice(b + MARKERS[1].length);
}

/** The options `parse` reads from this process's arguments; exits 2 with `usage` on a bad one, null after printing it for --help. */
function cliOptions(tag, usage, parse) {
  let o;
  try {
    o = parse(process.argv.slice(2));
  } catch (e) {
    console.error(`${tag}: ${e.message}\n${usage}`);
    process.exit(2);
  }
  if (o.help) {
    console.log(usage);
    return null;
  }
  return o;
}

/** Whether processes can be pinned to CPUs here: asked for, two CPUs or more, and taskset present. */
function canPin(wanted) {
  return wanted && os.availableParallelism() >= 2 && spawnSync('sh', ['-c', 'command -v taskset'], { encoding: 'utf8' }).stdout.trim() !== '';
}

/** Pins every thread of `pid` to `cpu` (taskset). */
function pinTo(pid, cpu) {
  spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

/** On SIGINT or SIGTERM: `cleanup`, then exit 130. Returns the function that removes the handlers. */
function onInterrupt(tag, cleanup) {
  const onSignal = () => {
    console.error(`${tag}: interrupted, stopping what it started`);
    cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  };
}

async function main() {
  const o = cliOptions('profile', USAGE, parseOptions);
  if (o === null) return;
  const log = (s) => console.error(s);
  const problem = perfProblem();
  if (problem) {
    console.error(`profile: ${problem}`);
    process.exit(3);
  }
  if (o.targets.includes('bidder') && !fs.existsSync(path.join(ROOT, 'dist', 'main.js'))) {
    console.error('profile: dist/main.js is missing: npm run build first');
    process.exit(2);
  }
  if (o.write) {
    // Before the minutes of measuring: the file must have the block.
    try {
      replaceBlock(fs.readFileSync(o.write, 'utf8'), '', o.write);
    } catch (e) {
      console.error(`profile: ${e.message}`);
      process.exit(2);
    }
  }
  const loadBefore = os.loadavg();
  const dir = o.out || fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-profile-'));
  fs.mkdirSync(dir, { recursive: true });
  const pin = canPin(o.pin);
  const ctx = { dir, keep: o.out !== null, perf: findPerf(), running: new Set(), redisUrl: null, redisPid: null, serverCpu: pin ? 0 : null, clientCpu: pin ? 1 : null, log };
  if (pin) {
    // The load and perf on CPU 1, each target on CPU 0 (as tools/bench/ab-http.js is used).
    pinTo(process.pid, 1);
    log('profile: targets pinned to CPU 0, the load generator, Redis and perf to CPU 1 (--no-pin to leave them free)');
  }
  let redis = null;
  const cleanup = async () => {
    for (const t of ctx.running) {
      await t.stop();
      t.removeMap();
    }
    if (redis) await redis.stop();
    if (!ctx.keep) fs.rmSync(dir, { recursive: true, force: true });
  };
  const uninterruptible = onInterrupt('profile', cleanup);
  try {
    if (o.targets.includes('bidder')) {
      redis = await startRedis({ dir: path.join(dir, 'redis'), log });
      ctx.redisUrl = redis.url;
      ctx.redisPid = redis.pid;
      if (pin) pinTo(redis.pid, 1);
    }
    const results = {};
    for (const name of o.targets) results[name] = await profileTarget(name, o, ctx);
    const text = table(o, results);
    const settings =
      `${o.seconds} s of perf samples (cpu-clock, ${o.freq} Hz) per target after ${o.warmup} s of warm-up, ${o.rate} bid requests/s open loop, ` +
      `${o.mix === 'samples' ? 'the sample requests of tools/bench/ab-http.js' : "the load test's generated requests"}, notices for ${o.notices * 100} % of them` +
      `${pin ? ', each target on CPU 0 and the load, Redis and perf on CPU 1' : ''}.`;
    console.log(`profile: ${settings} Node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}\n`);
    console.log(text);
    if (o.write) {
      const block = profileBlock({ argv: process.argv.slice(2), git: gitState(), settings, table: text, loadBefore, loadAfter: os.loadavg() });
      fs.writeFileSync(o.write, replaceBlock(fs.readFileSync(o.write, 'utf8'), block, o.write));
      log(`profile: the table written to ${path.relative(ROOT, o.write) || o.write}`);
    }
    if (o.json) fs.writeFileSync(o.json, `${JSON.stringify({ options: o, buckets: BUCKETS, results }, null, 2)}\n`);
  } finally {
    uninterruptible();
    await cleanup();
  }
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`profile: ${e.stack || e.message}`);
    process.exit(1);
  });
}

module.exports = { profileBlock, replaceBlock, MARKERS, perfProblem, gcSummary, latestMapEntries, sampleBucket, frameBucket, samplesOf, BUCKETS, startLoad, startTarget, cpuSeconds, cliOptions, canPin, pinTo, onInterrupt };
