// The two HTML reports opened in a real browser (headless Chromium, Debian's package): the load
// test's k6/results/<run>/index.html, written by tools/lib/loadtest-report.js from a small fixture
// of results (no k6 run), and `npm run report -- --html`'s page, made by the real report command
// from Parquet files the shipper wrote from a real bidder's log. Each: no script error, no failed
// load, every chart drawn (rendered with a size, with the marks of each series), and a screenshot
// kept next to the report (index.png, bidder-report.png) for a person to look at.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { after, before, describe, it } from 'node:test';
import Redis from 'ioredis';
import { startTestApp } from '../support/app';
import { frameOf, spawnShipper, untilDrained } from '../shipper/support';
import { Browser, ensureChromium } from './support/browser';
import { fixtureReport, report, soakFixtureReport } from './support/loadtest-fixture';
import { postBid, request } from './support/http';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const NODE = path.join(ROOT, 'node_modules', '.bin', 'node');

interface Chart {
  width: number;
  height: number;
  /** Line series (path, polyline), bars (rect with a title) and single points (circle) with a size. */
  marks: number;
  title: string;
}

/** Every <svg> of the page as the browser laid it out: its size and its drawn marks. */
const CHARTS = `[...document.querySelectorAll('svg')].map((s) => {
  const r = s.getBoundingClientRect();
  const drawn = (e) => { const b = e.getBBox(); return b.width > 0 || b.height > 0; };
  const marks = [...s.querySelectorAll('path, polyline, circle')].filter(drawn).length
    + [...s.querySelectorAll('rect')].filter((e) => e.querySelector('title') && drawn(e)).length;
  const fig = s.closest('figure');
  const cap = fig && fig.querySelector('figcaption');
  return { width: r.width, height: r.height, marks, title: (cap ? cap.textContent : (s.querySelector('text') || {}).textContent || '').trim() };
})`;

/** Rows whose cell count differs from their table's header row (a cell too many draws outside the table). */
const RAGGED_ROWS = `[...document.querySelectorAll('table')].flatMap((t) => {
  const rows = [...t.querySelectorAll('tr')];
  const n = rows[0].children.length;
  return rows.filter((r) => r.children.length !== n).map((r) => r.children.length + ' cells, header ' + n + ': ' + r.textContent.trim().slice(0, 60));
})`;

