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
table{border-collapse:collapse;font-variant-numeric:tabular-nums}
th,td{padding:4px 10px;border-bottom:1px solid #eef;text-align:right;white-space:nowrap}
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
${r.hours.length > 1 ? charts(r.hours) : ''}
<h2>Per hour</h2>
${hoursTable(r.hours)}
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

function hoursTable(hours: HourRow[]): string {
  return table(
    ['hour (UTC)', 'requests', 'with bid', 'fill', 'no-bid', '400', 'bids', 'wins', 'win rate', 'imps', 'clicks', 'CTR', 'billed', 'spend', 'eCPM', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
    hours.map((h) => [esc(h.hour), ...figureCells(h)]),
  );
}

function figureCells(f: Figures): string[] {
  return [
    fmtInt(f.requests),
    fmtInt(f.answeredWithBid),
    pct(f.fillRate),
    fmtInt(f.noBids),
    fmtInt(f.errors),
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
    ms(f.answerMs.p90),
    ms(f.answerMs.p99),
    ms(f.answerMs.max),
  ];
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

function charts(hours: HourRow[]): string {
  const labels = hours.map((h) => h.hour.slice(5));
  const mainCur = hours.flatMap((h) => h.money).reduce<Map<string, number>>((m, x) => m.set(x.cur, (m.get(x.cur) ?? 0) + x.spend), new Map());
  const cur = [...mainCur.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] ?? null;
  const spendOf = (h: HourRow): number | null => h.money.find((m) => m.cur === cur)?.spend ?? (cur === null ? null : 0);
  return `<h2>Per hour</h2><div class="charts">
${lineChart('Bid requests, bids and wins', labels, [
  { label: 'requests', color: '#3b6fd8', values: hours.map((h) => h.requests) },
  { label: 'bids', color: '#2ba37a', values: hours.map((h) => h.bids) },
  { label: 'wins', color: '#e08a1e', values: hours.map((h) => h.wins) },
])}
${lineChart('Fill rate and win rate (%)', labels, [
  { label: 'fill rate', color: '#3b6fd8', values: hours.map((h) => (h.fillRate === null ? null : h.fillRate * 100)) },
  { label: 'win rate', color: '#e08a1e', values: hours.map((h) => (h.winRate === null ? null : h.winRate * 100)) },
])}
${cur === null ? '' : lineChart(`Billed spend (${cur})`, labels, [{ label: 'spend', color: '#8a4fd8', values: hours.map(spendOf) }])}
${lineChart('Answer time (ms)', labels, [
  { label: 'p50', color: '#2ba37a', values: hours.map((h) => h.answerMs.p50) },
  { label: 'p99', color: '#d83b3b', values: hours.map((h) => h.answerMs.p99) },
])}
</div>`;
}

/** A small line chart: one polyline per series over the hours, y from 0 to the largest value. */
export function lineChart(title: string, labels: string[], series: Series[]): string {
  const W = 460;
  const H = 220;
  const L = 52;
  const R = 12;
  const T = 24;
  const B = 34;
  const max = Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v))));
  const top = max > 0 ? niceCeil(max) : 1;
  const n = labels.length;
  const x = (i: number): number => L + (n <= 1 ? (W - L - R) / 2 : (i * (W - L - R)) / (n - 1));
  const y = (v: number): number => T + (H - T - B) * (1 - v / top);
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => `<line x1="${L}" x2="${W - R}" y1="${y(top * f).toFixed(1)}" y2="${y(top * f).toFixed(1)}" stroke="#e6e8f0"/><text x="${L - 6}" y="${(y(top * f) + 4).toFixed(1)}" text-anchor="end">${axisNum(top * f)}</text>`)
    .join('');
  const step = Math.max(1, Math.ceil(n / 6));
  const xs = labels
    .map((l, i) => (i % step === 0 ? `<text x="${x(i).toFixed(1)}" y="${H - B + 16}" text-anchor="middle">${esc(l)}</text>` : ''))
    .join('');
  const lines = series
    .map((s) => {
      const pts = s.values.map((v, i) => (v === null || !Number.isFinite(v) ? null : `${x(i).toFixed(1)},${y(v).toFixed(1)}`)).filter((p): p is string => p !== null);
      return pts.length === 1
        ? `<circle cx="${pts[0].split(',')[0]}" cy="${pts[0].split(',')[1]}" r="3" fill="${s.color}"/>`
        : `<polyline fill="none" stroke="${s.color}" stroke-width="2" points="${pts.join(' ')}"/>`;
    })
    .join('');
  const legend = series.map((s, i) => `<rect x="${L + i * 90}" y="6" width="10" height="10" fill="${s.color}"/><text x="${L + i * 90 + 14}" y="15">${esc(s.label)}</text>`).join('');
  return `<figure><figcaption>${esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${grid}${xs}${lines}${legend}</svg></figure>`;
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function axisNum(v: number): string {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return `${+v.toFixed(2)}`;
}

export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

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
