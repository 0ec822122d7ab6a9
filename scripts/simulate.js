'use strict';
// `npm run simulate [-- --market <name,…>|all|short] [--days 1] [--requests 100000] [--seed 1] [--workers 1]
//   [--sync-s 10] [--curve uniform|traffic] [--strategies shaded,value,oracle] [--out .run/simulate]`: runs the market simulator (tools/sim/) on a private Redis, for
// each market the bidder as configured (shaded), bidding the value and the oracle, then prints the
// figures and writes report.html (SVG charts) and results.json into --out. `--help` prints the usage.
// `npm run simulate -- --http <url|start> --market <short market> [--rate 35] [--seconds 120] [--seed 1] [--workers 2]`:
// a short market against a running bidder over HTTP in real time (tools/sim/http-market.ts); `start`
// starts one for the run (private Redis, PM2 cluster in a temporary PM2_HOME) and stops it after.
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { lineChart, barChart } = require('../tools/lib/charts');
const { startRedis } = require('./lib/redis');

const root = path.resolve(__dirname, '..');

const USAGE = `usage: npm run simulate -- [options]
  --market <names>      comma-separated markets, or all (narrow,wide,crowded), or short (the markets of 150 s at
                        35 auctions/s: lognormal,shift,floor-tied,wins-only,priced-loss,late-bills); default all.
                        Day-long: narrow, wide, crowded, second. Short: lognormal, shift, floor-tied, wins-only,
                        priced-loss, late-bills
  --days <n>            virtual days of a day-long market (default 1)
  --requests <n>        requests a virtual day (default 100000)
  --seed <n>            the seed: a seed replays a run exactly (default 1)
  --workers <n>         app instances sharing one Redis (default 1); with --http start: PM2 workers (default 2)
  --sync-s <n>          in process: the workers' SHADING_SYNC_S, seconds between two shares of what shading learned (default 10)
  --curve <c>           uniform or traffic: every even campaign's pacing curve
  --strategies <list>   shaded,value,oracle (default all three; the targets are checked with all three)
  --out <dir>           report.html and results.json (default .run/simulate)
  --http <url|start>    a short market against the bidder at <url> over HTTP, in real time (its campaign file must be
                        the short markets' and its exchanges file must admit this machine); start: start a bidder for
                        the run (a private Redis, --workers PM2 workers, default 2, in a temporary PM2_HOME) and stop it
                        after. Prints surplus and wins against the oracle's on the same auctions; http-<market>-<seed>.json
                        in --out
  --rate <n>            with --http: auctions a second (default 35)
  --seconds <n>         with --http: seconds of auctions (default 120)
  --help                this text`;

let values;
try {
  ({ values } = parseArgs({
    strict: true,
    options: {
      market: { type: 'string', default: 'all' },
      days: { type: 'string', default: '1' },
      requests: { type: 'string', default: '100000' },
      seed: { type: 'string', default: '1' },
      workers: { type: 'string' },
      'sync-s': { type: 'string' },
      http: { type: 'string' },
      rate: { type: 'string', default: '35' },
      seconds: { type: 'string', default: '120' },
      curve: { type: 'string' },
      strategies: { type: 'string', default: 'shaded,value,oracle' },
      out: { type: 'string', default: path.join('.run', 'simulate') },
      help: { type: 'boolean', default: false },
    },
  }));
} catch (e) {
  console.error(`simulate: ${e.message}\n${USAGE}`);
  process.exit(2);
}
if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
function arg(name) {
  return values[name];
}
function positiveInt(name, def) {
  const n = Number(values[name] ?? def);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`simulate: --${name} ${values[name]}: expected a whole number of at least 1\n${USAGE}`);
    process.exit(2);
  }
  return n;
}

const pct = (x) => `${(100 * x).toFixed(1)} %`;
const usd = (x) => x.toFixed(2);

