'use strict';
// The soak scenario's own part of the load test (docs/loadtest.md, "Soak"): a sampler that reads,
// every few seconds while k6 runs, each worker's RSS, the PM2 daemon's and the shipper's, Redis's
// used_memory and the bid log's backlog (the workers' /metrics/cluster?by=worker and the shipper's
// /metrics); the verdict on those samples; and its section and plots of the report.
const http = require('node:http');
const path = require('node:path');
const { mappings, memory, pm2Processes, pm2DaemonPid } = require('./loadtest-proc');
const { lineChart, PALETTE } = require('./charts');

const ROOT = path.resolve(__dirname, '..', '..');
const MB = 1024 * 1024;

/**
 * Pass criteria. RSS: each worker's RSS at the end (median of the last window) is less than 5 %
 * above its RSS at minute 5 (median of the window from there).
 * Redis: bounded means that nothing without an expiry accumulates. Notice and impression markers
 * grow with traffic by design until their TTL (BILL_DEDUPE_TTL_S, 7 days, and 2 days): they are
 * reported (keys with a TTL, used_memory's growth per minute), not judged. Judged: (1) the bid log
 * in Redis is drained by the shipper, the highest backlog of the last 5 minutes at most 10 % (or
 * 4 MiB: a few frames at small sizes) above the highest between minute 5 and then; (2) the keys
 * without a TTL do not grow in the last 5 minutes beyond the highest count before (+1 % or 50).
 */
const CRITERIA = { rssGrowth: 0.05, backlogGrowth: 0.1, backlogSlackMB: 4, persistentGrowth: 0.01, persistentSlack: 50, settleS: 300, windowS: 60 };

/** Exit status of a soak that failed a criterion: 8 plus the sum of the failed criteria's bits. */
const EXIT_BITS = { rss: 1, redis: 2, records: 4 };
const EXIT_BASE = 8;

// The bid log's families sampled: per worker (summed) or shared by the workers (the largest reading).
const LOG_FAMILIES = {
  bidder_log_records_queued: 'sum',
  bidder_log_bytes_queued: 'sum',
  bidder_log_records_pending: 'sum',
  bidder_log_bytes_pending: 'sum',
  bidder_log_memory_bytes: 'sum',
  bidder_log_records_dropped_total: 'sum',
  bidder_log_spill_bytes: 'max',
  bidder_log_spill_files: 'max',
  bidder_log_backlog_bytes: 'max',
  bidder_log_backlog_frames: 'max',
  // ArrayBuffer memory (request bodies, log chunks, frames): the largest worker's.
  nodejs_external_memory_bytes: 'max',
  // Open connections of both ports, all workers (each keeps its socket, parser and buffers).
  bidder_http_connections_open: 'sum',
};
const SHIPPER_FAMILIES = ['shipper_backlog_bytes', 'shipper_backlog_frames', 'shipper_processing_frames'];

/** Sample values of the families `wanted` in a Prometheus text exposition: {family: [values]}. */
function scrape(text, wanted) {
  const out = {};
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m || !wanted.includes(m[1])) continue;
    const v = Number(m[2]);
    if (Number.isFinite(v)) (out[m[1]] ||= []).push(v);
  }
  return out;
}

/** The body of a 200 answer to GET `url`, or null (any other answer, an error, no answer in time). */
function getText(url, timeoutMs = 3000) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(res.statusCode === 200 ? body : null));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(null));
  });
}

/**
 * Samples the bidder's cluster every `intervalMs` until stop(). The workers' pids are read from PM2
 * once (and again only when one is gone: a restart), the rest from /proc, Redis and HTTP.
 */
class SoakSampler {
  constructor({ pm2Home, app = 'bidder', redisUrl, redisNodes, adminUrl, shipperUrl, intervalMs, log = () => {} }) {
    Object.assign(this, { pm2Home, app, redisUrl, redisNodes, adminUrl, shipperUrl, intervalMs, log });
    this.samples = [];
    this.procs = null;
    this.redis = null;
    this.timer = null;
    this.busy = null;
  }

