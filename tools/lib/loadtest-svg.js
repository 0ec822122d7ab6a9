'use strict';
// A small SVG line-chart writer for the load-test report: no dependencies, no network, readable
// in any browser or image viewer.

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];

function esc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function fmt(v) {
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toFixed(1)}k`;
  if (a >= 100) return String(Math.round(v));
  if (a >= 1) return String(+v.toFixed(2));
  return String(+v.toPrecision(2));
}

/** About `n` round tick values covering [lo, hi]. */
function linearTicks(lo, hi, n = 6) {
  if (hi <= lo) hi = lo + 1;
  const raw = (hi - lo) / n;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) || 10 * mag;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(+t.toPrecision(12));
  return { ticks, lo: Math.min(lo, ticks[0]), hi: Math.max(hi, ticks[ticks.length - 1]) };
}

/** 1-2-5 ticks for a log axis covering [lo, hi] (both > 0). */
function logTicks(lo, hi) {
  const ticks = [];
  let e = Math.floor(Math.log10(lo));
  for (;;) {
    for (const m of [1, 2, 5]) {
      const t = m * 10 ** e;
      if (t >= lo / 2.0001 && t <= hi * 2.0001) ticks.push(+t.toPrecision(6));
    }
    if (10 ** e > hi) break;
    e++;
  }
  const first = ticks.filter((t) => t <= lo).pop() || ticks[0];
  const last = ticks.find((t) => t >= hi) || ticks[ticks.length - 1];
  return { ticks: ticks.filter((t) => t >= first && t <= last), lo: first, hi: last };
}

/**
 * @param {object} o
 * @param {string} o.title
 * @param {string} o.xLabel
 * @param {string} o.yLabel
 * @param {{name: string, points: [number, number|null][], color?: string, dash?: boolean, markers?: boolean}[]} o.series
 * @param {boolean} [o.yLog]
 * @param {{y: number, label: string, color?: string, right?: boolean}[]} [o.hLines]
 * @param {{x: number, label: string}[]} [o.vLines] e.g. phase changes
 * @param {string} [o.note] small text under the title
 * @param {string} [o.y2Label] the right axis's label: series and hLines with `right: true` are
 *   drawn on it, a scale of their own (a small figure beside a large one, with its bound)
 */
function lineChart(o) {
  const W = o.width || 860;
  const H = o.height || 420;
  const rightSeries = o.series.filter((s) => s.right);
  const hasRight = rightSeries.length > 0 || (o.hLines || []).some((h) => h.right);
  const m = { top: o.note ? 62 : 46, right: hasRight ? 64 : 24, bottom: 52, left: 64 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom - 22 * Math.ceil(o.series.length / 4);
  const xs = [];
  const ys = [];
  const ys2 = [];
  for (const s of o.series) {
    for (const [x, y] of s.points) {
      if (x === null || y === null || y === undefined || !Number.isFinite(y)) continue;
      if (o.yLog && y <= 0) continue;
      xs.push(x);
      (s.right ? ys2 : ys).push(y);
    }
  }
  for (const h of o.hLines || []) (h.right ? ys2 : ys).push(h.y);
  if (ys.length === 0) ys.push(0);
  const parts = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">${esc(o.title)}</text>`);
  if (o.note) parts.push(`<text x="${W / 2}" y="40" text-anchor="middle" fill="#555">${esc(o.note)}</text>`);
  if (xs.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#888">no data</text></svg>`);
    return parts.join('\n');
  }
  const xa = linearTicks(Math.min(...xs), Math.max(...xs), 8);
  let ya;
  if (o.yLog) ya = logTicks(Math.min(...ys), Math.max(...ys));
  else ya = linearTicks(Math.min(0, ...ys), Math.max(...ys) * 1.05, 6);
  const X = (x) => m.left + ((x - xa.lo) / (xa.hi - xa.lo || 1)) * pw;
  const Y = o.yLog
    ? (y) => m.top + ph - ((Math.log10(y) - Math.log10(ya.lo)) / (Math.log10(ya.hi) - Math.log10(ya.lo) || 1)) * ph
    : (y) => m.top + ph - ((y - ya.lo) / (ya.hi - ya.lo || 1)) * ph;
  // The right axis (linear): its own ticks, labels right of the plot.
  const ya2 = hasRight ? linearTicks(Math.min(0, ...ys2), Math.max(0, ...ys2) * 1.05 || 1, 6) : null;
  const Y2 = ya2 ? (y) => m.top + ph - ((y - ya2.lo) / (ya2.hi - ya2.lo || 1)) * ph : Y;
  const yOf = (right) => (right ? Y2 : Y);

  // Grid and axes.
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
    parts.push(`<text transform="translate(${W - 12} ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.y2Label || '')} (right axis)</text>`);
  }

  (o.vLines || []).forEach((v, i) => {
    if (v.x < xa.lo || v.x > xa.hi) return;
    const x = X(v.x).toFixed(1);
    parts.push(`<line x1="${x}" x2="${x}" y1="${m.top}" y2="${m.top + ph}" stroke="#bbb" stroke-dasharray="2 3"/>`);
    parts.push(`<text x="${Number(x) + 3}" y="${m.top + 12 + 14 * (i % 4)}" fill="#777" font-size="11">${esc(v.label)}</text>`);
  });
  for (const h of o.hLines || []) {
    const y = yOf(h.right)(h.y).toFixed(1);
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="${h.color || '#888'}" stroke-dasharray="6 4"/>`);
    parts.push(`<text x="${m.left + pw - 4}" y="${Number(y) - 4}" text-anchor="end" fill="${h.color || '#888'}">${esc(h.label)}</text>`);
  }

  o.series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    let d = '';
    let pen = false;
    for (const [x, y] of s.points) {
      const ok = x !== null && y !== null && y !== undefined && Number.isFinite(y) && (!o.yLog || y > 0);
      if (!ok) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'}${X(x).toFixed(1)} ${yOf(s.right)(y).toFixed(1)} `;
      pen = true;
    }
    if (d) {
      parts.push(`<path d="${d.trim()}" fill="none" stroke="${color}" stroke-width="1.8"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>`);
    }
    if (s.markers) {
      for (const [x, y] of s.points) {
        if (x === null || y === null || !Number.isFinite(y) || (o.yLog && y <= 0)) continue;
        parts.push(`<circle cx="${X(x).toFixed(1)}" cy="${yOf(s.right)(y).toFixed(1)}" r="2.8" fill="${color}"/>`);
      }
    }
  });

  // Legend under the plot, four entries a row.
  o.series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const lx = m.left + (i % 4) * (pw / 4);
    const ly = m.top + ph + 52 + Math.floor(i / 4) * 20;
    parts.push(`<line x1="${lx}" x2="${lx + 22}" y1="${ly - 4}" y2="${ly - 4}" stroke="${color}" stroke-width="2.5"${s.dash ? ' stroke-dasharray="5 3"' : ''}/>`);
    parts.push(`<text x="${lx + 28}" y="${ly}">${esc(s.name)}${s.right ? ' (right axis)' : ''}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/**
 * Grouped bars: one group per label, one bar per series in each group (a null value leaves a gap).
 * @param {object} o
 * @param {string} o.title
 * @param {string} o.yLabel
 * @param {string[]} o.groups
 * @param {{name: string, values: (number|null)[], color?: string}[]} o.series
 * @param {string} [o.note]
 */
function barChart(o) {
  const W = o.width || 860;
  const H = o.height || 420;
  const m = { top: o.note ? 62 : 46, right: 24, bottom: 70, left: 64 };
  const pw = W - m.left - m.right;
  const ph = H - m.top - m.bottom - 22 * Math.ceil(o.series.length / 3);
  const parts = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  parts.push(`<rect width="${W}" height="${H}" fill="#fff"/>`);
  parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">${esc(o.title)}</text>`);
  if (o.note) parts.push(`<text x="${W / 2}" y="40" text-anchor="middle" fill="#555">${esc(o.note)}</text>`);
  const ys = [];
  for (const s of o.series) for (const v of s.values) if (v !== null && v !== undefined && Number.isFinite(v)) ys.push(v);
  if (ys.length === 0 || o.groups.length === 0) {
    parts.push(`<text x="${W / 2}" y="${H / 2}" text-anchor="middle" fill="#888">no data</text></svg>`);
    return parts.join('\n');
  }
  const ya = linearTicks(0, Math.max(...ys) * 1.1, 6);
  const Y = (y) => m.top + ph - ((y - ya.lo) / (ya.hi - ya.lo || 1)) * ph;
  for (const t of ya.ticks) {
    const y = Y(t).toFixed(1);
    parts.push(`<line x1="${m.left}" x2="${m.left + pw}" y1="${y}" y2="${y}" stroke="#e5e5e5"/>`);
    parts.push(`<text x="${m.left - 6}" y="${y}" text-anchor="end" dominant-baseline="middle" fill="#333">${fmt(t)}</text>`);
  }
  parts.push(`<rect x="${m.left}" y="${m.top}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
  parts.push(`<text transform="translate(16 ${m.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(o.yLabel)}</text>`);
  const gw = pw / o.groups.length;
  // The bars a group has sit side by side, centred in it; a series keeps its colour throughout.
  const most = Math.max(1, ...o.groups.map((_, gi) => o.series.filter((s) => Number.isFinite(s.values[gi])).length));
  const bw = Math.min(60, (gw * 0.8) / most);
  o.groups.forEach((g, gi) => {
    const present = o.series.map((s, si) => [s, si]).filter(([s]) => Number.isFinite(s.values[gi]));
    const gx = m.left + gi * gw + (gw - present.length * bw) / 2;
    present.forEach(([s, si], k) => {
      const v = s.values[gi];
      const color = s.color || PALETTE[si % PALETTE.length];
      const x = gx + k * bw;
      const y = Y(v);
      parts.push(`<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${Math.max(1, bw - 2).toFixed(1)}" height="${(m.top + ph - y).toFixed(1)}" fill="${color}"><title>${esc(`${s.name}: ${fmt(v)}`)}</title></rect>`);
      if (bw >= 22) parts.push(`<text x="${(x + bw / 2 - 1).toFixed(1)}" y="${(y - 3).toFixed(1)}" text-anchor="middle" font-size="10" fill="#333">${fmt(v)}</text>`);
    });
    parts.push(`<text x="${(m.left + gi * gw + gw / 2).toFixed(1)}" y="${m.top + ph + 16}" text-anchor="middle" fill="#333">${esc(g)}</text>`);
  });
  o.series.forEach((s, i) => {
    const color = s.color || PALETTE[i % PALETTE.length];
    const lx = m.left + (i % 3) * (pw / 3);
    const ly = m.top + ph + 46 + Math.floor(i / 3) * 20;
    parts.push(`<rect x="${lx}" y="${ly - 10}" width="14" height="10" fill="${color}"/>`);
    parts.push(`<text x="${lx + 20}" y="${ly}">${esc(s.name)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

module.exports = { lineChart, barChart, PALETTE };
