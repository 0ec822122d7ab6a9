'use strict';
// The load test's baseline: a bare Fastify app with the bidder's route, doing the least any
// bidder must do. It reads the body as the bidder does (a raw buffer; a missing Content-Type means
// JSON, OpenRTB 2.6 §2.3), parses it with JSON.parse, and answers a fixed bid response that only
// echoes the request id, the first imp's id and media type and the first allowed currency, so the load generator's checks
// accept it. `npm run loadtest` runs it under PM2 in cluster mode with the bidder's worker count
// (ecosystem.config.js beside this file): the bidder's CPU per request divided by this one's is
// the cost of the bidding, logging and Nest, and that ratio survives a noisy machine.
const fastify = require('fastify');
const { readCommandLine } = require('../../../scripts/lib/cli');

readCommandLine({ name: 'baseline', usage: 'usage: PORT=8090 HOST=127.0.0.1 node tools/bench/baseline/server.js   (no options; PM2 runs it for npm run loadtest)' });

const port = Number(process.env.PORT || 8090);
const host = process.env.HOST || '127.0.0.1';

// A realistic response body (~1.5 KB, markup of the imp's media type and notices), serialized once.
// The notice URLs and the markup's impression tracker point at this server's own /t/* routes in the
// bidder's shapes (/t/win?p=<payload>&s=<signature>&price=…, /t/imp?p=…&s=…), with a payload of the
// bidder's usual size, so that the load test's win notices and impression trackers (NOTICE_SHARE)
// reach the baseline exactly as they reach the bidder (tools/test/baseline.spec.ts).
const BASE = `http://${host}:${port}`;
const Q = `p=A${'x'.repeat(199)}&s=${'y'.repeat(22)}`;
const QB = `p=A${'x'.repeat(199)}&s=${'z'.repeat(22)}`;
const IMP = `${BASE}/t/imp?${QB}`;
const CLICK = `${BASE}/t/click?${QB}`;
// Markup per media type in the bidder's shapes (src/bidding/markup.ts, response-json.ts), each with
// the impression tracker at the baseline's own /t/imp, which k6/lib/lean.js finds as it finds the bidder's.
const BANNER =
  `<a href='${CLICK.replace('&', '&amp;')}' target='_blank' rel='noopener'>` +
  "<img src='https://cdn.example/creatives/cr-1/300x250.jpg' width='300' height='250' alt='' style='border:0'></a>" +
  `<img src='${IMP.replace('&', '&amp;')}' width='1' height='1' alt='' style='display:none'>`;
const VAST =
  "<VAST version='4.1'><Ad id='cr-1'><InLine><AdSystem version='1'>baseline</AdSystem><AdTitle>Ad</AdTitle>" +
  `<Impression id='imp'><![CDATA[${IMP}]]></Impression><Creatives><Creative id='cr-1'><Linear><Duration>00:00:15.000</Duration>` +
  "<MediaFiles><MediaFile delivery='progressive' type='video/mp4' width='640' height='360'><![CDATA[https://cdn.example/v/cr-1.mp4]]></MediaFile></MediaFiles>" +
  `<VideoClicks><ClickThrough id='click'><![CDATA[${CLICK}]]></ClickThrough></VideoClicks></Linear></Creative></Creatives></InLine></Ad></VAST>`;
const NATIVE = JSON.stringify({
  ver: '1.2',
  assets: [{ id: 1, title: { text: 'Ad' } }],
  link: { url: CLICK },
  eventtrackers: [{ event: 1, method: 1, url: IMP }],
});
const ADM = { 1: BANNER, 2: VAST, 3: VAST, 4: NATIVE };
const tail = (mtype) =>
  JSON.stringify({
    price: 1.23,
    adid: 'ad-1',
    nurl: `${BASE}/t/win?${Q}&price=\${AUCTION_PRICE}&cur=\${AUCTION_CURRENCY}`,
    burl: `${BASE}/t/bill?${Q}&price=\${AUCTION_PRICE}&cur=\${AUCTION_CURRENCY}`,
    lurl: `${BASE}/t/loss?${Q}&price=\${AUCTION_PRICE}&loss=\${AUCTION_LOSS}`,
    adm: ADM[mtype],
    adomain: ['advertiser.example'],
    cid: 'campaign-1',
    crid: 'cr-1',
    cat: ['IAB19'],
    w: 300,
    h: 250,
    mtype,
  }).slice(1) + '],"seat":"baseline"}],"cur":';
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');
const TAILS = { 1: tail(1), 2: tail(2), 3: tail(3), 4: tail(4) };

function mtypeOf(imp) {
  if (imp.banner) return 1;
  if (imp.video) return 2;
  if (imp.native) return 4;
  return 3;
}

// The response currency must be one the request allows (OpenRTB 2.6 §3.2.1; USD by default).
function currencyOf(body) {
  return Array.isArray(body.cur) && typeof body.cur[0] === 'string' ? JSON.stringify(body.cur[0]) : '"USD"';
}

function bid(request, reply) {
  let body;
  try {
    body = JSON.parse(request.body.toString('utf8'));
  } catch {
    reply.code(400).send({ error: 'malformed JSON' });
    return;
  }
  const imp = body && Array.isArray(body.imp) ? body.imp[0] : null;
  if (!imp || typeof body.id !== 'string') {
    reply.code(400).send({ error: 'invalid request' });
    return;
  }
  reply
    .header('content-type', 'application/json; charset=utf-8')
    .send(`{"id":${JSON.stringify(body.id)},"seatbid":[{"bid":[{"id":"b-1","impid":${JSON.stringify(String(imp.id))},${TAILS[mtypeOf(imp)]}${currencyOf(body)}}`);
}

async function main() {
  // The same server settings as the bidder's (src/app.ts).
  const app = fastify({ logger: false, bodyLimit: 1024 * 1024, keepAliveTimeout: 65_000, return503OnClosing: false, forceCloseConnections: 'idle' });
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, payload, done) => done(null, payload));
  app.post('/openrtb2/bid', bid);
  // Notices and trackers: 204, or the 1x1 GIF for impressions, as the bidder answers them.
  app.get('/t/:event', (request, reply) => {
    if (request.params.event === 'imp') reply.header('content-type', 'image/gif').send(PIXEL);
    else reply.code(204).send();
  });
  app.get('/health/ready', (_req, reply) => reply.send({ ok: true }));
  await app.listen({ port, host });
  if (typeof process.send === 'function') process.send('ready');
  const stop = () => app.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e) => {
  process.stderr.write(`baseline: ${e.stack || e}\n`);
  process.exit(1);
});
