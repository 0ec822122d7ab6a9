/**
 * Who may call the bid endpoint (EXCHANGES_FILE), and budget reservations an unbilled flood cannot
 * exhaust: over real HTTP against the app and a real Redis.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ExchangeGate, parseExchanges, UNKNOWN } from '../../src/exchanges/exchanges';
import { readRedisLog, until } from '../log/support';
import { request, startTestApp, type TestApp } from '../support/app';
import { configProblems } from '../support/config';
import { parseProm, sum } from '../support/prom';

const ALPHA = 'alpha-token-0123456789abcdef';
const BETA = 'beta-token-0123456789abcdef';

/** One banner campaign of 10 CPM (each bid may cost $0.01) with a $1 daily budget. */
const CAMPAIGNS = {
  version: 1,
  currency: 'USD',
  campaigns: [
    {
      id: 'daily1',
      adomain: ['daily1.example'],
      cat: ['IAB3'],
      landingUrl: 'https://daily1.example/landing',
      budget: { total: 1000, daily: 1 },
      creatives: [{ id: 'daily1-cr', type: 'banner', price: 10, banner: { w: 300, h: 250, imageUrl: 'https://cdn.daily1.example/a.png' } }],
    },
  ],
};

const EXCHANGES = {
  exchanges: [
    { name: 'alpha', token: ALPHA },
    { name: 'beta', token: BETA, header: 'X-Beta-Key', addresses: ['127.0.0.0/8', '::1'] },
    // Known by address alone, and not from here: loopback callers are never gamma.
    { name: 'gamma', addresses: ['192.0.2.0/24', '2001:db8::/32'] },
  ],
};

interface Bid { id: string; impid: string; price: number; lurl: string; burl: string }

function body(id: string, imps: number): string {
  return JSON.stringify({
    id,
    imp: Array.from({ length: imps }, (_, i) => ({ id: String(i + 1), banner: { w: 300, h: 250 } })),
    site: { domain: 'news.example' },
  });
}

