'use strict';
// `npm run memory`: where a bid worker's memory goes over time (measured with `npm run memory`).
// Starts one Redis and one bidder process (dist/main.js, as a PM2 worker runs it) per variant, all
// at once, and drives each with the same fixed-rate keep-alive load (tools/profile.js's load
// generator: the load test's requests, win notices and impression trackers for 10 % of them) for
// --minutes. Every 10 s it samples each bidder: RSS and its anonymous part (/proc/<pid>/status),
// CPU seconds (/proc/<pid>/stat, all threads), the V8 heap and `external` (/metrics), and the
// resident size of the glibc malloc arenas of other threads (64 MiB-aligned anonymous mappings
// of 64 MiB reserved, /proc/<pid>/smaps). Then it stops the bidders (SIGTERM: the final flush)
// and counts every variant's records in Redis. The variants run side by side so that they share
// the machine's load; each is a list of environment assignments (`--variant MALLOC_ARENA_MAX=2`),
// `--variant default` for none.
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');
const zlib = require('node:zlib');
const { readCommandLine, usageError } = require('../scripts/lib/cli');
const { spawn } = require('node:child_process');
const { startRedis, freePort, waitFor } = require('../scripts/lib/redis');
const { startLoad } = require('./profile');
const { mappings } = require('./lib/loadtest-proc');

const ROOT = path.resolve(__dirname, '..');
const USAGE = 'usage: npm run memory -- [--minutes 12] [--rate 400] [--variant default] [--variant="MALLOC_ARENA_MAX=2,--max-semi-space-size=16"] [--json <file>]';
const SAMPLE_MS = 10_000;

function parseOptions(argv) {
  const { values } = readCommandLine({
    name: 'memory',
    usage: USAGE,
    args: argv,
    options: {
      minutes: { type: 'string', default: '12' },
      rate: { type: 'string', default: '400' },
      variant: { type: 'string', multiple: true },
      json: { type: 'string' },
    },
  });
  const variants = (values.variant ?? ['default']).map((v) => {
    const env = {};
    const nodeArgs = [];
    if (v !== 'default') {
      for (const kv of v.split(/[ ,]+/).filter(Boolean)) {
        if (kv.startsWith('--')) {
          nodeArgs.push(kv);
          continue;
        }
        const eq = kv.indexOf('=');
        if (eq < 1) usageError('memory', USAGE, `--variant ${JSON.stringify(v)}: expected NAME=value[,NAME=value]`);
        env[kv.slice(0, eq)] = kv.slice(eq + 1);
      }
    }
    return { name: v, env, nodeArgs };
  });
  const minutes = Number(values.minutes);
  const rate = Number(values.rate);
  if (!(minutes > 0) || !(rate > 0)) usageError('memory', USAGE, '--minutes and --rate must be above 0');
  return { minutes, rate, variants, json: values.json ?? null };
}

