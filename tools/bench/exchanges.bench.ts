/**
 * The bid route's caller check (src/exchanges/exchanges.ts, ExchangeGate.identify) per request, for
 * the usual shapes of EXCHANGES_FILE. CPU ns per call from process.cpuUsage. Run:
 * `npm run build:test && node_modules/.bin/node .test-build/tools/bench/exchanges.bench.js` (printed only).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { ExchangeGate, parseExchanges } from '../../src/exchanges/exchanges';
import { readCommandLine } from './cli';

readCommandLine({ name: 'exchanges.bench', usage: 'usage: node .test-build/tools/bench/exchanges.bench.js   (no options; prints ns per call)' });

const TOKENS = Array.from({ length: 8 }, (_, i) => `exchange-${i}-token-0123456789abcdef`);

function gate(doc: unknown): ExchangeGate {
  const { exchanges, problems } = parseExchanges(doc, 'bench');
  if (problems.length > 0) throw new Error(problems.join('; '));
  return new ExchangeGate(exchanges);
}

const ua = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Safari/537.36';
const base: IncomingHttpHeaders = { host: 'bidder.example', 'content-type': 'application/json', 'content-length': '812', 'x-openrtb-version': '2.6', 'user-agent': ua, 'accept-encoding': 'gzip' };

const CASES: Array<{ name: string; gate: ExchangeGate; headers: IncomingHttpHeaders; address: string }> = [
  { name: 'no EXCHANGES_FILE (open)', gate: new ExchangeGate(null), headers: base, address: '203.0.113.7' },
  {
    name: '8 exchanges by token, the last one calls',
    gate: gate({ exchanges: TOKENS.map((token, i) => ({ name: `ex${i}`, token })) }),
    headers: { ...base, 'x-bidder-token': TOKENS[7] },
    address: '203.0.113.7',
  },
  {
    name: '8 exchanges by token + CIDRs (4 ranges each), the last one calls',
    gate: gate({ exchanges: TOKENS.map((token, i) => ({ name: `ex${i}`, token, addresses: [`10.${i}.0.0/16`, `192.0.${i}.0/24`, `2001:db8:${i}::/48`, '203.0.113.0/24'] })) }),
    headers: { ...base, 'x-bidder-token': TOKENS[7] },
    address: '203.0.113.7',
  },
  {
    name: '8 exchanges by CIDRs alone, the last one calls',
    gate: gate({ exchanges: TOKENS.map((_, i) => ({ name: `ex${i}`, addresses: [`10.${i}.0.0/16`, `198.51.${i}.0/24`] })) }),
    headers: base,
    address: '198.51.7.20',
  },
  {
    name: 'refused: 8 token exchanges, a wrong token',
    gate: gate({ exchanges: TOKENS.map((token, i) => ({ name: `ex${i}`, token })) }),
    headers: { ...base, 'x-bidder-token': 'wrong-token-0123456789abcdef' },
    address: '203.0.113.7',
  },
];

function cpuNs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
}

const N = 2_000_000;
let sink = 0;
for (const c of CASES) {
  for (let i = 0; i < 200_000; i++) sink += c.gate.identify(c.headers, c.address);
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t0 = cpuNs();
    for (let i = 0; i < N; i++) sink += c.gate.identify(c.headers, c.address);
    runs.push((cpuNs() - t0) / N);
  }
  runs.sort((a, b) => a - b);
  console.log(`| ${c.name} | ${runs[0].toFixed(1)}–${runs[runs.length - 1].toFixed(1)} | median ${runs[2].toFixed(1)} |`);
}
if (sink === 0.5) console.log(sink);
