import { barChart as drawBars, esc } from '../charts/svg';
import type { CampaignRow, Figures, HourRow, Money, Report } from './report-data';

/**
 * The report as one self-contained HTML page: inline CSS, tables, and charts drawn as inline SVG
 * (no script, no font, no network).
 */
export function renderHtml(r: Report): string {
  const t = r.totals;
  const window = `${r.from ?? 'the first record'} to ${r.to ?? 'the last record'}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Bid log report</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{font:14px/1.4 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d2330;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.muted{color:#667}.cards{display:flex;flex-wrap:wrap;gap:12px;margin:16px 0}
.card{border:1px solid #dde;border-radius:8px;padding:10px 14px;min-width:130px}
.card b{display:block;font-size:20px}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:13px}
th,td{padding:3px 6px;border-bottom:1px solid #eef;text-align:right;white-space:nowrap}
th{background:#f5f6fa;position:sticky;top:0}td:first-child,th:first-child{text-align:left}
.charts{display:flex;flex-wrap:wrap;gap:24px}
figure{margin:0}figcaption{font-weight:600;margin-bottom:4px}
svg text{font:11px system-ui,sans-serif;fill:#556}
</style></head><body>
<h1>Bid log report</h1>
<div class="muted">${esc(r.dir)} · ${r.files} Parquet files · ${fmtInt(r.records)} records · window: ${esc(window)} (UTC)${r.first ? ` · data from ${esc(r.first)} to ${esc(r.last ?? '')}` : ''}</div>
<div class="cards">
${card('bid requests', fmtInt(t.requests))}${card('fill rate', pct(t.fillRate))}${card('bids', fmtInt(t.bids))}${card('wins', fmtInt(t.wins))}${card('win rate', pct(t.winRate))}
${card('impressions', fmtInt(t.impressions))}${card('clicks', fmtInt(t.clicks))}${card('clicks without an impression', fmtInt(t.clicksWithoutImpression))}${card('CTR', pct(t.ctr))}${card('billed', fmtInt(t.billed))}
${card('spend', moneyText(t.money, 'spend'))}${card('eCPM', moneyText(t.money, 'ecpm'))}${card('answer time p99', t.answerMs.p99 === null ? '–' : `${ms(t.answerMs.p99)} ms`)}
</div>
${r.hours.length > 0 ? charts(r.hours, coverage(r)) : ''}
<h2>Per hour</h2>
${hoursTable(r.hours, coverage(r))}
<h2>Per campaign</h2>
${campaignTable(r.campaigns)}
<h2>No-bid and error reasons</h2>
${table(['status', 'reason', 'responses', 'share of requests'], r.reasons.map((x) => [String(x.status), esc(x.reason), fmtInt(x.count), pct(t.requests > 0 ? x.count / t.requests : null)]))}
<h2>Records by type</h2>
${table(['type', 'records'], Object.entries(r.types).map(([k, v]) => [esc(k), fmtInt(v)]))}
<p class="muted">Wins, losses, impressions and clicks count once per bid: ${fmtInt(r.repeats)} repeated notice records are left out of the figures. Clicks are those of bids whose impression fired; clicks without an impression (the click URL is public in the markup: a fraud signal) are counted apart, and CTR = clicked impressions / impressions. Spend is the sum of billed clearing prices / 1000 in the bid currency (billing notices counted once); eCPM = spend / billed × 1000; win rate = wins / bids; fill rate = bid requests answered with a bid / bid requests; answer time is the bidder's handler time.</p>
</body></html>
`;
}

function card(label: string, value: string): string {
  return `<div class="card">${esc(label)}<b>${value}</b></div>`;
}

function table(head: string[], body: string[][]): string {
  if (body.length === 0) return '<p class="muted">none</p>';
  return `<table><thead><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr></thead><tbody>
${body.map((row) => `<tr>${row.map((c) => `<td>${c}</td>`).join('')}</tr>`).join('\n')}
</tbody></table>`;
}

function hoursTable(hours: HourRow[], minutes: number[]): string {
  // What fits at 1,400 px: the answers with a bid are in the fill rate, the 400s in the reasons
  // table below, and p90 between p50 and p99.
  const partial = minutes.some((m) => m < 60);
  return `${table(
    ['hour (UTC)', 'requests', 'fill', 'no-bid', 'bids', 'wins', 'win rate', 'imps', 'clicks', 'CTR', 'billed', 'spend', 'eCPM', 'p50 ms', 'p99 ms', 'max ms'],
    hours.map((h, i) => [`${esc(h.hour)}${minutes[i] < 60 ? `<br><span class="muted">(${minutes[i]} min)</span>` : ''}`, ...figureCells(h)]),
  )}${partial ? '\n<p class="muted">(N min): a partial hour, with records for N minutes of it only (the first or last hour of the data or of the window); its counts are not a drop in traffic.</p>' : ''}`;
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
    fmtInt(f.billed),
    moneyText(f.money, 'spend'),
    moneyText(f.money, 'ecpm'),
    ms(f.answerMs.p50),
    ms(f.answerMs.p99),
    ms(f.answerMs.max),
  ];
}

/**
 * Minutes of each hour the records cover (whole minutes, 60 for a full hour): the first hour from
 * the first record (or the window's start), the last up to the last record (or the window's end).
 */