/** utime + stime of every thread, seconds. */
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function statusKb(pid) {
  const out = {};
  for (const line of fs.readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const m = /^(VmRSS|RssAnon|RssFile|Threads):\s+(\d+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

function get(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
  });
}

async function metrics(adminUrl) {
  const names = ['nodejs_heap_size_used_bytes', 'nodejs_heap_size_total_bytes', 'nodejs_external_memory_bytes', 'bidder_log_records_dropped_total'];
  const out = {};
  try {
    const { body } = await get(`${adminUrl}/metrics`);
    for (const n of names) {
      const m = new RegExp(`^${n}(?:\\{[^}]*\\})? (\\S+)`, 'm').exec(body);
      out[n] = m ? Number(m[1]) : null;
    }
    for (const space of ['new', 'old']) {
      const m = new RegExp(`^nodejs_heap_space_size_total_bytes\\{space="${space}"[^}]*\\} (\\S+)`, 'm').exec(body);
      out[`${space}Space`] = m ? Number(m[1]) : null;
    }
  } catch {
    /* a scrape that failed leaves the figures empty */
  }
  return out;
}

async function startBidder(variant, redisUrl, dir) {
  const port = await freePort();
  const adminPort = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const logKey = `memory:${process.pid}:${variant.name}:bidlog`;
  const env = {
    ...process.env,
    NODE_ENV: 'production',
    // The load comes from loopback, to the open endpoint as before (production refuses that unless said).
    EXCHANGES_OPEN: '1',
    // A throwaway Redis without an append-only file (production refuses that unless said).
    REDIS_ALLOW_VOLATILE: '1',
    PORT: String(port),
    HOST: '127.0.0.1',
    ADMIN_PORT: String(adminPort),
    REDIS_URL: redisUrl,
    LOG_REDIS_KEY: logKey,
    LOG_SPILL_DIR: path.join(dir, 'spill'),
    TRACKING_BASE_URL: base,
    TRACKING_SECRET: crypto.randomBytes(32).toString('base64url'),
    PII_HASH_SECRET: crypto.randomBytes(32).toString('base64url'),
    ...variant.env,
  };
  delete env.NODE_OPTIONS;
  fs.mkdirSync(dir, { recursive: true });
  const logFile = path.join(dir, 'bidder.log');
  const out = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, [...variant.nodeArgs, path.join(ROOT, 'dist', 'main.js')], { cwd: ROOT, env, stdio: ['ignore', out, out] });
  fs.closeSync(out);
  let exited = null;
  child.once('exit', (code, signal) => (exited = signal || `exit code ${code}`));
  await waitFor(
    async () => {
      if (exited !== null) throw new Error(`bidder ${variant.name} exited (${exited}); its output: ${logFile}`);
      return get(`${base}/health/ready`).then((r) => r.status === 200, () => false);
    },
    60_000,
    `bidder ${variant.name}`,
  );
  return {
    variant,
    pid: child.pid,
    url: new URL(`${base}/openrtb2/bid`),
    admin: `http://127.0.0.1:${adminPort}`,
    logKey,
    samples: [],
    async stop() {
      if (exited !== null) return;
      child.kill('SIGTERM');
      await waitFor(async () => exited !== null, 30_000, `bidder ${variant.name} to exit`).catch(() => child.kill('SIGKILL'));
    },
  };
}