  async start() {
    const Redis = require(path.join(ROOT, 'node_modules', 'ioredis'));
    const addresses = this.redisNodes ? this.redisNodes.split(',').map((hp) => `redis://${hp}`) : this.redisUrl ? [this.redisUrl] : [];
    this.redis = addresses.map((u) => new Redis(u, { lazyConnect: true, maxRetriesPerRequest: 1 }));
    await Promise.all(this.redis.map((c) => c.connect())).catch((e) => {
      this.log(`loadtest: soak: Redis memory will not be sampled: ${e.message}`);
      for (const c of this.redis) c.disconnect();
      this.redis = [];
    });
    await this.refreshProcs();
    this.tick();
    this.timer = setInterval(() => this.tick(), this.intervalMs);
  }

  async refreshProcs() {
    const all = (await pm2Processes(this.pm2Home).catch(() => [])).filter((p) => p.status === 'online');
    this.procs = { workers: all.filter((p) => p.name === this.app), helpers: all.filter((p) => p.name !== this.app), daemon: pm2DaemonPid(this.pm2Home) };
  }

  tick() {
    if (this.busy) return; // a slow reading (a busy machine) skips a tick rather than pile up
    this.busy = this.sample()
      .then((s) => this.samples.push(s))
      .catch((e) => this.log(`loadtest: soak: sample failed: ${e.message}`))
      .finally(() => (this.busy = null));
  }

  async sample() {
    const t = Date.now();
    const rss = (pid) => {
      const m = pid ? memory(pid) : null;
      return m ? m.rssMB : null;
    };
    // A worker's RSS, and of it malloc's main arena ([heap]): where a step that stays shows first.
    const worker = (p) => {
      const parts = mappings(p.pid);
      return { pmId: p.pmId, pid: p.pid, rssMB: rss(p.pid), heapMB: parts ? parts.heap / 1024 : null };
    };
    let workers = this.procs.workers.map(worker);
    if (workers.some((w) => w.rssMB === null)) {
      await this.refreshProcs();
      workers = this.procs.workers.map(worker);
    }
    const shipper = this.procs.helpers.find((p) => p.name === 'shipper');
    const s = { t, workers, daemonRssMB: rss(this.procs.daemon), shipperRssMB: shipper ? rss(shipper.pid) : null, redisUsedMB: null, log: {}, shipper: {} };
    if (this.redis.length) {
      try {
        let used = 0;
        let keys = 0;
        let expires = 0;
        for (const c of this.redis) {
          used += Number((/^used_memory:(\d+)/m.exec(await c.info('memory')) || [])[1] || NaN);
          for (const m of (await c.info('keyspace')).matchAll(/^db\d+:keys=(\d+),expires=(\d+)/gm)) {
            keys += Number(m[1]);
            expires += Number(m[2]);
          }
        }
        s.redisUsedMB = Number.isFinite(used) ? used / MB : null;
        s.redisKeys = keys;
        s.redisKeysWithTtl = expires;
      } catch {
        /* Redis busy or away: this sample has no Redis reading */
      }
    }
    const text = this.adminUrl ? await getText(`${this.adminUrl}/metrics/cluster?by=worker`) : null;
    if (text) {
      const v = scrape(text, Object.keys(LOG_FAMILIES));
      for (const [k, how] of Object.entries(LOG_FAMILIES)) if (v[k]) s.log[k] = how === 'sum' ? v[k].reduce((a, b) => a + b, 0) : Math.max(...v[k]);
    }
    const st = this.shipperUrl ? await getText(`${this.shipperUrl}/metrics`) : null;
    if (st) {
      const v = scrape(st, SHIPPER_FAMILIES);
      for (const k of SHIPPER_FAMILIES) if (v[k]) s.shipper[k] = v[k][0];
    }
    return s;
  }

  /** Stops sampling; returns {intervalS, samples}. */
  async stop() {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.busy) await this.busy;
    for (const c of this.redis || []) c.disconnect();
    return { intervalS: this.intervalMs / 1000, samples: this.samples };
  }
}

