'use strict';
// Time-interleaved A/B of server processes over HTTP: CPU per request of each, measured from
// /proc/<pid>/stat (Linux), while a closed loop of keep-alive POSTs (the sample requests of
// test/fixtures/samples) is aimed at one process at a time. Each round gives every target one phase,
// in a new random order, so that slow drifts of the machine (hypervisor steal, other work) and
// periodic work of the servers (a 10 s log flush) fall on all targets alike.
//
//   node tools/bench/ab-http.js [--phase 3] [--rounds 20] [--conc 8] [--warmup 2] <pid>=<url> <pid>=<url> ...
//
// <url> is the bid endpoint (http://127.0.0.1:8091/openrtb2/bid); <pid> the process that serves it
// (one process, not a PM2 cluster). Pin the servers to one core and this client to another
// (`taskset -c 0 node dist/main.js`, `taskset -c 1 node tools/bench/ab-http.js …`) for steadier figures.
// --warmup is per target (each gets its own, in turn, before the first round). Prints, per target,
// the mean CPU µs per request over all rounds, the share of 200 answers (compare targets only when
// it is alike: a no-bid costs far less than a bid), the per-round figures, and the median of the
// per-round ratios to the first target. bench/README.md has what it was used for.
const fs = require('node:fs');
const http = require('node:http');
const { sampleBodies } = require('../lib/sample-bodies');
const { readCommandLine, usageError } = require('../../scripts/lib/cli');

const USAGE = `usage: node tools/bench/ab-http.js [--phase 3] [--rounds 20] [--conc 8] [--warmup 2] <pid>=<url> ...
  --phase s    seconds each target gets per round
  --rounds n   rounds (the targets in a shuffled order each)
  --conc n     requests in flight
  --warmup s   seconds of load per target before the first round`;

function parseArgs(argv) {
  const number = { type: 'string' };
  const { values, positionals } = readCommandLine({ name: 'ab-http', usage: USAGE, args: argv, options: { phase: number, rounds: number, conc: number, warmup: number }, allowPositionals: true });
  const o = { phase: 3, rounds: 20, conc: 8, warmup: 2, targets: [] };
  for (const k of ['phase', 'rounds', 'conc', 'warmup']) {
    if (values[k] === undefined) continue;
    const v = Number(values[k]);
    if (values[k] === '' || !Number.isFinite(v) || v < 0) usageError('ab-http', USAGE, `--${k} ${values[k]}: expected a number`);
    o[k] = v;
  }
  for (const a of positionals) {
    if (!/^\d+=http:\/\//.test(a)) usageError('ab-http', USAGE, `${a}: expected <pid>=<url>`);
    const eq = a.indexOf('=');
    o.targets.push({ pid: Number(a.slice(0, eq)), url: new URL(a.slice(eq + 1)) });
  }
  if (o.targets.length === 0) usageError('ab-http', USAGE, 'no <pid>=<url> target given');
  if (o.rounds < 1 || o.conc < 1) usageError('ab-http', USAGE, '--rounds and --conc must be at least 1');
  return o;
}

/** utime + stime of a process in seconds (USER_HZ ticks of 1/100 s; all its threads: GC helpers and the thread pool included). */
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const bodies = sampleBodies();
  for (const t of o.targets) {
    cpuSeconds(t.pid); // fails early on a wrong pid
    t.bids = 0;
    t.nobids = 0;
  }
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.conc });
  let current = 0;
  let done = 0;
  let failed = 0;
  let seq = 0;
  let stop = false;
  const one = () => {
    if (stop) return;
    const t = o.targets[current];
    const n = seq++;
    const body = bodies[n % bodies.length].replace('__ID__', `ab${process.pid}-${n}`);
    const req = http.request(
      { host: t.url.hostname, port: t.url.port, path: t.url.pathname, method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        if (res.statusCode === 200) t.bids++;
        else if (res.statusCode === 204) t.nobids++;
        else failed++;
        res.resume();
        res.on('end', () => {
          done++;
          one();
        });
      },
    );
    req.on('error', () => {
      failed++;
      setTimeout(one, 10);
    });
    req.end(body);
  };
  for (let i = 0; i < o.conc; i++) one();
  // Every target gets its own warm-up (JIT), not only the first one the loop starts on: a cold
  // target's first phase read 25-30 µs per request higher than its later ones.
  for (let j = 0; j < o.targets.length; j++) {
    current = j;
    await sleep(o.warmup * 1000);
  }
  const rows = o.targets.map(() => ({ requests: 0, cpu: 0, rounds: [] }));
  for (let r = 0; r < o.rounds; r++) {
    const order = o.targets.map((_, i) => i);
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [order[i], order[j]] = [order[j], order[i]];
    }
    for (const j of order) {
      current = j;
      await sleep(300); // requests in flight to the previous target finish
      done = 0;
      const c0 = cpuSeconds(o.targets[j].pid);
      await sleep(o.phase * 1000);
      const cpu = cpuSeconds(o.targets[j].pid) - c0;
      const n = done;
      rows[j].requests += n;
      rows[j].cpu += cpu;
      rows[j].rounds.push(n > 0 ? (cpu / n) * 1e6 : NaN);
    }
  }
  stop = true;
  agent.destroy();
  o.targets.forEach((t, j) => {
    const row = rows[j];
    const mean = row.requests > 0 ? (row.cpu / row.requests) * 1e6 : NaN;
    const ratio = median(row.rounds.map((v, r) => v / rows[0].rounds[r]));
    console.log(
      `${t.url.href.padEnd(40)} ${mean.toFixed(1).padStart(7)} µs/req  ratio to the first ${ratio.toFixed(3)}  n=${row.requests}  ` +
        `bids ${((100 * t.bids) / Math.max(1, t.bids + t.nobids)).toFixed(1)} %  rounds: ${row.rounds.map((v) => v.toFixed(0)).join(' ')}`,
    );
  });
  if (failed > 0) console.log(`${failed} requests failed or were answered with neither 200 nor 204`);
}

main().catch((e) => {
  process.stderr.write(`ab-http: ${e.message}\n`);
  process.exit(1);
});
