// `npm run report -- [--dir DIR] [--from T] [--to T | --day D] [--html out.html] [--json]`: what
// the bidder did, from the shipped Parquet partitions (docs/log-pipeline.md, "The report").
import { assertNodeVersion } from '../node-version';
assertNodeVersion();

import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { readArgs, UsageError } from '../cli-args';
import { ConfigError } from '../config/config';
import { buildReport, type Figures, type Report } from './report-data';
import { CAMPAIGN_HEAD, campaignCells, fmtInt, moneyText, ms, pct, renderHtml } from './report-html';
import { loadShipperConfig } from './shipper.config';

const USAGE = `Reports on the bid log shipped to Parquet (SHIP_DIR): per hour and per campaign, bid requests,
bids, fill rate, no-bid reasons, wins, win rate, impressions, clicks, CTR, billed spend, eCPM and
answer-time percentiles. Times are UTC.

usage: npm run report -- [options]

options:
  --dir DIR        the partitions (default $SHIP_DIR, else $BIDDER_RUN_DIR/bidlog, else ./.run/bidlog)
  --from T         from this time on (inclusive)
  --to T           until this time (exclusive; a bare date means the end of that day)
  --day D          one whole day: --from D --to D
  --html FILE      also write the report as one self-contained HTML page (tables and SVG charts)
  --json           print the report as JSON instead of text
  --help           this text

T is YYYY-MM-DD, YYYY-MM-DDTHH[:MM[:SS]][Z], today, yesterday, or relative: -30m, -6h, -2d.

examples:
  npm run report -- --day yesterday
  npm run report -- --from -6h --html /tmp/bidder.html
`;

const ARGS = {
  dir: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  day: { type: 'string' },
  html: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export interface ReportArgs {
  dir: string;
  from: Date | null;
  to: Date | null;
  html: string | null;
  json: boolean;
  help: boolean;
}

const DAY_MS = 86_400_000;

/** Parses a time bound; `end` makes a bare day mean the end of that day (for --to). */
export function parseTime(s: string, end: boolean, now: number = Date.now()): Date {
  const rel = /^-(\d+)([mhd])$/.exec(s);
  if (rel) return new Date(now - Number(rel[1]) * { m: 60_000, h: 3_600_000, d: DAY_MS }[rel[2] as 'm' | 'h' | 'd']);
  const today = Math.floor(now / DAY_MS) * DAY_MS;
  if (s === 'today') return new Date(today + (end ? DAY_MS : 0));
  if (s === 'yesterday') return new Date(today - DAY_MS + (end ? DAY_MS : 0));
  if (/^\d{4}-\d{2}-\d{2}$/.test(s)) {
    const t = Date.parse(`${s}T00:00:00Z`);
    if (Number.isFinite(t)) return new Date(t + (end ? DAY_MS : 0));
  }
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2})(?::(\d{2})(?::(\d{2}(?:\.\d+)?))?)?Z?$/.exec(s);
  if (m) {
    const t = Date.parse(`${m[1]}T${m[2]}:${m[3] ?? '00'}:${m[4] ?? '00'}Z`);
    if (Number.isFinite(t)) return new Date(t);
  }
  throw new UsageError(`${JSON.stringify(s)}: expected YYYY-MM-DD, YYYY-MM-DDTHH[:MM[:SS]], today, yesterday or -N(m|h|d)`);
}

export function parseArgs(argv: string[], env: NodeJS.ProcessEnv = process.env, now: number = Date.now()): ReportArgs {
  let dir: string;
  try {
    dir = loadShipperConfig(env).dir;
    // Where `npm start` puts the shipper's files when BIDDER_RUN_DIR moves its run directory.
    if ((env.SHIP_DIR ?? '').trim() === '' && (env.BIDDER_RUN_DIR ?? '').trim() !== '') dir = path.resolve(env.BIDDER_RUN_DIR as string, 'bidlog');
  } catch (e) {
    if (e instanceof ConfigError) throw new UsageError(e.message);
    throw e;
  }
  const a: ReportArgs = { dir, from: null, to: null, html: null, json: false, help: false };
  const { options, positionals } = readArgs(argv, ARGS);
  // `npm run report -- help` reads as --help; any other word is a mistake.
  for (const p of positionals) {
    if (p !== 'help') throw new UsageError(`unknown option ${p}`);
    a.help = true;
  }
  for (const { name, value: v } of options) {
    switch (name) {
      case 'dir':
        a.dir = path.resolve(v);
        break;
      case 'from':
        a.from = parseTime(v, false, now);
        break;
      case 'to':
        a.to = parseTime(v, true, now);
        break;
      case 'day':
        a.from = parseTime(v, false, now);
        a.to = parseTime(v, true, now);
        break;
      case 'html':
        a.html = path.resolve(v);
        break;
      case 'json':
        a.json = true;
        break;
      case 'help':
        a.help = true;
        break;
    }
  }
  if (a.from && a.to && a.from.getTime() >= a.to.getTime()) throw new UsageError('--from must be before --to');
  return a;
}