function esc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The targets checked on one market's three runs. */
function verdicts(runs, name) {
  const shaded = runs.find((r) => r.strategy === 'shaded');
  const value = runs.find((r) => r.strategy === 'value');
  const oracle = runs.find((r) => r.strategy === 'oracle');
  const out = [];
  if (SHORT.includes(name)) {
    const floor = name === 'wins-only' ? 0.8 : 0.9;
    out.push([`surplus >= ${100 * floor} % of the oracle\u2019s`, pct(shaded.surplus / oracle.surplus), shaded.surplus >= floor * oracle.surplus]);
    out.push(['wins within 20 % of the oracle\u2019s', `${shaded.wins} against ${oracle.wins} (${pct(shaded.wins / oracle.wins - 1)})`, Math.abs(shaded.wins / oracle.wins - 1) <= 0.2]);
    out.push(['notices answered other than 204', String(shaded.noticeErrors), shaded.noticeErrors === 0]);
    if (name === 'shift') {
      // The shift is at half the run: the median bid of the seconds 55-65 after it against the oracle's.
      const at = Math.floor(shaded.medianBidBySecond.length / 2);
      const mine = median(shaded.medianBidBySecond.slice(at + 55, at + 66));
      const best = median(oracle.medianBidBySecond.slice(at + 55, at + 66));
      out.push(['median bid 55-65 s after the shift within 5 % of the oracle\u2019s', `${mine.toFixed(3)} against ${best.toFixed(3)} (${pct(mine / best - 1)})`, Math.abs(mine / best - 1) <= 0.05]);
      const after = (r) => r.surplusBySecond.slice(at).reduce((a, x) => a + (x ?? 0), 0);
      out.push(['surplus after the shift >= 90 % of the oracle\u2019s', pct(after(shaded) / after(oracle)), after(shaded) >= 0.9 * after(oracle)]);
    }
    return out;
  }
  for (const c of shaded.campaigns) {
    if (c.pacing !== 'even') continue;
    out.push([`${c.id}: hourly spend within 10 % of the curve after each day's first hour`, `max error ${pct(c.maxHourlyError)}`, c.maxHourlyError <= 0.1]);
    for (const d of c.days) out.push([`${c.id}: day ${d.day}${d.partial ? ' (first seen mid-day: prorated budget)' : ''} spend 95-101 % of budget`, pct(d.spend / d.budget), d.spend >= 0.95 * d.budget && d.spend <= 1.01 * d.budget && d.spend <= c.daily + 1e-9]);
    out.push([`${c.id}: never over the daily budget (market and Redis)`, c.overBudget ? 'over' : 'never over', !c.overBudget]);
  }
  if (oracle.surplus > 0) {
    out.push(['surplus >= 80 % of the oracle\u2019s', pct(shaded.surplus / oracle.surplus), shaded.surplus >= 0.8 * oracle.surplus]);
    out.push(['surplus >= 1.5x bidding the value', value.surplus > 0 ? `${(shaded.surplus / value.surplus).toFixed(2)}x` : `value's surplus ${usd(value.surplus)}`, shaded.surplus >= 1.5 * value.surplus]);
    out.push(['wins within 20 % of the oracle\u2019s', pct(shaded.wins / oracle.wins - 1), Math.abs(shaded.wins / oracle.wins - 1) <= 0.2]);
  }
  return out;
}

/** Per day of the run (the shaded run's campaigns, each in its zone; surplus per UTC day against the oracle's). */
function perDay(runs) {
  const shaded = runs.find((r) => r.strategy === 'shaded');
  const oracle = runs.find((r) => r.strategy === 'oracle');
  const value = runs.find((r) => r.strategy === 'value');
  const byDay = (r, d) => (r === undefined ? NaN : r.surplusByHour.slice(24 * d, 24 * d + 24).reduce((a, x) => a + x, 0));
  const lines = ['| campaign (curve) | day | spend / daily budget | worst hour against its curve | spend off traffic |', '|---|---|---:|---:|---:|'];
  for (const c of shaded.campaigns) {
    for (const d of c.days) {
      const err = c.pacing === 'even' ? pct(d.maxHourlyError) : '-';
      lines.push(`| ${c.id} (${c.pacing === 'even' ? c.curve : 'asap'}) | ${d.day}${d.partial ? ' (first seen mid-day: prorated budget)' : ''} | ${pct(d.spend / d.budget)} | ${err} | ${pct(d.trafficDistance)} |`);
    }
  }
  lines.push('', '| UTC day | surplus shaded USD | oracle USD | shaded / oracle | value USD |', '|---|---:|---:|---:|---:|');
  const days = Math.floor(shaded.surplusByHour.length / 24);
  for (let d = 0; d < days; d++) {
    const s = byDay(shaded, d);
    const o = byDay(oracle, d);
    lines.push(`| ${d + 1} | ${usd(s)} | ${usd(o)} | ${o > 0 ? pct(s / o) : '-'} | ${usd(byDay(value, d))} |`);
    if (oracle === undefined && value === undefined) lines.pop();
  }
  return lines;
}

const SHORT = ['lognormal', 'shift', 'floor-tied', 'wins-only', 'priced-loss', 'late-bills'];
const median = (xs) => {
  const v = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  return v.length === 0 ? NaN : v[v.length >> 1];
};

