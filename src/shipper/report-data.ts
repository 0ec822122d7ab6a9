import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { sqlString } from '../bidlog/schema';

/**
 * The report's figures, computed by DuckDB over the shipped partitions (docs/log-pipeline.md,
 * "The report"). Definitions:
 * - bid requests: `request` records; answered with a bid: `response` records with status 200;
 *   fill rate = answered with a bid / bid requests; no-bids: status 204 (reason counted), errors: 400;
 * - bids: the bids inside the 200 responses (a response may hold one per imp);
 * - wins / losses / impressions / clicks: `win` / `loss` / `imp` / `click` records, each counted
 *   once per bid (its first record; a replayed notice URL is logged again, with counted = false,
 *   and is in `repeats`, not in the figures); win rate = wins / bids;
 * - clicks: clicks of bids whose impression is in the records read; clicks without one (the click
 *   URL is public in the markup: a fraud signal) are `clicksWithoutImpression`, in neither clicks
 *   nor CTR; CTR = impressions whose bid was clicked / impressions (at most 100 %, in every hour);
 * - billed: `bill` records with counted = true (a repeated billing notice is logged with counted =
 *   false and costs nothing); spend = sum of the clearing price (the bid price when the exchange did
 *   not substitute it, as the bidder charges it) / 1000, in the bid's currency (`cur`), so every
 *   money figure is per currency; eCPM = spend / billed × 1000;
 * - answer time: the percentiles of `ms` (the bidder's handler time) over response records that carry it.
 */
export interface Money {
  cur: string;
  spend: number;
  ecpm: number | null;
}

export interface Figures {
  requests: number;
  answeredWithBid: number;
  fillRate: number | null;
  noBids: number;
  errors: number;
  bids: number;
  wins: number;
  winRate: number | null;
  losses: number;
  impressions: number;
  clicks: number;
  /** Clicks of bids with no impression record: left out of clicks and CTR. */
  clicksWithoutImpression: number;
  ctr: number | null;
  billed: number;
  money: Money[];
  answerMs: { count: number; p50: number | null; p90: number | null; p99: number | null; max: number | null };
}

export interface HourRow extends Figures {
  /** `YYYY-MM-DD HH:00` UTC. */
  hour: string;
}

export interface CampaignRow {
  cid: string;
  bids: number;
  avgBidPrice: number | null;
  wins: number;
  winRate: number | null;
  losses: number;
  impressions: number;
  clicks: number;
  clicksWithoutImpression: number;
  ctr: number | null;
  billed: number;
  money: Money[];
}

export interface Report {
  dir: string;
  /** The time window asked for (UTC ISO), null when open. */
  from: string | null;
  to: string | null;
  files: number;
  records: number;
  /** First and last record time in the window (UTC ISO). */
  first: string | null;
  last: string | null;
  totals: Figures;
  hours: HourRow[];
  campaigns: CampaignRow[];
  /** Why bid requests were not answered with a bid: `{status, reason, count}`, most frequent first. */
  reasons: Array<{ status: number; reason: string; count: number }>;
  /** Records per type (every record, repeats included). */
  types: Record<string, number>;
  /** Win, loss, impression and click records past the first of their bid and type: left out of the figures. */
  repeats: number;
}

export interface ReportOptions {
  dir: string;
  from: Date | null;
  to: Date | null;
  threads?: number;
}

const PARTITION = /^(date=\d{4}-\d{2}-\d{2})$/;

/** Parquet files of the partitions (what the report reads); `.staging`, temporary and bad-frame files are not. */
export async function partitionFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  let dates: string[];
  try {
    dates = await fsp.readdir(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return out;
    throw e;
  }
  for (const d of dates.sort()) {
    if (!PARTITION.test(d)) continue;
    const hours = await fsp.readdir(path.join(dir, d)).catch(() => [] as string[]);
    for (const h of hours.sort()) {
      if (!/^hour=\d{2}$/.test(h)) continue;
      const files = await fsp.readdir(path.join(dir, d, h)).catch(() => [] as string[]);
      for (const f of files.sort()) if (f.endsWith('.parquet')) out.push(path.join(dir, d, h, f));
    }
  }
  return out;
}