describe('the bid endpoint with EXCHANGES_FILE', () => {
  let t: TestApp;
  let dir: string;
  let seq = 0;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-exchanges-'));
    fs.writeFileSync(path.join(dir, 'campaigns.json'), JSON.stringify(CAMPAIGNS));
    fs.writeFileSync(path.join(dir, 'exchanges.json'), JSON.stringify(EXCHANGES));
    t = await startTestApp({
      CAMPAIGNS_FILE: path.join(dir, 'campaigns.json'),
      EXCHANGES_FILE: path.join(dir, 'exchanges.json'),
      LOG_REDIS_KEY: 'exchanges-log',
      LOG_FLUSH_INTERVAL_MS: '50',
      // The answer's own bound is not what this test is about.
      ANSWER_MAX_BYTES: String(16 * 1024 * 1024),
      LOG_LEVEL: 'error',
      // A stall while the test machine is idle must not shed the next request (issue 23, finding 3).
      SHED_MAX_WAIT_MS: '0',
    });
    await new Promise((r) => setTimeout(r, 400)); // the first budget refresh
  });
  after(async () => {
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  async function bid(headers: Record<string, string>, imps = 1): Promise<{ status: number; bids: Bid[]; text: string }> {
    const r = await request(`${t.url}/openrtb2/bid`, { body: body(`x-${seq++}`, imps), headers: { 'content-type': 'application/json', ...headers } });
    const text = r.body.toString();
    const bids = r.status === 200 ? (JSON.parse(text) as { seatbid: Array<{ bid: Bid[] }> }).seatbid[0].bid : [];
    return { status: r.status, bids, text };
  }

  it('refuses callers that are no configured exchange with a 403 that says why; they reserve nothing', async () => {
    const callers: Array<Record<string, string>> = [{}, { 'x-bidder-token': 'wrong-token-0123456789abcdef' }, { 'x-bidder-token': BETA }, { 'x-beta-key': ALPHA }];
    for (const headers of callers) {
      const r = await bid(headers, 100);
      assert.equal(r.status, 403, `${JSON.stringify(headers)}: ${r.text}`);
      assert.match(r.text, /not a configured exchange/);
    }
    // 40 unknown 100-imp requests would have reserved the whole $1 many times over.
    for (let i = 0; i < 40; i++) assert.equal((await bid({}, 100)).status, 403);
    const ok = await bid({ 'x-bidder-token': ALPHA });
    assert.equal(ok.status, 200, ok.text);
    const beta = await bid({ 'x-beta-key': BETA });
    assert.equal(beta.status, 200, beta.text);
  });

  /**
   * Sends the head of a POST and `first` bytes of its body, the rest `restAfterMs` later (never when
   * null). Resolves with what the server answered, whether the answer came before the whole body
   * was sent, and (`untilClosed`) whether the server closed the connection, at the latest `maxMs`
   * after the start.
   */
  function partialPost(
    headers: Record<string, string>,
    total: number,
    first: number,
    restAfterMs: number | null,
    untilClosed = false,
    maxMs = 2_000,
  ): Promise<{ head: string; body: string; beforeBodySent: boolean; closed: boolean }> {
    const u = new URL(t.url);
    const payload = Buffer.alloc(total, 0x20);
    const start = Buffer.from(body(`slow-${seq++}`, 1));
    start.copy(payload);
    const head = [`POST /openrtb2/bid HTTP/1.1`, 'Host: x', 'Content-Type: application/json', `Content-Length: ${total}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n') + '\r\n\r\n';
    return new Promise((resolve) => {
      let got = '';
      let sentAll = false;
      let answeredBeforeBodySent: boolean | null = null;
      let closed = false;
      let timer: NodeJS.Timeout | undefined;
      const s = net.connect(Number(u.port), u.hostname, () => {
        s.write(head);
        s.write(payload.subarray(0, first));
        if (restAfterMs !== null) {
          timer = setTimeout(() => {
            if (!s.destroyed) s.write(payload.subarray(first), () => (sentAll = true));
          }, restAfterMs);
        }
      });
      const done = (): void => {
        clearTimeout(guard);
        clearTimeout(timer);
        s.destroy();
        const end = got.indexOf('\r\n\r\n');
        resolve({ head: end < 0 ? got : got.slice(0, end), body: end < 0 ? '' : got.slice(end + 4), beforeBodySent: answeredBeforeBodySent ?? false, closed });
      };
      const guard = setTimeout(done, maxMs);
      s.setEncoding('latin1');
      s.on('data', (d: string) => {
        answeredBeforeBodySent ??= !sentAll;
        got += d;
        const end = got.indexOf('\r\n\r\n');
        const m = /content-length: (\d+)/i.exec(got);
        if (!untilClosed && end >= 0 && m !== null && got.length - end - 4 >= Number(m[1])) done();
      });
      s.on('end', () => {
        closed = true;
        done();
      });
      s.on('close', done);
      s.on('error', done);
    });
  }

  it('refuses an unknown caller from its head alone: the 403 comes before its body is sent, and the connection is closed', async () => {
    // 900 KB announced (under BODY_LIMIT_BYTES), 16 KB sent, the rest never: the answer may not wait for the body.
    const slow = await partialPost({}, 900_000, 16_384, null, true);
    assert.match(slow.head, /^HTTP\/1\.1 403 /, `no 403 before the body was whole: ${slow.head || '(no answer within 2 s)'}`);
    assert.match(slow.body, /not a configured exchange/);
    assert.match(slow.head, /\r\nconnection: close/i);
    assert.ok(slow.beforeBodySent);
    // Closed by the server at once, not kept open waiting for the rest (HTTP_REQUEST_TIMEOUT_MS is 3 s).
    assert.ok(slow.closed, 'the server closes the connection');
    // A wrong token sent with a whole 900 KB body at once: a clean 403 to an ordinary client, not a reset.
    const big = Buffer.alloc(900_000, 0x20);
    Buffer.from(body(`big-${seq++}`, 1)).copy(big);
    const r = await request(`${t.url}/openrtb2/bid`, { body: big, headers: { 'content-type': 'application/json', 'x-bidder-token': 'wrong-token-0123456789abcdef' } });
    assert.equal(r.status, 403);
    assert.match(r.body.toString(), /not a configured exchange/);
    // The server is still fine: a known exchange bids on a new connection.
    assert.equal((await bid({ 'x-bidder-token': ALPHA })).status, 200);
  });

  /** A POST with `Expect: 100-continue` whose body goes only after a 100 (as curl and .NET send large ones): everything the server wrote. */
  function expectContinue(headers: Record<string, string>): Promise<string> {
    const u = new URL(t.url);
    const payload = Buffer.from(body(`expect-${seq++}`, 1));
    const head = [`POST /openrtb2/bid HTTP/1.1`, 'Host: x', 'Content-Type: application/json', `Content-Length: ${payload.length}`, 'Expect: 100-continue', 'Connection: close', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)].join('\r\n') + '\r\n\r\n';
    return new Promise((resolve) => {
      let got = '';
      let sent = false;
      const s = net.connect(Number(u.port), u.hostname, () => s.write(head));
      const guard = setTimeout(() => s.destroy(), 2_000);
      s.setEncoding('latin1');
      s.on('data', (d: string) => {
        got += d;
        if (!sent && /^HTTP\/1\.1 100 /.test(got)) {
          sent = true;
          s.write(payload);
        }
      });
      s.on('close', () => {
        clearTimeout(guard);
        resolve(got);
      });
      s.on('error', () => undefined);
    });
  }

  it('with Expect: 100-continue, an unknown caller gets its 403 and no 100 (the body is never asked for); an exchange gets the 100 and bids', async () => {
    const refused = await expectContinue({});
    assert.match(refused, /^HTTP\/1\.1 403 /, `the first thing written: ${refused.slice(0, 80) || '(nothing within 2 s)'}`);
    assert.doesNotMatch(refused, /HTTP\/1\.1 100 /);
    const known = await expectContinue({ 'x-bidder-token': ALPHA });
    assert.match(known, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 200 /, known.slice(0, 80) || '(nothing within 2 s)');
    assert.match(known, /"seatbid"/);
  });

  it('a known exchange sending its body slowly still bids', async () => {
    const slow = await partialPost({ 'x-bidder-token': ALPHA }, 2_000, 100, 300);
    assert.match(slow.head, /^HTTP\/1\.1 200 /, slow.head || '(no answer within 2 s)');
    assert.equal(slow.beforeBodySent, false);
    assert.match(slow.body, /"seatbid"/);
  });

  it('names the exchange in the log records and in the metrics; refusals are counted, not logged', async () => {
    const before = (await readRedisLog(t.redis.url, 'exchanges-log')).records.length;
    const a = await bid({ 'x-bidder-token': ALPHA });
    assert.equal(a.status, 200);
    const id = `x-${seq - 1}`;
    assert.equal((await bid({})).status, 403);
    let records: Array<Record<string, unknown>> = [];
    await until('the records of the accepted request', async () => {
      records = (await readRedisLog(t.redis.url, 'exchanges-log')).records.filter((r) => r.id === id);
      return records.length === 2;
    });
    for (const r of records) assert.equal(r.exchange, 'alpha', JSON.stringify(r));
    const all = (await readRedisLog(t.redis.url, 'exchanges-log')).records;
    assert.ok(all.every((r) => r.type !== 'request' || r.exchange === 'alpha' || r.exchange === 'beta'), 'no refused request in the bid log');
    assert.ok(all.length > before);
    const prom = parseProm((await request(`${t.adminUrl}/metrics`, { method: 'GET' })).body.toString());
    assert.ok(sum(prom, 'bidder_exchange_requests_total', { exchange: 'alpha' }) >= 2);
    assert.ok(sum(prom, 'bidder_exchange_requests_total', { exchange: 'unknown' }) >= 45);
    assert.equal(sum(prom, 'bidder_exchange_requests_total', { exchange: 'open' }), 0);
  });

  it("one exchange's unbilled flood leaves the others budget; its loss notices give its reservations back", async () => {
    // Four 100-imp requests from alpha, never billed: $4 of bids against a $1 day if nothing bounds them.
    const flood: Bid[] = [];
    for (let i = 0; i < 4; i++) flood.push(...(await bid({ 'x-bidder-token': ALPHA }, 100)).bids);
    assert.ok(flood.length > 0, 'alpha bids at first');
    const blocked = await bid({ 'x-bidder-token': ALPHA });
    assert.equal(blocked.status, 204, 'alpha has used its share');
    // beta still bids: alpha's unbilled bids hold at most BUDGET_SOURCE_PERCENT (50 %) of the lease.
    const b = await bid({ 'x-beta-key': BETA });
    assert.equal(b.status, 200, `beta is starved by alpha's flood: ${b.status}`);
    // The exchange reports alpha's bids lost: their reservations go back at once (not after BUDGET_WINDOW_MS).
    for (const f of flood) {
      const u = new URL(f.lurl.replace('${AUCTION_PRICE}', '').replace('${AUCTION_LOSS}', '102'));
      assert.equal((await request(`${t.url}${u.pathname}${u.search}`, { method: 'GET' })).status, 204);
    }
    const t0 = Date.now();
    let again = false;
    while (Date.now() - t0 < 2_000 && !again) {
      again = (await bid({ 'x-bidder-token': ALPHA })).status === 200;
      if (!again) await new Promise((r) => setTimeout(r, 50));
    }
    assert.ok(again, 'alpha still blocked 2 s after its bids were reported lost');
  });
});