function report(all, opts) {
  const parts = [`<!doctype html><meta charset="utf-8"><title>Market simulator</title><body style="font-family:Helvetica,Arial,sans-serif;max-width:900px;margin:auto">`];
  parts.push(`<h1>Market simulator</h1><p>${esc(`seed ${opts.seed}, ${opts.days} day(s), ${opts.requests} requests/day, ${opts.workers} worker(s), virtual time from 2026-01-05 00:00 UTC`)}</p>`);
  for (const [market, runs] of all) {
    parts.push(`<h2>${esc(runs[0].market)}</h2><table border="1" cellpadding="4" style="border-collapse:collapse"><tr><th>strategy</th><th>bids</th><th>wins</th><th>win rate</th><th>paid USD</th><th>avg paid CPM</th><th>avg value CPM</th><th>surplus USD</th></tr>`);
    for (const r of runs) {
      const value = r.campaigns.reduce((s, c) => s + c.valueWon, 0);
      parts.push(`<tr><td>${r.strategy}</td><td>${r.bids}</td><td>${r.wins}</td><td>${pct(r.wins / Math.max(1, r.bids))}</td><td>${usd(r.paid)}</td><td>${usd((1000 * r.paid) / Math.max(1, r.wins))}</td><td>${usd((1000 * value) / Math.max(1, r.wins))}</td><td>${usd(r.surplus)}</td></tr>`);
    }
    parts.push('</table><ul>');
    if (runs.length === 3) for (const [what, got, ok] of verdicts(runs, market)) parts.push(`<li>${ok ? '\u2714' : '\u2716'} ${esc(what)}: ${esc(got)}</li>`);
    parts.push('</ul>');
    const shaded = runs.find((r) => r.strategy === 'shaded');
    for (const c of shaded.campaigns) {
      let cs = 0;
      let ct = 0;
      const spend = c.hourly.spend.map((v, h) => [h + 1, (cs += v)]);
      const target = c.hourly.target.map((v, h) => [h + 1, (ct += v)]);
      parts.push(
        lineChart({
          title: `${c.id} (${c.pacing}, ${c.daily} USD/day): cumulative spend`,
          xLabel: 'hour of the run (UTC)',
          yLabel: 'USD',
          series: [{ name: 'spend (shaded)', points: spend }, ...(c.pacing === 'even' ? [{ name: 'target curve', points: target, dash: true }] : [])],
          width: 860,
          height: 320,
        }),
      );
    }
    parts.push(
      barChart({
        title: 'surplus (value − paid), USD',
        yLabel: 'USD',
        groups: runs.map((r) => r.strategy),
        series: [{ name: 'surplus', values: runs.map((r) => +r.surplus.toFixed(3)) }],
        width: 860,
        height: 300,
      }),
    );
    void market;
  }
  parts.push('</body>');
  return parts.join('\n');
}

async function main() {
  // The simulator is a tool (tools/sim/), not part of the product's build (dist/): compiled with the tests and tools.
  execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: root, stdio: 'inherit' });
  const { simulate } = require(path.join(root, '.test-build', 'tools', 'sim', 'simulator.js'));
  const { MARKETS } = require(path.join(root, '.test-build', 'tools', 'sim', 'market.js'));
  if (arg('http') !== undefined) return http(MARKETS);
  const which = arg('market');
  const names = which === 'all' ? ['narrow', 'wide', 'crowded'] : which === 'short' ? SHORT : which.split(',');
  const fail = (m) => {
    console.error(`simulate: ${m}\n${USAGE}`);
    process.exit(2);
  };
  for (const n of names) if (!MARKETS[n]) fail(`unknown market ${n} (known: ${Object.keys(MARKETS).join(', ')})`);
  const curve = arg('curve');
  if (curve !== undefined && curve !== 'uniform' && curve !== 'traffic') fail(`--curve: uniform or traffic, not ${curve}`);
  const strategies = arg('strategies').split(',');
  for (const s of strategies) if (!['shaded', 'value', 'oracle'].includes(s)) fail(`--strategies: shaded, value or oracle, not ${s}`);
  const opts = { days: positiveInt('days'), requests: positiveInt('requests'), seed: positiveInt('seed'), workers: positiveInt('workers', '1'), syncS: arg('sync-s') === undefined ? undefined : positiveInt('sync-s'), curve };
  const out = path.resolve(root, arg('out'));
  fs.mkdirSync(out, { recursive: true });
  const redis = await startRedis({ dir: path.join(out, 'redis') });
  const all = new Map();
  try {
    for (const n of names) {
      const runs = [];
      for (const strategy of strategies) {
        const r = await simulate({ market: MARKETS[n], strategy, seed: opts.seed, days: opts.days, requestsPerDay: opts.requests, workers: opts.workers, syncS: opts.syncS, curve: opts.curve, redisUrl: redis.url, dir: path.join(out, 'scratch') });
        runs.push(r);
        console.log(`${n} ${strategy}: ${r.requests} requests, ${r.bids} bids, ${r.wins} wins, paid ${usd(r.paid)} USD, surplus ${usd(r.surplus)} USD, notice errors ${r.noticeErrors} (${(r.wallMs / 1000).toFixed(1)} s)`);
      }
      all.set(n, runs);
      if (runs.length === 3) for (const [what, got, ok] of verdicts(runs, n)) console.log(`  ${ok ? 'ok  ' : 'MISS'} ${what}: ${got}`);
      if (opts.days > 1) for (const line of perDay(runs)) console.log(`  ${line}`);
    }
  } finally {
    await redis.stop();
  }
  fs.writeFileSync(path.join(out, 'results.json'), JSON.stringify([...all.values()].flat(), null, 1));
  fs.writeFileSync(path.join(out, 'report.html'), report(all, opts));
  console.log(`report: ${path.join(out, 'report.html')}`);
}