function median(xs) {
  if (!xs.length) return null;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/**
 * The soak's windows (seconds since k6's start) for a measured phase of `duration` s from `start`:
 * minute 5 (or the first sixth of a shorter soak) and the last 5 minutes (or sixth), and the
 * windows over which RSS is taken: a minute, or 3 samples when that is longer (or a thirtieth of a
 * shorter soak).
 */
function windows(start, duration, intervalS, c = CRITERIA) {
  const settle = Math.min(c.settleS, duration / 6);
  const w = Math.max(3 * intervalS, Math.min(c.windowS, duration / 30));
  const end = start + duration;
  return { start, end, settleAt: start + settle, rssWindow: w, lastFrom: end - settle, scaled: settle < c.settleS };
}

/**
 * The verdict on a soak's samples: `sampling` = {intervalS, samples} (t in ms), `t0` k6's start
 * (ms), `phase` the measured phase {start, duration} (s), `logs` the record accounting of the run.
 * Returns {criteria, windows, rss, redis, records, ok, failed, exitBits, series}.
 */
function verdict({ sampling, t0, phase, logs }, c = CRITERIA) {
  const samples = (sampling && sampling.samples) || [];
  const intervalS = sampling ? sampling.intervalS : 10;
  const x = (s) => (s.t - t0) / 1000;
  const win = windows(phase.start, phase.duration, intervalS, c);
  const inRange = (a, b) => samples.filter((s) => x(s) >= a - 1e-6 && x(s) <= b + 1e-6);

  // Worker RSS, by PM2 id (a restarted worker is the same worker with another pid; restarts fail
  // the run on their own).
  const ids = [...new Set(samples.flatMap((s) => s.workers.map((w) => w.pmId)))].sort((a, b) => a - b);
  const rssOf = (list, id, key = 'rssMB') => list.map((s) => (s.workers.find((w) => w.pmId === id) || {})[key]).filter((v) => typeof v === 'number');
  const early = inRange(win.settleAt, win.settleAt + win.rssWindow);
  const late = inRange(win.end - win.rssWindow, win.end);
  const workers = ids.map((id) => {
    const a = median(rssOf(early, id));
    const b = median(rssOf(late, id));
    // Of it, malloc's main arena (absent from samples taken before it was sampled).
    const heap = { atSettleMB: median(rssOf(early, id, 'heapMB')), atEndMB: median(rssOf(late, id, 'heapMB')) };
    return { pmId: id, atSettleMB: a, atEndMB: b, growth: a && b !== null ? b / a - 1 : null, heap };
  });
  const growths = workers.map((w) => w.growth).filter((g) => g !== null);
  const rss = { limit: c.rssGrowth, workers, maxGrowth: growths.length ? Math.max(...growths) : null, ok: false, why: '' };
  if (!workers.length || growths.length !== workers.length) rss.why = `too few RSS samples (${early.length} from minute ${(win.settleAt - win.start) / 60 >= 1 ? (win.settleAt - win.start) / 60 : `${win.settleAt - win.start} s`}, ${late.length} at the end)`;
  else if (rss.maxGrowth >= c.rssGrowth) rss.why = `a worker's RSS grew by ${(rss.maxGrowth * 100).toFixed(1)} % (limit ${c.rssGrowth * 100} %)`;
  else rss.ok = true;

  // Redis: the last window's peaks against the peaks between the settle point and it.
  const beforeLast = samples.filter((s) => x(s) >= win.settleAt - 1e-6 && x(s) < win.lastFrom);
  const lastOnes = inRange(win.lastFrom, win.end);
  const peak = (list, f) => {
    const v = list.map(f).filter((n) => typeof n === 'number' && n >= 0);
    return v.length ? Math.max(...v) : null;
  };
  const backlogMB = (s) => (typeof s.log.bidder_log_backlog_bytes === 'number' && s.log.bidder_log_backlog_bytes >= 0 ? s.log.bidder_log_backlog_bytes / MB : null);
  const persistent = (s) => (typeof s.redisKeys === 'number' ? s.redisKeys - s.redisKeysWithTtl : null);
  const backlog = { previousMaxMB: peak(beforeLast, backlogMB), lastMaxMB: peak(lastOnes, backlogMB), allowedMB: null };
  if (backlog.previousMaxMB !== null) backlog.allowedMB = Math.max(backlog.previousMaxMB * (1 + c.backlogGrowth), backlog.previousMaxMB + c.backlogSlackMB);
  const keys = { previousMax: peak(beforeLast, persistent), lastMax: peak(lastOnes, persistent), allowed: null };
  if (keys.previousMax !== null) keys.allowed = Math.max(Math.floor(keys.previousMax * (1 + c.persistentGrowth)), keys.previousMax + c.persistentSlack);
  // Reported, not judged: used_memory and the keys with a TTL, from minute 5's window to the last one.
  const mean = (list, f) => {
    const v = list.map(f).filter((n) => typeof n === 'number');
    return v.length ? v.reduce((a, b) => a + b, 0) / v.length : null;
  };
  const minutes = (win.end - win.rssWindow / 2 - (win.settleAt + win.rssWindow / 2)) / 60;
  const grow = (f) => {
    const a = mean(early, f);
    const b = mean(late, f);
    return a === null || b === null || !(minutes > 0) ? null : (b - a) / minutes;
  };
  const redis = {
    backlog,
    persistentKeys: keys,
    usedMaxMB: peak(samples, (s) => s.redisUsedMB),
    usedMBPerMinute: grow((s) => s.redisUsedMB),
    keysWithTtlPerMinute: grow((s) => s.redisKeysWithTtl),
    keysWithTtlAtEnd: peak(late, (s) => s.redisKeysWithTtl),
    ok: false,
    why: '',
  };
  const why = [];
  if (backlog.previousMaxMB === null || backlog.lastMaxMB === null) why.push(`too few readings of the bid log backlog in Redis (${beforeLast.length} samples before the last window, ${lastOnes.length} in it)`);
  else if (backlog.lastMaxMB > backlog.allowedMB) why.push(`the bid log in Redis peaked at ${backlog.lastMaxMB.toFixed(1)} MB in the last window, above ${backlog.allowedMB.toFixed(1)} MB (${backlog.previousMaxMB.toFixed(1)} MB before): the shipper does not keep up`);
  if (keys.previousMax === null || keys.lastMax === null) why.push('too few readings of the Redis keyspace');
  else if (keys.lastMax > keys.allowed) why.push(`keys without a TTL grew to ${keys.lastMax} in the last window, above ${keys.allowed} (${keys.previousMax} before)`);
  redis.why = why.join('; ');
  redis.ok = why.length === 0;

  const records = { sent: logs ? logs.sent : null, lost: logs ? logs.lost : null, ok: Boolean(logs && logs.complete), why: '' };
  if (!logs) records.why = 'the bid log was not counted';
  else if (!logs.complete) records.why = `${logs.lost} answered requests without their two records (${logs.requestRecords} request, ${logs.responseRecords} response records for ${logs.sent} requests)`;

  const failed = [];
  let exitBits = 0;
  for (const [name, v] of [['rss', rss], ['redis', redis], ['records', records]]) {
    if (!v.ok) {
      failed.push(name);
      exitBits += EXIT_BITS[name];
    }
  }
  // Open connections (reported, not judged): k6 adds connections when answers slow down.
  const connOf = (list) => list.map((s) => s.log && s.log.bidder_http_connections_open).filter((v) => typeof v === 'number');
  const allConns = connOf(samples);
  const connections = { atSettle: median(connOf(early)), atEnd: median(connOf(late)), max: allConns.length ? Math.max(...allConns) : null };
  // The plotted series, in seconds since k6's start.
  const series = samples.map((s) => ({ x: x(s), ...s }));
  return { criteria: c, windows: win, intervalS, samples: samples.length, rss, redis, records, connections, ok: failed.length === 0, failed, exitBits, series };
}

/** The soak's exit status: 0 when it passed, else 8 + the failed criteria's bits (rss 1, redis 2, records 4). */
function exitCode(v) {
  return v.ok ? 0 : EXIT_BASE + v.exitBits;
}

function f(x, d = 1) {
  return x === null || x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(d);
}

/** The report's soak section (Markdown lines). */
function section(soak, h) {
  if (!soak) return [];
  const w = soak.windows;
  const c = soak.criteria;
  const bl = soak.redis.backlog;
  const pk = soak.redis.persistentKeys;
  const lines = [
    '',
    `${h} Soak`,
    '',
    `${soak.samples} samples every ${soak.intervalS} s. ` +
      (w.scaled ? `This soak is shorter than 30 minutes: "minute 5" and "the last 5 minutes" are its first and last sixth. ` : '') +
      `Minute 5 is at ${f(w.settleAt, 0)} s and the last window starts at ${f(w.lastFrom, 0)} s (seconds since k6's start); ` +
      `RSS is the median of ${f(w.rssWindow, 0)} s of samples at minute 5 and at the end.`,
    '',
    '| criterion | goal | measured | met |',
    '|---|---|---|---|',
    `| worker RSS growth from minute 5 to the end (largest) | < ${soak.rss.limit * 100} % | ${soak.rss.maxGrowth === null ? '–' : `${f(soak.rss.maxGrowth * 100, 2)} %`} | ${soak.rss.ok ? 'yes' : '**no**'} |`,
    `| Redis bounded: bid log waiting in Redis, peak of the last window (the peak before) | ≤ ${f(bl.allowedMB)} MB (+${c.backlogGrowth * 100} % or +${c.backlogSlackMB} MB) | ${f(bl.lastMaxMB)} MB (${f(bl.previousMaxMB)} MB) | ${bl.lastMaxMB !== null && bl.lastMaxMB <= bl.allowedMB ? 'yes' : '**no**'} |`,
    `| Redis bounded: keys without a TTL, most in the last window (most before) | ≤ ${pk.allowed ?? '–'} | ${pk.lastMax ?? '–'} (${pk.previousMax ?? '–'}) | ${pk.lastMax !== null && pk.lastMax <= pk.allowed ? 'yes' : '**no**'} |`,
    `| answered requests without their two bid log records | 0 | ${soak.records.lost === null ? '–' : soak.records.lost} of ${soak.records.sent === null ? '–' : soak.records.sent} | ${soak.records.ok ? 'yes' : '**no**'} |`,
  ];
  lines.push(
    '',
    `Redis used_memory peaked at ${f(soak.redis.usedMaxMB)} MB and grew by ${f(soak.redis.usedMBPerMinute, 2)} MB a minute from minute 5 to the end; ` +
      `keys with a TTL (notice markers, kept BILL_DEDUPE_TTL_S, 7 days by default; impression markers and frequency counts, 2 days) grew by ${f(soak.redis.keysWithTtlPerMinute, 0)} a minute, ` +
      `${soak.redis.keysWithTtlAtEnd ?? '–'} at the end: they are bounded by their TTL, not by this run, and not judged here.`,
  );
  if (soak.rss.workers.length) {
    lines.push('', "| worker (PM2 id) | RSS at minute 5 | RSS at the end | growth | of it glibc malloc's main arena (`[heap]`; about 0 under jemalloc), minute 5 → end |", '|---|---|---|---|---|');
    for (const x of soak.rss.workers) {
      const h = x.heap && x.heap.atSettleMB !== null && x.heap.atEndMB !== null ? `${f(x.heap.atSettleMB)} → ${f(x.heap.atEndMB)} MB` : '–';
      lines.push(`| ${x.pmId} | ${f(x.atSettleMB)} MB | ${f(x.atEndMB)} MB | ${x.growth === null ? '–' : `${f(x.growth * 100, 2)} %`} | ${h} |`);
    }
  }
  const conns = soak.connections;
  if (conns && conns.max !== null) {
    lines.push('', `Open HTTP connections, all workers: ${f(conns.atSettle, 0)} at minute 5, ${f(conns.atEnd, 0)} at the end, ${f(conns.max, 0)} at most (k6 opens more when answers slow down; each keeps its socket and parser in a worker's memory).`);
  }
  lines.push('', soak.ok ? '**The soak passed.**' : `**The soak failed: ${[soak.rss, soak.redis, soak.records].filter((v) => !v.ok).map((v) => v.why).join('; ')}.**`);
  return lines;
}

const SOAK_PLOTS = [
  ['soak-rss.svg', 'Memory of the processes over the soak'],
  ['soak-redis.svg', 'Redis memory and the bid log in Redis over the soak'],
  ['soak-log.svg', 'Bid log waiting in the workers and on disk over the soak'],
];

/** Markdown image lines of the soak's plots. */
function plotLines() {
  return SOAK_PLOTS.flatMap(([file, title]) => ['', `![${title}](${file})`]);
}

/** The soak's SVG plots: {file: svg}. */
function plots(soak, note) {
  if (!soak || !soak.series.length) return {};
  const s = soak.series;
  const w = soak.windows;
  const vLines = [
    { x: w.settleAt, label: 'minute 5' },
    { x: w.lastFrom, label: 'last window' },
  ];
  const ids = [...new Set(s.flatMap((p) => p.workers.map((x) => x.pmId)))].sort((a, b) => a - b);
  const rssSeries = ids.map((id, i) => ({
    name: `worker ${id} RSS`,
    color: PALETTE[i % PALETTE.length],
    points: s.map((p) => [p.x, (p.workers.find((x) => x.pmId === id) || {}).rssMB ?? null]),
  }));
  ids.forEach((id, i) => {
    const points = s.map((p) => [p.x, (p.workers.find((x) => x.pmId === id) || {}).heapMB ?? null]);
    if (points.some((pt) => pt[1] !== null)) rssSeries.push({ name: `worker ${id} [heap]`, color: PALETTE[i % PALETTE.length], dash: true, points });
  });
  const external = s.map((p) => [p.x, typeof p.log.nodejs_external_memory_bytes === 'number' ? p.log.nodejs_external_memory_bytes / MB : null]);
  if (external.some((pt) => pt[1] !== null)) rssSeries.push({ name: 'external (largest worker)', color: '#e377c2', dash: true, points: external });
  rssSeries.push({ name: 'PM2 daemon RSS', color: '#7f7f7f', dash: true, points: s.map((p) => [p.x, p.daemonRssMB]) });
  if (s.some((p) => p.shipperRssMB !== null)) rssSeries.push({ name: 'shipper RSS', color: '#bcbd22', dash: true, points: s.map((p) => [p.x, p.shipperRssMB]) });
  const mb = (v) => (typeof v === 'number' && v >= 0 ? v / MB : null);
  const out = {};
  out['soak-rss.svg'] = lineChart({ title: SOAK_PLOTS[0][1], note, xLabel: 'seconds since start', yLabel: 'MB', series: rssSeries, vLines });
  out['soak-redis.svg'] = lineChart({
    title: SOAK_PLOTS[1][1],
    note,
    xLabel: 'seconds since start',
    yLabel: 'Redis used_memory, MB',
    // The bid log and its bound on the right axis: a few MB beside Redis's hundreds, and the bound
    // is the bid log's, not Redis's.
    y2Label: 'bid log in Redis, MB',
    series: [
      { name: 'Redis used_memory', color: '#d62728', points: s.map((p) => [p.x, p.redisUsedMB]) },
      { name: 'bid log waiting for the shipper', color: '#1f77b4', right: true, points: s.map((p) => [p.x, mb(p.log.bidder_log_backlog_bytes)]) },
    ],
    hLines: soak.redis.backlog.allowedMB !== null ? [{ y: soak.redis.backlog.allowedMB, label: `bid log bound ${soak.redis.backlog.allowedMB.toFixed(1)} MB`, color: '#1f77b4', right: true }] : [],
    vLines,
  });
  out['soak-log.svg'] = lineChart({
    title: SOAK_PLOTS[2][1],
    note,
    xLabel: 'seconds since start',
    yLabel: 'MB',
    series: [
      { name: 'queued (raw)', color: '#1f77b4', points: s.map((p) => [p.x, mb(p.log.bidder_log_bytes_queued)]) },
      { name: 'compressed, waiting for Redis', color: '#ff7f0e', points: s.map((p) => [p.x, mb(p.log.bidder_log_bytes_pending)]) },
      { name: 'spilled to disk', color: '#d62728', points: s.map((p) => [p.x, mb(p.log.bidder_log_spill_bytes)]) },
    ],
    vLines,
  });
  return out;
}

module.exports = { SoakSampler, verdict, exitCode, section, plots, plotLines, windows, scrape, CRITERIA, EXIT_BITS, EXIT_BASE, SOAK_PLOTS };
