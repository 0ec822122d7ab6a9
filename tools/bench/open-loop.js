'use strict';
// Open-loop probe of one bidder process: bid requests sent at a fixed rate (whether or not the
// earlier ones were answered) over up to 256 keep-alive connections, as exchanges send them. Prints,
// for the answered (200) requests, the latency from the moment each was due and from the moment its
// last byte was written; the shed share; how late this client itself sent (its own CPU starvation);
// and, from /proc/<pid>/schedstat of the target, its CPU share and how long it waited on the run
// queue for a CPU (Linux), as a share of the wall time.
//
//   node tools/bench/open-loop.js [--rate 600] [--seconds 6] [--tmax 100] [--pid <target pid>] <bid url>
//
// bench/README.md (the HTTP layer) has what it was used for.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { readCommandLine, usageError } = require('../../scripts/lib/cli');

const USAGE = `usage: node tools/bench/open-loop.js [--rate 600] [--seconds 6] [--tmax 100] [--pid <target pid>] <bid url>`;
const { values: o, positionals } = readCommandLine({
  name: 'open-loop',
  usage: USAGE,
  options: { rate: { type: 'string', default: '600' }, seconds: { type: 'string', default: '6' }, tmax: { type: 'string', default: '100' }, pid: { type: 'string', default: '0' } },
  allowPositionals: true,
  maxPositionals: 1,
});
if (positionals.length !== 1) usageError('open-loop', USAGE, 'which bid url?');
const url = new URL(positionals[0]);
const rate = Number(o.rate);
const seconds = Number(o.seconds);
const pid = Number(o.pid);
const sample = path.join(__dirname, '..', '..', 'test', 'fixtures', 'samples', 'iab-openrtb2.x', 'bid-request_6.2.1_simple-banner.json');
const base = { ...JSON.parse(fs.readFileSync(sample, 'utf8')), tmax: Number(o.tmax) };
/** [cpu ns, run-queue wait ns] of the target, or zeros. */
const sched = () => (pid > 0 ? fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ').slice(0, 2).map(Number) : [0, 0]);

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
const fromDue = [];
const fromWrite = [];
const late = [];
let sent = 0;
let shed = 0;
let nobid = 0;
let errors = 0;

function send(due) {
  sent++;
  const body = JSON.stringify({ ...base, id: `open-${process.pid}-${sent}` });
  let written = 0;
  const req = http.request(
    { host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
    (res) => {
      res.resume();
      res.on('end', () => {
        const now = performance.now();
        if (res.statusCode === 200) {
          fromDue.push(now - due);
          fromWrite.push(now - written);
        } else if (res.headers['x-bidder-shed'] === '1') shed++;
        else if (res.statusCode === 204) nobid++;
        else errors++;
      });
    },
  );
  req.on('error', () => errors++);
  req.on('finish', () => {
    written = performance.now();
    late.push(written - due);
  });
  req.end(body);
}

const q = (s, p) => (s.length === 0 ? NaN : +s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1));
const t0 = performance.now();
const s0 = sched();
const end = t0 + seconds * 1000;
let next = t0;
function tick() {
  const now = performance.now();
  for (; next <= now && next < end; next += 1000 / rate) send(next);
  if (next < end) setTimeout(tick, 1);
  else setTimeout(report, 1500);
}
function report() {
  const wall = (performance.now() - t0) * 1e6;
  const s1 = sched();
  for (const a of [fromDue, fromWrite, late]) a.sort((x, y) => x - y);
  console.log(
    JSON.stringify({
      rate,
      sent,
      answered: fromDue.length,
      shedPct: +((100 * shed) / sent).toFixed(1),
      nobid,
      errors,
      answeredMs: { p50: q(fromDue, 0.5), p99: q(fromDue, 0.99), p999: q(fromDue, 0.999) },
      fromWriteMs: { p50: q(fromWrite, 0.5), p99: q(fromWrite, 0.99), p999: q(fromWrite, 0.999) },
      clientLateMs: { p99: q(late, 0.99), p999: q(late, 0.999) },
      ...(pid > 0 ? { targetCpuPct: +((100 * (s1[0] - s0[0])) / wall).toFixed(1), targetRunQueuePct: +((100 * (s1[1] - s0[1])) / wall).toFixed(1) } : {}),
    }),
  );
  agent.destroy();
}
tick();