/** --http: one short market against a bidder over HTTP. */
async function http(MARKETS) {
  const { driveHttp, startHttpBidder } = require(path.join(root, '.test-build', 'tools', 'sim', 'http-market.js'));
  const name = arg('market');
  if (!SHORT.includes(name)) {
    console.error(`simulate: --http runs one short market (${SHORT.join(', ')}), not ${name}\n${USAGE}`);
    process.exit(2);
  }
  const seed = positiveInt('seed', '1');
  const rate = positiveInt('rate', '35');
  const seconds = positiveInt('seconds', '120');
  const workers = positiveInt('workers', '2');
  const bidder = arg('http') === 'start' ? await startHttpBidder({ market: MARKETS[name], workers, root, log: (s) => console.log(s) }) : null;
  let r;
  try {
    const url = bidder?.url ?? arg('http');
    console.log(`${name}: ${rate} auctions/s for ${seconds} s against ${url}, seed ${seed}`);
    r = await driveHttp({ url, market: MARKETS[name], rate, seconds, seed });
  } finally {
    await bidder?.stop();
  }
  const out = path.resolve(root, arg('out'));
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, `http-${name}-${seed}.json`), JSON.stringify(r, null, 1));
  const floor = name === 'wins-only' ? 0.8 : 0.9;
  const line = (ok, what, got) => console.log(`  ${ok ? 'ok  ' : 'MISS'} ${what}: ${got}`);
  console.log(`${name} over HTTP: ${r.requests} requests, ${r.bids} bids, ${r.noBids} no-bids, ${r.bidErrors} bid errors, ${r.wins} wins, paid ${usd(r.paid)} USD, surplus ${r.surplus.toFixed(3)} USD; the oracle ${r.oracle.wins} wins, surplus ${r.oracle.surplus.toFixed(3)} USD; bid latency p50 ${r.latencyMs.p50.toFixed(1)} ms, p99 ${r.latencyMs.p99.toFixed(1)} ms (${(r.wallMs / 1000).toFixed(1)} s)`);
  console.log(`  notices: ${JSON.stringify(r.notices)}`);
  line(r.surplus >= floor * r.oracle.surplus, `surplus >= ${100 * floor} % of the oracle\u2019s`, pct(r.surplus / r.oracle.surplus));
  line(Math.abs(r.wins / r.oracle.wins - 1) <= 0.2, 'wins within 20 % of the oracle\u2019s', `${r.wins} against ${r.oracle.wins} (${pct(r.wins / r.oracle.wins - 1)})`);
  line(r.noticeErrors === 0 && r.bidErrors === 0, 'bid requests and notices answered 2xx', `${r.bidErrors} bid errors, ${r.noticeErrors} notice errors`);
  if (r.shift !== undefined) {
    const s = r.shift;
    console.log(`  shift at ${s.atS} s: optimum ${s.optimumBefore.toFixed(3)} -> ${s.optimum.toFixed(3)}; median bid per 10 s after it: ${s.medianBy10s.map((x) => x.toFixed(3)).join(' ')}`);
    line(s.convergedS !== null && s.convergedS < 60, 'median bid within 5 % of the new optimum within 60 s (and after)', s.convergedS === null ? 'never' : `from ${s.convergedS}-${s.convergedS + 10} s`);
    line(s.surplusAfter >= 0.9 * s.oracleSurplusAfter, 'surplus after the shift >= 90 % of the oracle\u2019s', `${pct(s.surplusAfter / s.oracleSurplusAfter)} (wins ${s.winsAfter} against ${s.oracleWinsAfter})`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