/** Records of each type in a log list (every frame decompressed). */
async function countRecords(redisUrl, key) {
  const Redis = require('ioredis');
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  const types = {};
  try {
    const len = await redis.llen(key);
    for (let i = 0; i < len; i += 50) {
      for (const frame of await redis.lrangeBuffer(key, i, i + 49)) {
        const text = zlib.zstdDecompressSync(frame).toString('utf8');
        for (const m of text.matchAll(/^\{"ts":[^,]*,"type":"([a-z_]+)"/gm)) types[m[1]] = (types[m[1]] ?? 0) + 1;
      }
    }
  } finally {
    redis.disconnect();
  }
  return types;
}

const mb = (kb) => (kb / 1024).toFixed(1);

/** The median of a figure over the samples within 30 s of `t` seconds (one sample when fewer). */
function around(samples, t, f) {
  const near = samples.filter((s) => Math.abs(s.t - t) <= 30).map(f).sort((a, b) => a - b);
  return near.length ? near[Math.floor(near.length / 2)] : NaN;
}

function summary(b, minutes) {
  const s = b.samples;
  const end = s[s.length - 1].t;
  const at = (t) => ({
    rss: around(s, t, (x) => x.VmRSS),
    arenas: around(s, t, (x) => x.arenas),
    heap: around(s, t, (x) => x.heap),
    otherAnon: around(s, t, (x) => x.otherAnon),
    v8: around(s, t, (x) => (x.nodejs_heap_size_total_bytes ?? 0) / 1024),
    newSpace: around(s, t, (x) => (x.newSpace ?? 0) / 1024),
    oldSpace: around(s, t, (x) => (x.oldSpace ?? 0) / 1024),
    external: around(s, t, (x) => (x.nodejs_external_memory_bytes ?? 0) / 1024),
  });
  const m2 = at(120);
  const m5 = at(300);
  const last = at(end - 30);
  const cpu = s[s.length - 1].cpu - s[0].cpu;
  return { variant: b.variant.name, minutes, m2, m5, end: last, growthPct: ((last.rss - m5.rss) / m5.rss) * 100, peakRss: Math.max(...s.map((x) => x.VmRSS)), cpuSeconds: cpu, threads: s[s.length - 1].Threads };
}

async function main() {
  const o = parseOptions(process.argv.slice(2));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-memory-'));
  const redis = await startRedis({ dir: path.join(dir, 'redis') });
  const bidders = [];
  const loads = [];
  try {
    for (const [i, v] of o.variants.entries()) bidders.push(await startBidder(v, redis.url, path.join(dir, `v${i}`)));
    for (const b of bidders) console.error(`memory: ${b.variant.name}: pid ${b.pid}, ${b.url.origin}`);
    for (const b of bidders) loads.push(startLoad({ url: b.url, rate: o.rate, mix: 'loadtest', notices: 0.1 }));
    const t0 = Date.now();
    const sample = async () => {
      const t = Math.round((Date.now() - t0) / 1000);
      for (const b of bidders) {
        const x = { t, cpu: cpuSeconds(b.pid), ...statusKb(b.pid), ...mappings(b.pid), ...(await metrics(b.admin)) };
        b.samples.push(x);
      }
      console.error(
        `memory: ${t}s ` +
          bidders
            .map((b) => {
              const x = b.samples[b.samples.length - 1];
              return `${b.variant.name}: RSS ${mb(x.VmRSS)} MB (arenas ${mb(x.arenas)} in ${x.arenaCount}, [heap] ${mb(x.heap)}, other anon ${mb(x.otherAnon)}, V8 ${mb((x.nodejs_heap_size_total_bytes ?? 0) / 1024)} (new ${mb((x.newSpace ?? 0) / 1024)}, old ${mb((x.oldSpace ?? 0) / 1024)}), external ${mb((x.nodejs_external_memory_bytes ?? 0) / 1024)}) cpu ${x.cpu.toFixed(1)} s`;
            })
            .join(' | '),
      );
    };
    await sample();
    const endAt = t0 + o.minutes * 60_000;
    while (Date.now() < endAt) {
      await new Promise((r) => setTimeout(r, Math.min(SAMPLE_MS, endAt - Date.now())));
      await sample();
    }
    for (const l of loads) await l.stop();
    const sums = bidders.map((b) => summary(b, o.minutes));
    for (const b of bidders) await b.stop();
    for (const [i, b] of bidders.entries()) {
      const c = loads[i].snapshot();
      sums[i].requests = c;
      sums[i].records = await countRecords(redis.url, b.logKey);
      sums[i].complete = sums[i].records.request === c.bidRequests - c.errors && sums[i].records.response === c.bidRequests - c.errors;
    }
    console.log('| variant | RSS min 2 | RSS min 5 | RSS end | growth from min 5 | V8 new space min 5 → end | V8 old space end | [heap] min 5 → end | thread arenas min 5 → end | external end | CPU per bid request | bid requests (shed) | request / response records |');
    console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const s of sums) {
      console.log(
        `| ${s.variant} | ${mb(s.m2.rss)} MB | ${mb(s.m5.rss)} MB | ${mb(s.end.rss)} MB | ${s.growthPct.toFixed(1)} % | ${mb(s.m5.newSpace)} → ${mb(s.end.newSpace)} MB | ${mb(s.end.oldSpace)} MB | ${mb(s.m5.heap)} → ${mb(s.end.heap)} MB | ${mb(s.m5.arenas)} → ${mb(s.end.arenas)} MB | ${mb(s.end.external)} MB | ` +
          `${((s.cpuSeconds / s.requests.bidRequests) * 1e6).toFixed(0)} µs | ${s.requests.bidRequests} (${((100 * s.requests.shed) / s.requests.bidRequests).toFixed(1)} %) | ${s.records.request ?? 0} / ${s.records.response ?? 0}${s.complete ? '' : ' **incomplete**'} |`,
      );
    }
    if (o.json) fs.writeFileSync(o.json, JSON.stringify({ options: o, summary: sums, samples: bidders.map((b) => ({ variant: b.variant.name, samples: b.samples })) }, null, 1));
  } finally {
    for (const l of loads) await l.stop().catch(() => undefined);
    for (const b of bidders) await b.stop().catch(() => undefined);
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((e) => {
    console.error(`memory: ${e.stack || e.message}`);
    process.exitCode = 1;
  });
}