export function coverage(r: Report): number[] {
  const t = (v: string | null): number | null => (v === null ? null : Date.parse(v));
  const lo = Math.max(t(r.first) ?? -Infinity, t(r.from) ?? -Infinity);
  const hi = Math.min(t(r.last) ?? Infinity, t(r.to) ?? Infinity);
  return r.hours.map((h) => {
    const start = Date.parse(`${h.hour.replace(' ', 'T')}:00Z`);
    if (!Number.isFinite(start)) return 60;
    const covered = Math.min(start + 3_600_000, hi) - Math.max(start, lo);
    return Math.max(1, Math.min(60, Math.round(covered / 60_000)));
  });
}

/** The per-campaign table's head and cells, for the page and the text report alike. */
export const CAMPAIGN_HEAD = ['campaign', 'bids', 'avg bid', 'wins', 'win rate', 'losses', 'imps', 'clicks', 'CTR', 'billed', 'spend', 'eCPM'];

export function campaignCells(c: CampaignRow, html: boolean): string[] {
  return [
    html ? esc(c.cid) : c.cid,
    fmtInt(c.bids),
    c.avgBidPrice === null ? '–' : c.avgBidPrice.toFixed(3),
    fmtInt(c.wins),
    pct(c.winRate),
    fmtInt(c.losses),
    fmtInt(c.impressions),
    fmtInt(c.clicks),
    pct(c.ctr),
    fmtInt(c.billed),
    moneyText(c.money, 'spend', html),
    moneyText(c.money, 'ecpm', html),
  ];
}

function campaignTable(rows: CampaignRow[]): string {
  return table(
    CAMPAIGN_HEAD,
    rows.map((c) => campaignCells(c, true)),
  );
}

interface Series {
  label: string;
  color: string;
  values: Array<number | null>;
}

function charts(hours: HourRow[], minutes: number[]): string {
  const labels = hours.map((h) => h.hour.slice(11));
  const mainCur = hours.flatMap((h) => h.money).reduce<Map<string, number>>((m, x) => m.set(x.cur, (m.get(x.cur) ?? 0) + x.spend), new Map());
  const cur = [...mainCur.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  const spendOf = (h: HourRow): number | null => h.money.find((m) => m.cur === cur)?.spend ?? (cur === null ? null : 0);
  const partial = minutes.some((m) => m < 60);
  return `<h2>Per hour</h2>${partial ? '<p class="muted">Lighter bars with a dashed outline: a partial hour (the minutes of it the records cover are in its label and tooltip); compare its counts with care.</p>' : ''}<div class="charts">
${barChart('Bid requests, bids and wins', labels, minutes, [
  { label: 'requests', color: '#3b6fd8', values: hours.map((h) => h.requests) },
  { label: 'bids', color: '#2ba37a', values: hours.map((h) => h.bids) },
  { label: 'wins', color: '#e08a1e', values: hours.map((h) => h.wins) },
])}
${barChart('Fill rate and win rate (%)', labels, minutes, [
  { label: 'fill rate', color: '#3b6fd8', values: hours.map((h) => (h.fillRate === null ? null : h.fillRate * 100)) },
  { label: 'win rate', color: '#e08a1e', values: hours.map((h) => (h.winRate === null ? null : h.winRate * 100)) },
])}
${cur === null ? '' : barChart(`Billed spend (${cur})`, labels, minutes, [{ label: 'spend', color: '#8a4fd8', values: hours.map(spendOf) }])}
${barChart('Answer time (ms)', labels, minutes, [
  { label: 'p50', color: '#2ba37a', values: hours.map((h) => h.answerMs.p50) },
  { label: 'p99', color: '#d83b3b', values: hours.map((h) => h.answerMs.p99) },
])}
</div>`;
}

/**
 * A small bar chart (the one chart module, src/charts/svg.ts): for each hour a group of bars, one per
 * series, y from 0. An hour the records cover only in part (`minutes` < 60) has lighter bars with a
 * dashed outline and its minutes in its label and in each bar's tooltip: a 26-minute hour beside a
 * full one is not a drop. Drawn for a single hour too; every label stays inside the drawing.
 */
export function barChart(title: string, labels: string[], minutes: number[], series: Series[]): string {
  const svg = drawBars({
    groups: labels,
    series: series.map((s) => ({ name: s.label, color: s.color, values: s.values })),
    marked: minutes.map((m) => (m < 60 ? { label: ` (${m}m)`, tip: ` (partial hour: ${m} min of data)` } : null)),
    values: false,
    width: 460,
    height: 220,
  });
  return `<figure><figcaption>${esc(title)}</figcaption>${svg}</figure>`;
}

export { esc };

export function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

export function pct(v: number | null): string {
  return v === null ? '–' : `${(v * 100).toFixed(v < 0.001 && v > 0 ? 3 : 1)}%`;
}

export function ms(v: number | null): string {
  return v === null ? '–' : v.toFixed(v < 10 ? 2 : 1);
}

export function moneyText(money: Money[], what: 'spend' | 'ecpm', html = true): string {
  if (money.length === 0) return '–';
  return money.map((m) => (m[what] === null ? '–' : `${(m[what]).toFixed(what === 'spend' ? 4 : 3)} ${html ? esc(m.cur) : m.cur}`)).join(', ');
}
