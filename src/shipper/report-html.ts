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
 * A small bar chart: for each hour a group of bars, one per series, y from 0 to the largest value.
 * An hour the records cover only in part (`minutes` < 60) has lighter bars with a dashed outline and its minutes
 * in its label and in each bar's tooltip: a 26-minute hour beside a full one is not a drop. Drawn
 * for a single hour too. Every label stays inside the drawing (the x labels sit in their band).
 */
export function barChart(title: string, labels: string[], minutes: number[], series: Series[]): string {
  const W = 460;
  const H = 220;
  const L = 52;
  const R = 12;
  const T = 24;
  const B = 34;
  const max = Math.max(0, ...series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v))));
  const top = max > 0 ? niceCeil(max) : 1;
  const n = Math.max(1, labels.length);
  const band = (W - L - R) / n;
  const barW = Math.max(1, (band * 0.8) / Math.max(1, series.length));
  const y = (v: number): number => T + (H - T - B) * (1 - v / top);
  const grid = [0, 0.25, 0.5, 0.75, 1]
    .map((f) => `<line x1="${L}" x2="${W - R}" y1="${y(top * f).toFixed(1)}" y2="${y(top * f).toFixed(1)}" stroke="#e6e8f0"/><text x="${L - 6}" y="${(y(top * f) + 4).toFixed(1)}" text-anchor="end">${axisNum(top * f)}</text>`)
    .join('');
  // One label every `step` bands, each at most a band's width of text (about 6 px a character).
  const step = Math.max(1, Math.ceil(48 / band));
  const xs = labels
    .map((l, i) => {
      if (i % step !== 0) return '';
      const cx = L + band * (i + 0.5);
      const text = minutes[i] < 60 ? `${l} (${minutes[i]}m)` : l;
      const anchor = cx + text.length * 3.2 > W ? 'end' : cx - text.length * 3.2 < 0 ? 'start' : 'middle';
      const ax = anchor === 'end' ? W - 2 : anchor === 'start' ? 2 : cx;
      return `<text x="${ax.toFixed(1)}" y="${H - B + 16}" text-anchor="${anchor}">${esc(text)}</text>`;
    })
    .join('');
  const bars = series
    .flatMap((s, k) =>
      s.values.map((v, i) => {
        if (v === null || !Number.isFinite(v)) return '';
        const x = L + band * i + band * 0.1 + barW * k;
        const part = minutes[i] < 60;
        const tip = `${labels[i]} ${s.label}: ${axisNum(v)}${part ? ` (partial hour: ${minutes[i]} min of data)` : ''}`;
        // A partial hour: lighter, with a dashed outline (no pattern: the page references nothing, not even within itself).
        return `<rect x="${x.toFixed(1)}" y="${y(v).toFixed(1)}" width="${barW.toFixed(1)}" height="${Math.max(0.5, H - B - y(v)).toFixed(1)}" fill="${s.color}"${part ? ` fill-opacity="0.3" stroke="${s.color}" stroke-dasharray="3 2"` : ''}><title>${esc(tip)}</title></rect>`;
      }),
    )
    .join('');
  const legend = series.map((s, i) => `<rect x="${L + i * 90}" y="6" width="10" height="10" fill="${s.color}"/><text x="${L + i * 90 + 14}" y="15">${esc(s.label)}</text>`).join('');
  const svg = `${grid}${xs}${bars}${legend}`;
  return `<figure><figcaption>${esc(title)}</figcaption><svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" role="img" aria-label="${esc(title)}">${svg}</svg></figure>`;
}

function niceCeil(v: number): number {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function axisNum(v: number): string {
  if (v >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  // Below 1, two significant digits: 0.0075 and 0.015 stay apart (two decimals made both 0.01).
  return v > 0 && v < 1 ? `${+v.toPrecision(2)}` : `${+v.toFixed(2)}`;
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
