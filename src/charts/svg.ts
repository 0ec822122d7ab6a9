/**
 * The one SVG chart writer: line charts and grouped bar charts as self-contained SVG text (no
 * script, no font, no network), readable in any browser or image viewer. The bid log report's page
 * draws its charts with it (src/shipper/report-html.ts), and so do the measuring tools (the load
 * test's and the simulator's plots, through dist/charts/svg.js).
 */

export const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

export function esc(s: string | number): string {
  return String(s).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);
}

/** An axis or bar value: 1.2M, 45.6k, 380, 2.5, 0.0075 (two significant digits below 1). */
export function fmt(v: number): string {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
  if (a >= 100) return String(Math.round(v));
  if (a >= 1) return String(+v.toFixed(2));
  return String(+v.toPrecision(2));
}

interface Axis {
  ticks: number[];
  lo: number;
  hi: number;
}

/** About `n` round tick values covering [lo, hi]. */
export function linearTicks(lo: number, hi: number, n = 6): Axis {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? 10 * mag;
  const ticks: number[] = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return { ticks, lo: Math.min(lo, ticks[0]), hi: Math.max(hi, ticks[ticks.length - 1]) };
}

/** 1-2-5 ticks for a log axis covering [lo, hi] (both > 0). */
export function logTicks(lo: number, hi: number): Axis {
  const ticks: number[] = [];
  let e = Math.floor(Math.log10(lo));
  for (;;) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e;
      if (t >= lo / 2.0001 && t <= hi * 2.0001) ticks.push(+t.toPrecision(6));
    }
    if (10 ** e > hi) break;
    e++;
  }
  const first = ticks.filter((t) => t <= lo).pop() ?? ticks[0];
  const last = ticks.find((t) => t >= hi) ?? ticks[ticks.length - 1];
  return { ticks: ticks.filter((t) => t >= first && t <= last), lo: first, hi: last };
}

const finite = (y: number | null | undefined): y is number => y !== null && y !== undefined && Number.isFinite(y);

function open(w: number, h: number, title: string | undefined, note: string | undefined, parts: string[]): void {
  const label = title === undefined ? '' : ` role="img" aria-label="${esc(title)}"`;
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif" font-size="12"${label}>`);
  parts.push(`<rect width="${w}" height="${h}" fill="#fff"/>`);
  if (title !== undefined) parts.push(`<text x="${w / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">${esc(title)}</text>`);
  if (note !== undefined) parts.push(`<text x="${w / 2}" y="${title === undefined ? 18 : 40}" text-anchor="middle" fill="#555">${esc(note)}</text>`);
}

/** The top margin: room for the title and the note when there are. */
function topMargin(title: string | undefined, note: string | undefined): number {
  return 14 + (title === undefined ? 0 : 32) + (note === undefined ? 0 : 16);
}

export interface LineSeries {
  name: string;
  points: Array<[number, number | null]>;
  color?: string;
  dash?: boolean;
  markers?: boolean;
  /** Drawn on the right axis, a scale of its own. */
  right?: boolean;
}

export interface LineChart {
  title: string;
  xLabel: string;
  yLabel: string;
  series: LineSeries[];
  yLog?: boolean;
  /** Horizontal lines (limits, bounds); `right` on the right axis. */
  hLines?: Array<{ y: number; label: string; color?: string; right?: boolean }>;
  /** Vertical lines, e.g. phase changes. */
  vLines?: Array<{ x: number; label: string }>;
  /** Small text under the title. */
  note?: string;
  /** The right axis's label: series and hLines with `right: true` are drawn on it. */
  y2Label?: string;
  width?: number;
  height?: number;
}