function num(v: unknown): number {
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number') return v;
  if (v === null || v === undefined) return 0;
  return Number(v);
}

function numOrNull(v: unknown): number | null {
  return v === null || v === undefined ? null : num(v);
}

function ratio(a: number, b: number): number | null {
  return b > 0 ? a / b : null;
}

function iso(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.toISOString();
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** The per-group figures, as SQL aggregates over `log` (one row per group). */
const FIGURES = `
  count(*) FILTER (WHERE type = 'request') AS requests,
  count(*) FILTER (WHERE type = 'response' AND status = 200) AS answered,
  count(*) FILTER (WHERE type = 'response' AND status = 204) AS nobids,
  count(*) FILTER (WHERE type = 'response' AND status = 400) AS errors,
  coalesce(sum(bids) FILTER (WHERE type = 'response'), 0) AS bids,
  count(*) FILTER (WHERE type = 'win') AS wins,
  count(*) FILTER (WHERE type = 'loss') AS losses,
  count(*) FILTER (WHERE type = 'imp') AS imps,
  count(*) FILTER (WHERE type = 'click' AND shown) AS clicks,
  count(*) FILTER (WHERE type = 'click' AND NOT shown) AS clicks_unshown,
  count(*) FILTER (WHERE type = 'imp' AND clicked) AS clicked_imps,
  count(*) FILTER (WHERE type = 'bill' AND counted) AS billed,
  count(ms) FILTER (WHERE type = 'response') AS ms_n,
  quantile_cont(ms, 0.5) FILTER (WHERE type = 'response') AS p50,
  quantile_cont(ms, 0.9) FILTER (WHERE type = 'response') AS p90,
  quantile_cont(ms, 0.99) FILTER (WHERE type = 'response') AS p99,
  max(ms) FILTER (WHERE type = 'response') AS ms_max`;

/** Notices counted once per bid in the figures (bills count once by their `counted` flag). */
const ONCE_PER_BID = `'win', 'loss', 'imp', 'click'`;

/** Spend and billed count per currency (and group key). */
const MONEY = `
  coalesce(cur, '?') AS cur,
  count(*) AS billed,
  sum(coalesce(price, bid_price)) / 1000 AS spend`;

function figures(r: Record<string, unknown>, money: Money[]): Figures {
  const requests = num(r.requests);
  const answered = num(r.answered);
  const bids = num(r.bids);
  const wins = num(r.wins);
  const imps = num(r.imps);
  const clicks = num(r.clicks);
  const clickedImps = num(r.clicked_imps);
  return {
    requests,
    answeredWithBid: answered,
    fillRate: ratio(answered, requests),
    noBids: num(r.nobids),
    errors: num(r.errors),
    bids,
    wins,
    winRate: ratio(wins, bids),
    losses: num(r.losses),
    impressions: imps,
    clicks,
    clicksWithoutImpression: num(r.clicks_unshown),
    ctr: ratio(clickedImps, imps),
    billed: num(r.billed),
    money,
    answerMs: { count: num(r.ms_n), p50: numOrNull(r.p50), p90: numOrNull(r.p90), p99: numOrNull(r.p99), max: numOrNull(r.ms_max) },
  };
}

function toMoney(rows: Array<Record<string, unknown>>): Money[] {
  return rows
    .map((m) => {
      const billed = num(m.billed);
      const spend = num(m.spend);
      return { cur: String(m.cur), spend, ecpm: billed > 0 ? (spend / billed) * 1000 : null };
    })
    .sort((a, b) => a.cur.localeCompare(b.cur));
}

async function rows(conn: DuckDBConnection, sql: string): Promise<Array<Record<string, unknown>>> {
  return (await conn.runAndReadAll(sql)).getRowObjectsJS();
}

export function emptyFigures(): Figures {
  return figures({}, []);
}

/** Builds the report; an empty directory (or window) gives a report with zeros, not an error. */
export async function buildReport(opts: ReportOptions): Promise<Report> {
  const files = await partitionFiles(opts.dir);
  const report: Report = {
    dir: opts.dir,
    from: opts.from?.toISOString() ?? null,
    to: opts.to?.toISOString() ?? null,
    files: files.length,
    records: 0,
    first: null,
    last: null,
    totals: emptyFigures(),
    hours: [],
    campaigns: [],
    reasons: [],
    types: {},
    repeats: 0,
  };
  if (files.length === 0) return report;
  const db = await DuckDBInstance.create(':memory:', { threads: String(opts.threads ?? 2), autoinstall_known_extensions: 'false' });
  const conn = await db.connect();
  try {
    const where: string[] = [];
    if (opts.from) where.push(`ts >= epoch_ms(${opts.from.getTime()})`, `date >= DATE ${sqlString(opts.from.toISOString().slice(0, 10))}`);
    if (opts.to) where.push(`ts < epoch_ms(${opts.to.getTime()})`, `date <= DATE ${sqlString(opts.to.toISOString().slice(0, 10))}`);
    await conn.run(`CREATE VIEW every_record AS SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}],
      hive_partitioning = true, union_by_name = true, hive_types = {'date': DATE, 'hour': INTEGER})
      ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}`);
    // What the figures count: every record but the repeats of a bid's win, loss, impression or click
    // (the first of each is kept, so it counts in the hour it happened).
    // `shown` on a click: its bid has an impression record; `clicked` on an impression: its bid has a
    // click. CTR counts clicked impressions, so that clicks on URLs fired without an impression
    // (public in the markup) are counted apart and CTR stays at most 100 %.
    await conn.run(`CREATE TABLE shown_bids AS SELECT DISTINCT bid FROM every_record WHERE type = 'imp' AND bid IS NOT NULL`);
    await conn.run(`CREATE TABLE clicked_bids AS SELECT DISTINCT bid FROM every_record WHERE type = 'click' AND bid IS NOT NULL`);
    await conn.run(`CREATE VIEW log AS
      SELECT *, false AS shown, false AS clicked FROM every_record WHERE type IS NULL OR type NOT IN (${ONCE_PER_BID}) OR bid IS NULL
      UNION ALL BY NAME
      SELECT *, bid IN (SELECT bid FROM shown_bids) AS shown, bid IN (SELECT bid FROM clicked_bids) AS clicked
      FROM every_record WHERE type IN (${ONCE_PER_BID}) AND bid IS NOT NULL
      QUALIFY row_number() OVER (PARTITION BY type, bid ORDER BY ts NULLS LAST) = 1`);

    const [overall] = await rows(conn, `SELECT count(*) AS n, min(ts) AS first, max(ts) AS last FROM every_record`);
    const [counted] = await rows(conn, `SELECT count(*) AS n, ${FIGURES} FROM log`);
    report.records = num(overall.n);
    report.first = iso(overall.first);
    report.last = iso(overall.last);
    const totalMoney = toMoney(await rows(conn, `SELECT ${MONEY} FROM log WHERE type = 'bill' AND counted GROUP BY ALL`));
    report.totals = figures(counted, totalMoney);
    report.repeats = report.records - num(counted.n);

    for (const t of await rows(conn, `SELECT coalesce(type, '(not JSON)') AS type, count(*) AS n FROM every_record GROUP BY ALL ORDER BY n DESC, type`)) {
      report.types[String(t.type)] = num(t.n);
    }

    const hourMoney = new Map<string, Array<Record<string, unknown>>>();
    for (const m of await rows(conn, `SELECT strftime(date_trunc('hour', ts), '%Y-%m-%d %H:00') AS hour, ${MONEY} FROM log WHERE type = 'bill' AND counted GROUP BY ALL`)) {
      const k = String(m.hour);
      hourMoney.set(k, [...(hourMoney.get(k) ?? []), m]);
    }
    for (const h of await rows(conn, `SELECT strftime(date_trunc('hour', ts), '%Y-%m-%d %H:00') AS hour, ${FIGURES} FROM log WHERE ts IS NOT NULL GROUP BY ALL ORDER BY hour`)) {
      const hour = String(h.hour);
      report.hours.push({ hour, ...figures(h, toMoney(hourMoney.get(hour) ?? [])) });
    }

    report.reasons = (
      await rows(
        conn,
        `SELECT status, coalesce(reason, '(none)') AS reason, count(*) AS n FROM log
         WHERE type = 'response' AND status <> 200 GROUP BY ALL ORDER BY n DESC, status, reason`,
      )
    ).map((r) => ({ status: num(r.status), reason: String(r.reason), count: num(r.n) }));

    report.campaigns = await campaigns(conn);
  } finally {
    conn.closeSync();
    db.closeSync();
  }
  return report;
}

async function campaigns(conn: DuckDBConnection): Promise<CampaignRow[]> {
  const byCid = new Map<string, CampaignRow>();
  const row = (cid: string): CampaignRow => {
    let r = byCid.get(cid);
    if (!r) {
      r = { cid, bids: 0, avgBidPrice: null, wins: 0, winRate: null, losses: 0, impressions: 0, clicks: 0, clicksWithoutImpression: 0, ctr: null, billed: 0, money: [] };
      byCid.set(cid, r);
    }
    return r;
  };
  // A response's bid lists are parallel (one entry per bid): unnest them together.
  for (const b of await rows(
    conn,
    `SELECT coalesce(cid, '(none)') AS cid, count(*) AS n, avg(price) AS avg_price FROM (
       SELECT unnest(cids) AS cid, unnest(prices) AS price FROM log WHERE type = 'response' AND bids > 0
     ) GROUP BY ALL`,
  )) {
    const r = row(String(b.cid));
    r.bids = num(b.n);
    r.avgBidPrice = numOrNull(b.avg_price);
  }
  for (const e of await rows(
    conn,
    `SELECT coalesce(cid, '(none)') AS cid,
       count(*) FILTER (WHERE type = 'win') AS wins,
       count(*) FILTER (WHERE type = 'loss') AS losses,
       count(*) FILTER (WHERE type = 'imp') AS imps,
       count(*) FILTER (WHERE type = 'click' AND shown) AS clicks,
       count(*) FILTER (WHERE type = 'click' AND NOT shown) AS clicks_unshown,
       count(*) FILTER (WHERE type = 'imp' AND clicked) AS clicked_imps,
       count(*) FILTER (WHERE type = 'bill' AND counted) AS billed
     FROM log WHERE type IN ('win', 'loss', 'imp', 'click', 'bill') GROUP BY ALL`,
  )) {
    const r = row(String(e.cid));
    r.wins = num(e.wins);
    r.losses = num(e.losses);
    r.impressions = num(e.imps);
    r.clicks = num(e.clicks);
    r.clicksWithoutImpression = num(e.clicks_unshown);
    r.ctr = ratio(num(e.clicked_imps), r.impressions);
    r.billed = num(e.billed);
  }
  const money = new Map<string, Array<Record<string, unknown>>>();
  for (const m of await rows(conn, `SELECT coalesce(cid, '(none)') AS cid, ${MONEY} FROM log WHERE type = 'bill' AND counted GROUP BY ALL`)) {
    const k = String(m.cid);
    money.set(k, [...(money.get(k) ?? []), m]);
  }
  for (const r of byCid.values()) {
    r.winRate = ratio(r.wins, r.bids);
    r.money = toMoney(money.get(r.cid) ?? []);
  }
  return [...byCid.values()].sort((a, b) => b.bids - a.bids || b.wins - a.wins || a.cid.localeCompare(b.cid));
}