describe('reports in a browser (headless Chromium)', { timeout: 600_000 }, () => {
  let browser: Browser | null = null;
  let skip = '';

  before(async () => {
    const { bin, reason } = ensureChromium((m) => console.log(m));
    if (!bin) {
      skip = reason;
      return;
    }
    browser = await Browser.launch(bin);
  });

  after(async () => {
    await browser?.close();
  });

  it('the load-test report: no script error, its 3 charts drawn, a screenshot beside it', async (t) => {
    if (!browser) return t.skip(skip);
    const runId = 'browser-test-fixture';
    const dir = path.join(ROOT, 'k6', 'results', runId);
    fs.rmSync(dir, { recursive: true, force: true });
    const rep = fixtureReport(runId);
    const { files } = report.write(dir, rep);
    const svgFiles = files.filter((f) => f.endsWith('.svg'));
    assert.deepEqual(svgFiles.sort(), ['cpu-per-phase.svg', 'latency-over-time.svg', 'throughput-over-time.svg']);

    const problems = await browser.open(`file://${path.join(dir, 'index.html')}`);
    assert.deepEqual(problems, { exceptions: [], errors: [] });
    const charts = await browser.evaluate<Chart[]>(CHARTS);
    assert.equal(charts.length, svgFiles.length, JSON.stringify(charts));
    for (const c of charts) assert.ok(c.width > 100 && c.height > 100, `chart "${c.title}" laid out at ${c.width}x${c.height}`);
    // Latency: p50, p99, p99.9 for each of the two targets; throughput: offered and each target's
    // achieved; CPU: a bar per series and phase.
    const byTitle = (s: string) => charts.find((c) => c.title.startsWith(s));
    assert.ok((byTitle('Latency')?.marks ?? 0) >= 6, JSON.stringify(charts));
    assert.ok((byTitle('Throughput')?.marks ?? 0) >= 3, JSON.stringify(charts));
    assert.ok((byTitle('CPU')?.marks ?? 0) >= 4, JSON.stringify(charts));
    const tables = await browser.evaluate<number>('document.querySelectorAll("table").length');
    assert.ok(tables >= 2, `${tables} tables`);
    assert.deepEqual(await browser.evaluate<string[]>(RAGGED_ROWS), [], 'every table row has as many cells as its header');
    const shot = path.join(dir, 'index.png');
    const size = await browser.screenshot(shot);
    assert.ok(fs.statSync(shot).size > 20_000, 'the screenshot has content');
    console.log(`screenshot: ${path.relative(ROOT, shot)} (${size.width}x${size.height})`);
  });

  it('a soak report: no script error, its memory, Redis and bid log charts drawn with every series, a screenshot', async (t) => {
    if (!browser) return t.skip(skip);
    const runId = 'browser-test-soak-fixture';
    const dir = path.join(ROOT, 'k6', 'results', runId);
    fs.rmSync(dir, { recursive: true, force: true });
    const rep = soakFixtureReport(runId);
    assert.equal(rep.soak.ok, true, JSON.stringify(rep.soak.rss));
    const { files } = report.write(dir, rep);
    const svgFiles = files.filter((f) => f.endsWith('.svg'));
    assert.deepEqual(svgFiles.sort(), ['cpu-per-phase.svg', 'latency-over-time.svg', 'soak-log.svg', 'soak-redis.svg', 'soak-rss.svg', 'throughput-over-time.svg']);

    const problems = await browser.open(`file://${path.join(dir, 'index.html')}`);
    assert.deepEqual(problems, { exceptions: [], errors: [] });
    const charts = await browser.evaluate<Chart[]>(CHARTS);
    assert.equal(charts.length, svgFiles.length, JSON.stringify(charts));
    for (const c of charts) assert.ok(c.width > 100 && c.height > 100, `chart "${c.title}" laid out at ${c.width}x${c.height}`);
    const byTitle = (s: string) => charts.find((c) => c.title.startsWith(s));
    // Two workers, the PM2 daemon and the shipper; Redis and the backlog in it; queued, pending, spilled.
    assert.equal(byTitle('Memory of the processes')?.marks, 4, JSON.stringify(charts));
    assert.equal(byTitle('Redis memory')?.marks, 2, JSON.stringify(charts));
    assert.equal(byTitle('Bid log waiting')?.marks, 3, JSON.stringify(charts));
    const text = await browser.evaluate<string>('document.body.innerText');
    assert.match(text, /The soak passed\./);
    assert.deepEqual(await browser.evaluate<string[]>(RAGGED_ROWS), [], 'every table row has as many cells as its header');
    const shot = path.join(dir, 'index.png');
    const size = await browser.screenshot(shot);
    assert.ok(fs.statSync(shot).size > 20_000, 'the screenshot has content');
    console.log(`screenshot: ${path.relative(ROOT, shot)} (${size.width}x${size.height})`);
  });

  it('`npm run report -- --html`: no script error, its 4 hourly charts drawn, a screenshot beside it', async (t) => {
    if (!browser) return t.skip(skip);
    const dir = path.join(ROOT, '.run', 'browser-test');
    const shipDir = path.join(dir, 'bidlog');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });

    // A real bidder's log: bids, some won and billed through their nurl and burl.
    const app = await startTestApp({ LOG_FLUSH_INTERVAL_MS: '600000' });
    const redisUrl = app.redis.url;
    try {
      let bids = 0;
      for (let i = 0; i < 30; i++) {
        const a = await postBid(app.url, `rep-${i}`);
        assert.ok(a.status === 200 || a.status === 204, a.body);
        if (a.status !== 200) continue;
        bids++;
        const bid = (JSON.parse(a.body) as { seatbid: Array<{ bid: Array<{ nurl: string; burl: string }> }> }).seatbid[0].bid[0];
        if (i % 3 === 2) continue;
        for (const u of [bid.nurl, bid.burl]) {
          const n = await request(u.replace('${AUCTION_PRICE}', '1.25').replace('${AUCTION_CURRENCY}', 'USD').replace('http://127.0.0.1:9', app.url));
          assert.equal(n.status, 204, `${u}: ${n.status} ${n.body}`);
        }
      }
      assert.ok(bids >= 10, `${bids} bids`);
    } finally {
      await app.app.close();
    }
    // The same records again in the three hours before, so the report has hours to chart (its
    // charts need two or more): the log's own records, their times and ids shifted.
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
    try {
      const lines = (await redis.lrangeBuffer('bidlog', 0, -1)).flatMap((f) => zlib.zstdDecompressSync(f).toString('utf8').split('\n').filter((l) => l !== ''));
      assert.ok(lines.length >= 60, `${lines.length} records`);
      for (let h = 1; h <= 3; h++) {
        const shifted = lines.map((l) => {
          const r = JSON.parse(l) as Record<string, unknown>;
          r.ts = (r.ts as number) - h * 3_600_000;
          if (typeof r.id === 'string') r.id = `${r.id}-h${h}`;
          return JSON.stringify(r);
        });
        await redis.rpush('bidlog', frameOf(shifted));
      }
      const shipper = spawnShipper({ REDIS_URL: redisUrl, SHIP_DIR: shipDir });
      try {
        await untilDrained(redis, 'bidlog', 60_000);
      } finally {
        await shipper.stop();
      }
    } finally {
      redis.disconnect();
      await app.close();
    }

    const html = path.join(dir, 'bidder-report.html');
    const r = spawnSync(NODE, [path.join(ROOT, 'dist', 'shipper', 'report.js'), '--dir', shipDir, '--from', '-12h', '--html', html], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);

    const problems = await browser.open(`file://${html}`);
    assert.deepEqual(problems, { exceptions: [], errors: [] });
    assert.deepEqual(await browser.evaluate<string[]>(RAGGED_ROWS), [], 'every table row has as many cells as its header');
    const charts = await browser.evaluate<Chart[]>(CHARTS);
    assert.deepEqual(
      charts.map((c) => c.title),
      ['Bid requests, bids and wins', 'Fill rate and win rate (%)', 'Billed spend (USD)', 'Answer time (ms)'],
    );
    // A bar per series and hour: four hours (five when the run crosses an hour).
    const series = [3, 2, 1, 2];
    charts.forEach((c, i) => {
      assert.ok(c.width > 100 && c.height > 100, `chart "${c.title}" laid out at ${c.width}x${c.height}`);
      assert.ok(c.marks % series[i] === 0 && c.marks >= 4 * series[i] && c.marks <= 5 * series[i], `chart "${c.title}": ${c.marks} bars drawn, expected ${series[i]} a hour`);
    });
    const shot = path.join(dir, 'bidder-report.png');
    const size = await browser.screenshot(shot);
    assert.ok(fs.statSync(shot).size > 20_000, 'the screenshot has content');
    console.log(`screenshot: ${path.relative(ROOT, shot)} (${size.width}x${size.height})`);
  });
});