/** Plain-text tables, columns aligned. */
function textTable(head: string[], body: string[][]): string {
  if (body.length === 0) return '  (none)\n';
  const w = head.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (r: string[]): string => `  ${r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ')}`.trimEnd();
  return `${[line(head), line(w.map((n) => '-'.repeat(n))), ...body.map(line)].join('\n')}\n`;
}

function figureCells(f: Figures): string[] {
  return [
    fmtInt(f.requests),
    pct(f.fillRate),
    fmtInt(f.noBids),
    fmtInt(f.bids),
    fmtInt(f.wins),
    pct(f.winRate),
    fmtInt(f.impressions),
    fmtInt(f.clicks),
    pct(f.ctr),
    moneyText(f.money, 'spend', false),
    moneyText(f.money, 'ecpm', false),
    ms(f.answerMs.p50),
    ms(f.answerMs.p99),
  ];
}

const FIGURE_HEAD = ['requests', 'fill', 'no-bid', 'bids', 'wins', 'win rate', 'imps', 'clicks', 'CTR', 'spend', 'eCPM', 'p50 ms', 'p99 ms'];

export function renderText(r: Report): string {
  const out: string[] = [];
  out.push(`Bid log report: ${r.dir}`);
  out.push(`window: ${r.from ?? 'first record'} to ${r.to ?? 'last record'} (UTC); ${r.files} files, ${fmtInt(r.records)} records${r.first ? `, from ${r.first} to ${r.last ?? ''}` : ''}`);
  if (r.files === 0) {
    out.push('no shipped records here (is the shipper running? see docs/log-pipeline.md)');
    return `${out.join('\n')}\n`;
  }
  out.push('');
  out.push('Total');
  out.push(textTable(['', ...FIGURE_HEAD], [['all', ...figureCells(r.totals)]]));
  out.push(`  answer time (ms, ${fmtInt(r.totals.answerMs.count)} responses): p50 ${ms(r.totals.answerMs.p50)}, p90 ${ms(r.totals.answerMs.p90)}, p99 ${ms(r.totals.answerMs.p99)}, max ${ms(r.totals.answerMs.max)}`);
  out.push(`  billed notices counted: ${fmtInt(r.totals.billed)}; 400 answers: ${fmtInt(r.totals.errors)}; losses: ${fmtInt(r.totals.losses)}`);
  out.push(`  wins, losses, impressions and clicks count once per bid: ${fmtInt(r.repeats)} repeated notice records left out`);
  out.push(`  clicks without an impression (left out of clicks and CTR; a fraud signal): ${fmtInt(r.totals.clicksWithoutImpression)}`);
  out.push('');
  out.push('Per hour (UTC)');
  out.push(textTable(['hour', ...FIGURE_HEAD], r.hours.map((h) => [h.hour, ...figureCells(h)])));
  out.push('Per campaign');
  out.push(
    textTable(
      CAMPAIGN_HEAD,
      r.campaigns.map((c) => campaignCells(c, false)),
    ),
  );
  out.push('No-bid and error reasons');
  out.push(textTable(['reason', 'status', 'responses', 'of requests'], r.reasons.map((x) => [x.reason, String(x.status), fmtInt(x.count), pct(r.totals.requests > 0 ? x.count / r.totals.requests : null)])));
  out.push('Records by type');
  out.push(textTable(['type', 'records'], Object.entries(r.types).map(([k, v]) => [k, fmtInt(v)])));
  out.push('Spend = billed clearing prices / 1000 in the bid currency (each billing counted once); eCPM = spend / billed x 1000.');
  return `${out.join('\n')}\n`;
}

async function main(): Promise<void> {
  let args: ReportArgs;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`report: ${e.message}\n\n${USAGE}`);
      process.exit(2);
    }
    throw e;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return;
  }
  const report = await buildReport({ dir: args.dir, from: args.from, to: args.to });
  if (args.html) {
    const tmp = `${args.html}.tmp-${process.pid}`;
    await fsp.writeFile(tmp, renderHtml(report));
    await fsp.rename(tmp, args.html);
  }
  process.stdout.write(args.json ? `${JSON.stringify(report, null, 2)}\n` : renderText(report));
  if (args.html && !args.json) process.stdout.write(`HTML report: ${args.html}\n`);
}

if (require.main === module) {
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  main().catch((e: unknown) => {
    process.stderr.write(`report: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  });
}