/** A line chart: x and y axes with round ticks (y linear or log), series as paths, legend under the plot. */
export function lineChart(o: LineChart): string {
  const W = o.width ?? 860;
  const H = o.height ?? 420;
  const rightSeries = o.series.filter((s) => s.right);
  const hasRight = rightSeries.length > 0 || (o.hLines ?? []).some((h) => h.right);
  const m = { top: topMargin(o.title, o.note), right: hasRight ? 64 : 24, bottom: 52, left: 64 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom - 22 * Math.ceil(o.series.length / 4);
  const xs: number[] = [];
  const ys: number[] = [];
  const ys2: number[] = [];
  for (const s of o.series) {
    for (const [x, y] of s.points) {
      if (x === null || !finite(y)) continue;
      if (o.yLog && y <= 0) continue;
      xs.push(x);
      (s.right ? ys2 : ys).push(y);
    }
  }
  for (const h of o.hLines ?? []) (h.right ? ys2 : ys).push(h.y);
  if (ys.length === 0) ys.push(0);
  const parts: string[] = [];
  open(W, H, o.title, o.note, parts);
  if (xs.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#888">no data</text></svg>`);
    return parts.join('\n');
  }
  const xa = linearTicks(Math.min(...xs), Math.max(...xs), 8);
  const ya = o.yLog ? logTicks(Math.min(...ys), Math.max(...ys)) : linearTicks(Math.min(0, ...ys), Math.max(...ys) * 1.05, 6);
  const X = (x: number): number => m.left + ((x - xa.lo) / (xa.hi - xa.lo || 1)) * pw;
  const Y = o.yLog
    ? (y: number): number => m.top + ph - ((Math.log10(y) - Math.log10(ya.lo)) / (Math.log10(ya.hi) - Math.log10(ya.lo) || 1)) * ph
    : (y: number): number => m.top + ph - ((y - ya.lo) / (ya.hi - ya.lo || 1)) * ph;
  // The right axis (linear): its own ticks, labels right of the plot.
  const ya2 = hasRight ? linearTicks(Math.min(0, ...ys2), Math.max(0, ...ys2) * 1.05 || 1, 6) : null;
  const Y2 = ya2 ? (y: number): number => m.top + ph - ((y - ya2.lo) / (ya2.hi - ya2.lo || 1)) * ph : Y;
  const yOf = (right: boolean | undefined): ((y: number) => number) => (right ? Y2 : Y);

  for (const t of ya.ticks) {
    const y = Y(t).toFixed(1);
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" fill="#333">${fmt(t)}</text>`);
  }
  for (const t of xa.ticks) {
    const x = X(t).toFixed(1);
    parts.push(`<line x1="${x}" x2="${x}" y1="${m.top}" y2="${m.top + ph}" stroke="#f0f0f0"/>`);
    parts.push(`<text x="${x}" y="${m.top + ph + 16}" text-anchor="middle" fill="#333">${fmt(t)}</text>`);
  }
  parts.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  parts.push(`<text x="${m.left + pw / 2}" y="${m.top + ph + 36}" text-anchor="middle">${esc(o.xLabel)}</text>`);
  parts.push(`<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}${o.yLog ? ' (log scale)' : ''}</text>`);
  if (ya2) {
    for (const t of ya2.ticks) parts.push(`<text x="${m.left + pw + 6}" y="${Y2(t).toFixed(1)}" text-anchor="start" dominant-baseline="middle" fill="#333">${fmt(t)}</text>`);
    parts.push(`<text transform="translate(${W - 12} ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.y2Label ?? '')} (right axis)</text>`);
  }

  (o.vLines ?? []).forEach((v, i) => {
    if (v.x < xa.lo || v.x > xa.hi) return;
    const x = X(v.x).toFixed(1);
    parts.push(`<line x1="${x}" x2="${x}" y1="${m.top}" y2="${m.top + ph}" stroke="#bbb" stroke-dasharray="2 3"/>`);
    parts.push(`<text x="${Number(x) + 3}" y="${m.top + 12 + 14 * (i % 4)}" fill="#777" font-size="11">${esc(v.label)}</text>`);
  });
  for (const h of o.hLines ?? []) {
    const y = yOf(h.right)(h.y).toFixed(1);
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="${h.color ?? '#888'}" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${m.left + pw - 4}" y="${Number(y) - 4}" text-anchor="end" fill="${h.color ?? '#888'}">${esc(h.label)}</text>`);
  }

  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      if (x === null || !finite(y) || (o.yLog && y <= 0)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${X(x).toFixed(1)} ${yOf(s.right)(y).toFixed(1)} `;
      pen = true;
    }
    if (d) parts.push(`<path d="${d.trim()}" fill="none" stroke="${color}" stroke-width="1.8"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>`);
    if (s.markers) {
      for (const [x, y] of s.points) {
        if (x === null || !finite(y) || (o.yLog && y <= 0)) continue;
        parts.push(`<circle cx="${X(x).toFixed(1)}" cy="${yOf(s.right)(y).toFixed(1)}" r="2.8" fill="${color}"/>`);
      }
    }
  });

  // Legend under the plot, four entries a row.
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    const lx = m.left + (i % 4) * (pw / 4);
    const ly = m.top + ph + 52 + Math.floor(i / 4) * 20;
    parts.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2.5"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>`);
    parts.push(`<text x="${lx + 28}" y="${ly}">${esc(s.name)}${s.right ? ' (right axis)' : ''}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

export interface BarSeries {
  name: string;
  values: Array<number | null>;
  color?: string;
}

export interface BarChart {
  /** Drawn at the top of the chart; none when the page captions it itself. */
  title?: string;
  yLabel?: string;
  groups: string[];
  series: BarSeries[];
  note?: string;
  /**
   * Per group, a marking: its bars lighter with a dashed outline, its label followed by `label`
   * and each bar's tooltip by `tip` (e.g. a partial hour beside full ones: not a drop).
   */
  marked?: Array<{ label: string; tip: string } | null>;
  /** Each bar's value written above it when the bars are wide enough (default true). */
  values?: boolean;
  width?: number;
  height?: number;
}

/**
 * Grouped bars: one group per label, one bar per series in each group (a null value leaves a gap),
 * y from 0. Each bar has a tooltip (group, series, value). Group labels are thinned out when the
 * groups are narrow and kept inside the drawing; the legend is under the plot, three entries a row.
 */
export function barChart(o: BarChart): string {
  const W = o.width ?? 860;
  const H = o.height ?? 420;
  const legendRows = Math.ceil(o.series.length / 3);
  const m = { top: topMargin(o.title, o.note), right: 12, bottom: 28 + 20 * legendRows, left: o.yLabel === undefined ? 44 : 64 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom;
  const parts: string[] = [];
  open(W, H, o.title, o.note, parts);
  const ys: number[] = [];
  for (const s of o.series) for (const v of s.values) if (finite(v)) ys.push(v);
  if (ys.length === 0 || o.groups.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#888">no data</text></svg>`);
    return parts.join('\n');
  }
  const ya = linearTicks(0, Math.max(...ys) * 1.1, 5);
  const Y = (y: number): number => m.top + ph - ((y - ya.lo) / (ya.hi - ya.lo || 1)) * ph;
  for (const t of ya.ticks) {
    const y = Y(t).toFixed(1);
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" fill="#333">${fmt(t)}</text>`);
  }
  parts.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  if (o.yLabel !== undefined) parts.push(`<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  const gw = pw / o.groups.length;
  // The bars a group has sit side by side, centred in it; a series keeps its colour throughout.
  const most = Math.max(1, ...o.groups.map((_, gi) => o.series.filter((s) => finite(s.values[gi])).length));
  const bw = Math.min(60, (gw * 0.8) / most);
  // One group label every `step` groups, each at most a group's width of text (about 6.4 px a character).
  const step = Math.max(1, Math.ceil(48 / gw));
  o.groups.forEach((g, gi) => {
    const mark = o.marked?.[gi] ?? null;
    const present = o.series.map((s, si) => [s, si] as const).filter(([s]) => finite(s.values[gi]));
    const gx = m.left + gi * gw + (gw - present.length * bw) / 2;
    present.forEach(([s, si], k) => {
      const v = s.values[gi] as number;
      const color = s.color ?? PALETTE[si % PALETTE.length];
      const x = gx + k * bw;
      const y = Y(v);
      const style = mark ? ` fill-opacity="0.3" stroke="${color}" stroke-dasharray="3 2"` : '';
      parts.push(
        `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${Math.max(0.5, m.top + ph - y).toFixed(1)}" fill="${color}"${style}><title>${esc(`${g} ${s.name}: ${fmt(v)}${mark ? mark.tip : ''}`)}</title></rect>`,
      );
      if (o.values !== false && bw >= 22) parts.push(`<text x="${(x + bw / 2 - 1).toFixed(1)}" y="${(y - 3).toFixed(1)}" text-anchor="middle" font-size="10" fill="#333">${fmt(v)}</text>`);
    });
    if (gi % step !== 0) return;
    const text = `${g}${mark ? mark.label : ''}`;
    const cx = m.left + gi * gw + gw / 2;
    const half = text.length * 3.2;
    const anchor = cx + half > W ? 'end' : cx - half < 0 ? 'start' : 'middle';
    const ax = anchor === 'end' ? W - 2 : anchor === 'start' ? 2 : cx;
    parts.push(`<text x="${ax.toFixed(1)}" y="${m.top + ph + 16}" text-anchor="${anchor}" fill="#333">${esc(text)}</text>`);
  });
  o.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    const lx = m.left + (i % 3) * (pw / 3);
    const ly = m.top + ph + 40 + Math.floor(i / 3) * 20;
    parts.push(`<rect x="${lx.toFixed(1)}" y="${ly - 10}" width="14" height="10" fill="${color}"/>`);
    parts.push(`<text x="${(lx + 20).toFixed(1)}" y="${ly}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}