describe('exchange checks (unit)', () => {
  const gate = new ExchangeGate(parseExchanges(EXCHANGES, 'test').exchanges);

  it('a token, a token from an allowed address, an address alone', () => {
    assert.equal(gate.identify({ 'x-bidder-token': ALPHA }, '10.1.2.3'), 1);
    assert.equal(gate.identify({ 'x-beta-key': BETA }, '127.0.0.1'), 2);
    assert.equal(gate.identify({ 'x-beta-key': BETA }, '::1'), 2);
    assert.equal(gate.identify({ 'x-beta-key': BETA }, '::ffff:127.0.0.1'), 2, 'an IPv4-mapped IPv6 peer');
    assert.equal(gate.identify({ 'x-beta-key': BETA }, '10.1.2.3'), UNKNOWN, "beta's token from elsewhere");
    assert.equal(gate.identify({}, '192.0.2.77'), 3);
    assert.equal(gate.identify({}, '2001:db8::5'), 3);
    assert.equal(gate.identify({}, '192.0.3.1'), UNKNOWN);
    assert.equal(gate.identify({}, undefined), UNKNOWN);
    assert.equal(gate.identify({ 'x-bidder-token': ALPHA.slice(0, -1) }, '10.1.2.3'), UNKNOWN);
    // The cache answers a repeated address the same way.
    for (let i = 0; i < 3; i++) assert.equal(gate.identify({}, '192.0.2.77'), 3);
    for (let i = 0; i < 3; i++) assert.equal(gate.identify({ 'x-beta-key': BETA }, '10.1.2.3'), UNKNOWN);
  });

  it('lossNotices: true, false or "learned", "learned" when not given', () => {
    const doc = { exchanges: [{ name: 'a', token: ALPHA, lossNotices: true }, { name: 'b', token: BETA, lossNotices: false }, { name: 'c', addresses: ['::1'], lossNotices: 'learned' }, { name: 'd', addresses: ['::1'] }] };
    const { exchanges, problems } = parseExchanges(doc, 'test');
    assert.deepEqual(problems, []);
    assert.deepEqual(
      exchanges.map((e) => e.lossNotices),
      [true, false, 'learned', 'learned'],
    );
  });

  it('without EXCHANGES_FILE every caller is the source "open"', () => {
    const open = new ExchangeGate(null);
    assert.equal(open.identify({}, undefined), 0);
    assert.deepEqual(open.names, ['open']);
  });

  it('a bad EXCHANGES_FILE stops the start naming the entry', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-exchanges-bad-'));
    try {
      const cases: Array<[unknown, RegExp]> = [
        [{ exchanges: [] }, /at least one entry/],
        [{ exchanges: [{ name: 'Bad Name', token: ALPHA }] }, /exchanges\[0\]\.name/],
        [{ exchanges: [{ name: 'a', token: 'short' }] }, /exchanges\[0\] \(a\)\.token: expected 16/],
        [{ exchanges: [{ name: 'a', addresses: ['10.0.0.0/33'] }] }, /addresses/],
        [{ exchanges: [{ name: 'a' }] }, /give "addresses", "token" or both/],
        [{ exchanges: [{ name: 'a', token: ALPHA }, { name: 'a', token: BETA }] }, /listed twice/],
        [{ exchanges: [{ name: 'a', token: ALPHA, lossNotices: 'yes' }] }, /exchanges\[0\] \(a\)\.lossNotices: expected true \(it sends loss notices\), false \(it sends none\) or "learned" \(the default\), not "yes"/],
      ];
      for (const [doc, re] of cases) {
        const f = path.join(dir, 'x.json');
        fs.writeFileSync(f, JSON.stringify(doc));
        const problems = configProblems({ EXCHANGES_FILE: f });
        assert.ok(problems.some((p) => re.test(p)), `${JSON.stringify(doc)}: ${problems.join('; ')}`);
      }
      assert.ok(configProblems({ EXCHANGES_FILE: path.join(dir, 'missing.json') }).some((p) => /EXCHANGES_FILE=.*missing\.json/.test(p)));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
