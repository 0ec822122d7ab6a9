// The bid log report's page as a person sees it at 1,400 px (headless Chromium): no horizontal
// overflow, every table within the window, every chart label inside its drawing; per-hour bars even
// for one hour, and a partial hour marked (lighter bars, its minutes in the label) so that it does
// not read as a traffic drop.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { emptyFigures, type Figures, type Report } from '../../src/shipper/report-data';
import { renderHtml } from '../../src/shipper/report-html';
import { Browser, ensureChromium } from './support/browser';

const WIDTH = 1400;

/** Figures as a busy host's, with numbers as wide as they get. */
function busy(scale: number): Figures {
  return {
    ...emptyFigures(),
    requests: Math.round(12_345_678 * scale),
    answeredWithBid: Math.round(4_567_890 * scale),
    fillRate: 0.37,
    noBids: Math.round(7_777_788 * scale),
    errors: 1234,
    bids: Math.round(5_123_456 * scale),
    wins: Math.round(1_234_567 * scale),
    winRate: 0.241,
    losses: 3_210_000,
    impressions: Math.round(1_200_000 * scale),
    clicks: 12_345,
    clicksWithoutImpression: 17,
    ctr: 0.0103,
    billed: Math.round(1_190_000 * scale),
    money: [{ cur: 'USD', spend: 12345.6789 * scale, ecpm: 1.234 }],
    answerMs: { count: 5_000_000, p50: 1.23, p90: 4.56, p99: 12.3, max: 1234.5 },
  };
}

function report(hours: Array<{ hour: string; scale: number }>, first: string, last: string): Report {
  return {
    dir: '/var/lib/bidder/bidlog',
    from: null,
    to: null,
    files: 42,
    records: 123_456_789,
    first,
    last,
    totals: busy(hours.length),
    hours: hours.map((h) => ({ hour: h.hour, ...busy(h.scale) })),
    campaigns: [{ cid: 'cmp-0001-a-long-campaign-id', bids: 5_123_456, avgBidPrice: 1.234, wins: 1_234_567, winRate: 0.24, losses: 3_210_000, impressions: 1_200_000, clicks: 12_345, clicksWithoutImpression: 17, ctr: 0.0103, billed: 1_190_000, money: [{ cur: 'USD', spend: 12345.6789, ecpm: 1.234 }] }],
    reasons: [{ status: 204, reason: 'no_candidates', count: 7_000_000 }],
    types: { request: 12_345_678, response: 12_345_678 },
    repeats: 12,
  };
}

/** What overflows at the window's width: the page, tables, and chart labels outside their svg. */
const LAYOUT = `(() => {
  const page = document.documentElement.scrollWidth;
  const tables = [...document.querySelectorAll('table')].map((t) => Math.ceil(t.getBoundingClientRect().right));
  const clipped = [...document.querySelectorAll('svg')].flatMap((s) => {
    const box = s.getBoundingClientRect();
    return [...s.querySelectorAll('text')].filter((t) => {
      const r = t.getBoundingClientRect();
      return r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5;
    }).map((t) => t.textContent);
  });
  const charts = [...document.querySelectorAll('svg')].map((s) => ({
    bars: [...s.querySelectorAll('rect')].filter((r) => r.querySelector('title')).length,
    partial: [...s.querySelectorAll('rect title')].filter((t) => /partial hour/.test(t.textContent)).length,
  }));
  return { page, tables, clipped, charts };
})()`;

interface Layout {
  page: number;
  tables: number[];
  clipped: string[];
  charts: Array<{ bars: number; partial: number }>;
}

describe('the bid log report at 1,400 px (headless Chromium)', { timeout: 120_000 }, () => {
  let browser: Browser | null = null;
  let skip = '';
  let dir = '';

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'report-layout-'));
    const { bin, reason } = ensureChromium((m) => console.log(m));
    if (!bin) {
      skip = reason;
      return;
    }
    browser = await Browser.launch(bin);
    await browser.send('Emulation.setDeviceMetricsOverride', { width: WIDTH, height: 900, deviceScaleFactor: 1, mobile: false });
  });
  after(async () => {
    await browser?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function layout(r: Report, name: string): Promise<Layout> {
    const file = path.join(dir, `${name}.html`);
    fs.writeFileSync(file, renderHtml(r));
    const problems = await browser!.open(`file://${file}`);
    assert.deepEqual(problems, { exceptions: [], errors: [] });
    return browser!.evaluate<Layout>(LAYOUT);
  }

  it('three hours, the first and the last partial: nothing wider than the window, no label clipped, partial hours marked', async (t) => {
    if (!browser) return t.skip(skip);
    const l = await layout(
      report(
        [
          { hour: '2026-07-15 10:00', scale: 0.4 },
          { hour: '2026-07-15 11:00', scale: 1 },
          { hour: '2026-07-15 12:00', scale: 0.1 },
        ],
        '2026-07-15T10:34:00.000Z',
        '2026-07-15T12:05:00.000Z',
      ),
      'three-hours',
    );
    assert.ok(l.page <= WIDTH, `the page is ${l.page} px wide`);
    for (const right of l.tables) assert.ok(right <= WIDTH, `a table ends at ${right} px`);
    assert.deepEqual(l.clipped, [], 'chart labels outside their drawing');
    assert.equal(l.charts.length, 4);
    // Requests/bids/wins: 3 series x 3 hours, of which the first and the last hour partial.
    assert.deepEqual(l.charts[0], { bars: 9, partial: 6 });
    const text = await browser.evaluate<string>('document.body.innerText');
    assert.match(text, /2026-07-15 10:00\s+\(26 min\)/);
    assert.match(text, /2026-07-15 12:00\s+\(5 min\)/);
  });

  it('a single hour: its charts are drawn (bars), marked partial', async (t) => {
    if (!browser) return t.skip(skip);
    const l = await layout(report([{ hour: '2026-07-15 10:00', scale: 0.4 }], '2026-07-15T10:34:00.000Z', '2026-07-15T10:59:00.000Z'), 'one-hour');
    assert.ok(l.page <= WIDTH, `the page is ${l.page} px wide`);
    assert.deepEqual(l.clipped, []);
    assert.equal(l.charts.length, 4);
    assert.deepEqual(l.charts[0], { bars: 3, partial: 3 });
  });
});
