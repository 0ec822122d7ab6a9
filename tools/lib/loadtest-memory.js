'use strict';
// The load test's memory figures: the resident memory of the whole host (the PM2 daemon, every
// worker and the other processes the daemon runs, summed at each sample) over a phase, and each
// worker's garbage collections from its own /metrics (prom-client's default
// `nodejs_gc_duration_seconds`, fed by Node's PerformanceObserver 'gc' entries: no --trace-gc).
const http = require('node:http');

/**
 * Resident memory over [from, to] (ms) from samples [{t, rss: {pid: MB}}] taken every second:
 * the host's sum (`pids`: every process counted) at its peak and on average, and each process's
 * peak. A sample missing a pid (the process gone or not yet read) is not summed: it would read low.
 * Null when no complete sample falls in the window.
 */
function hostMemory(samples, pids, from, to) {
  const inWindow = samples.filter((s) => s.t >= from && s.t <= to && pids.every((p) => typeof s.rss[p] === 'number'));
  if (inWindow.length === 0) return null;
  const sums = inWindow.map((s) => pids.reduce((a, p) => a + s.rss[p], 0));
  const peakByPid = {};
  for (const p of pids) peakByPid[p] = Math.max(...inWindow.map((s) => s.rss[p]));
  return {
    samples: inWindow.length,
    peakMB: Math.max(...sums),
    avgMB: sums.reduce((a, b) => a + b, 0) / sums.length,
    peakByPid,
  };
}

/**
 * The GC figures of one worker's Prometheus text: per kind (major = mark-compact, minor =
 * scavenge, incremental = incremental marking steps) the count and seconds so far; plus the
 * worker's label and its V8 heap and external memory (bytes) when the text has them.
 */
function parseWorkerMetrics(text) {
  const out = { worker: null, gc: {}, heapSpaces: {}, heapTotal: null, heapUsed: null, external: null, rss: null };
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line === '') continue;
    const m = /^([a-z_]+)(?:\{([^}]*)\})? ([-+\d.eE]+|NaN)$/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[2] || '').matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    const v = Number(m[3]);
    if (labels.worker !== undefined && out.worker === null) out.worker = labels.worker;
    switch (m[1]) {
      case 'nodejs_gc_duration_seconds_count':
      case 'nodejs_gc_duration_seconds_sum': {
        const g = (out.gc[labels.kind] ??= { count: 0, seconds: 0 });
        if (m[1].endsWith('_count')) g.count = v;
        else g.seconds = v;
        break;
      }
      case 'nodejs_heap_space_size_total_bytes':
        out.heapSpaces[labels.space] = v;
        break;
      case 'nodejs_heap_size_total_bytes':
        out.heapTotal = v;
        break;
      case 'nodejs_heap_size_used_bytes':
        out.heapUsed = v;
        break;
      case 'nodejs_external_memory_bytes':
        out.external = v;
        break;
      case 'process_resident_memory_bytes':
        out.rss = v;
        break;
    }
  }
  return out;
}

/** GET url on a new connection (a PM2 cluster hands each new connection to the next worker): the body, or null. */
function getText(url, timeoutMs) {
  return new Promise((resolve) => {
    const req = http.get(url, { agent: false, timeout: timeoutMs }, (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        resolve(null);
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve(body));
      res.on('error', () => resolve(null));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(null));
  });
}

/**
 * Every worker's own /metrics on the admin port (`url`), asked on new connections until `workers`
 * different workers answered or `tries` ran out: {worker label: parsed metrics}. Each answer is the
 * worker's figures of that moment (not the machine view's, up to 5 s old).
 */
async function scrapeWorkers(url, workers, { tries = 4 * workers + 4, timeoutMs = 2000 } = {}) {
  const seen = {};
  for (let i = 0; i < tries && Object.keys(seen).length < workers; i++) {
    const text = await getText(url, timeoutMs);
    if (text === null) continue;
    const m = parseWorkerMetrics(text);
    if (m.worker !== null && !seen[m.worker]) seen[m.worker] = { t: Date.now(), ...m };
  }
  return seen;
}

/**
 * Per worker, between two scrapes: mark-compacts per minute and the main thread's time in them
 * (the atomic pauses) and in incremental marking steps, per minute and per mark-compact; scavenges
 * per minute. Concurrent marking on V8's helper thread is not in these figures.
 */
function gcRates(before, after) {
  const out = [];
  for (const [worker, b] of Object.entries(after)) {
    const a = before[worker];
    if (!a) continue;
    const minutes = (b.t - a.t) / 60_000;
    if (!(minutes > 0)) continue;
    const d = (kind, f) => ((b.gc[kind] || {})[f] || 0) - ((a.gc[kind] || {})[f] || 0);
    const markCompacts = d('major', 'count');
    const markMs = (d('major', 'seconds') + d('incremental', 'seconds')) * 1000;
    out.push({
      worker,
      minutes,
      markCompacts,
      markCompactsPerMinute: markCompacts / minutes,
      pauseMsPerMinute: (d('major', 'seconds') * 1000) / minutes,
      markingMsPerMinute: markMs / minutes,
      markingMsPerMarkCompact: markCompacts > 0 ? markMs / markCompacts : null,
      scavengesPerMinute: d('minor', 'count') / minutes,
      heap: b.heapTotal === null ? null : { totalMB: b.heapTotal / 2 ** 20, usedMB: b.heapUsed / 2 ** 20, externalMB: b.external === null ? null : b.external / 2 ** 20, spacesMB: Object.fromEntries(Object.entries(b.heapSpaces).map(([k, v]) => [k, v / 2 ** 20])) },
    });
  }
  return out.sort((x, y) => (x.worker < y.worker ? -1 : x.worker > y.worker ? 1 : 0));
}

module.exports = { hostMemory, parseWorkerMetrics, scrapeWorkers, gcRates };
