/**
 * Micro-benchmark of the privacy library (src/privacy): the per-request decision with and without
 * consent strings (TC and GPP, cache hit and miss), the redaction of a typical request before it is
 * logged, and the keyed hash of one id beside a `createHmac` object per id. Reports CPU ns per
 * operation (process.cpuUsage, so a busy neighbour inflates wall time but not this). Run: `npm run bench:privacy`; prints, writes nothing.
 */
import { createHmac, randomBytes } from 'node:crypto';
import * as os from 'node:os';
import { PiiHasher } from '../../src/privacy/pii-hasher';
import { PrivacyPolicy } from '../../src/privacy/policy';
import { requestLogJson } from '../../src/privacy/redact';
import { readPrivacySignals } from '../../src/privacy/signals';
import { gppString, OUR_VENDOR, tcString } from '../../test/privacy/consent-strings';
import { readCommandLine } from './cli';

readCommandLine({ name: 'privacy.bench', usage: 'usage: npm run bench:privacy   (no options; prints the figures)' });

function cpuMicros(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}

/** CPU ns per call of fn, after a warm-up; the best of `rounds` runs (the least disturbed by neighbours). */
function measure(fn: (i: number) => void, iterations: number, rounds = 5): number {
  for (let i = 0; i < Math.min(20_000, iterations); i++) fn(i);
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const c0 = cpuMicros();
    for (let i = 0; i < iterations; i++) fn(i);
    best = Math.min(best, ((cpuMicros() - c0) * 1000) / iterations);
  }
  return best;
}

const device = { ua: 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X)', ip: '203.0.113.7', ipv6: '2001:db8:85a3::8a2e:370:7334', ifa: '6d92078a-8246-4ba4-ae5b-76104861e7dc', devicetype: 4, os: 'iOS', geo: { country: 'USA', lat: 40.712776, lon: -74.005974 }, lmt: 0 };
const base = { id: 'r1', imp: [{ id: '1', bidfloor: 0.2, banner: { format: [{ w: 300, h: 250 }] } }], site: { domain: 'news.example', publisher: { id: 'p1' } }, device };

function main(): void {
  const iterations = Number(process.env.BENCH_ITERATIONS ?? 200_000);
  const policy = new PrivacyPolicy(OUR_VENDOR);
  const rows: Array<[string, number, string]> = [];

  const plain = { ...base, user: { id: 'user-123' } };
  const usOnly = { ...base, regs: { gdpr: 0, us_privacy: '1YNN' }, user: { id: 'user-123' } };
  rows.push(['read + decide, no signals', measure(() => policy.decide(readPrivacySignals(plain)), iterations), 'aim < 2000']);
  rows.push(['read + decide, gdpr 0 + us_privacy', measure(() => policy.decide(readPrivacySignals(usOnly)), iterations), 'aim < 2000']);

  const tc = tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4] });
  const withTc = { ...base, regs: { gdpr: 1 }, user: { id: 'user-123', consent: tc } };
  // JSON.parse gives every request its own copy of the string: the cache must hash it each time.
  const tcBodies = Array.from({ length: 1000 }, () => JSON.parse(JSON.stringify(withTc)) as object);
  rows.push([`read + decide, TC string (${tc.length} chars), cache hit`, measure((i) => policy.decide(readPrivacySignals(tcBodies[i % 1000])), iterations), 'aim < 10000']);
  // A string of a realistic length: a third of 1000 vendors with consent.
  const tcLong = tcString({ vendors: Array.from({ length: 1000 }, (_, i) => i + 1).filter((v) => v % 3 === 0 || v === OUR_VENDOR), purposes: [1, 2, 3, 4, 7], largeVendorList: true });
  const longBodies = Array.from({ length: 1000 }, () => JSON.parse(JSON.stringify({ ...withTc, user: { id: 'user-123', consent: tcLong } })) as object);
  rows.push([`read + decide, TC string (${tcLong.length} chars), cache hit`, measure((i) => policy.decide(readPrivacySignals(longBodies[i % 1000])), iterations), 'aim < 10000']);
  const neverPolicy = new PrivacyPolicy(OUR_VENDOR, { cacheKeyChars: 1 });
  rows.push([`read + decide, TC string (${tcLong.length} chars), never cached (decode)`, measure((i) => neverPolicy.decide(readPrivacySignals(longBodies[i % 1000])), iterations / 20), '']);
  // Distinct strings cycling through a cache smaller than their number: every lookup misses and evicts.
  const distinctTc = Array.from({ length: 300 }, (_, i) => tcString({ vendors: [OUR_VENDOR], purposes: [1, 3, 4], cmpId: 100 + i }));
  const missPolicy = new PrivacyPolicy(OUR_VENDOR, { tcfCacheEntries: 100 });
  const tcMissBodies = distinctTc.map((c) => ({ ...base, regs: { gdpr: 1 }, user: { consent: c } }));
  rows.push(['read + decide, TC string, cache miss (decode)', measure((i) => missPolicy.decide(readPrivacySignals(tcMissBodies[i % 300])), iterations / 20), `${new Set(distinctTc).size} distinct strings, cache of 100`]);

  const gpp = gppString({ usnat: { SaleOptOut: 2, SharingOptOut: 2, TargetedAdvertisingOptOut: 2 }, usca: { SaleOptOut: 2 } });
  const withGpp = { ...base, regs: { gpp, gpp_sid: [7] }, user: { id: 'user-123' } };
  const gppBodies = Array.from({ length: 1000 }, () => JSON.parse(JSON.stringify(withGpp)) as object);
  rows.push([`read + decide, GPP string (${gpp.length} chars), cache hit`, measure((i) => policy.decide(readPrivacySignals(gppBodies[i % 1000])), iterations), 'aim < 10000']);
  // GPP strings are not cheap to make distinct (no free-form field): a policy that caches nothing measures the decode.
  const gppMissPolicy = new PrivacyPolicy(OUR_VENDOR, { cacheKeyChars: 1 });
  rows.push(['read + decide, the same GPP string, never cached (decode)', measure((i) => gppMissPolicy.decide(readPrivacySignals(gppBodies[i % 1000])), iterations / 40), 'usnat + usca']);
  const gpp6 = gppString({ uspv1: { Notice: 'Y', OptOutSale: 'N' }, usnat: { SaleOptOut: 2 }, usca: { SaleOptOut: 2 }, usva: { SaleOptOut: 2 }, usco: { SaleOptOut: 2 }, usut: { SaleOptOut: 2 } });
  const gpp6Body = { ...base, regs: { gpp: gpp6, gpp_sid: [7] } };
  rows.push([`read + decide, a 6-section GPP string (${gpp6.length} chars), never cached`, measure(() => gppMissPolicy.decide(readPrivacySignals(gpp6Body)), iterations / 40), 'every US section is read once per string']);

  const hasher = new PiiHasher(randomBytes(32));
  const typical = JSON.stringify({ ...base, user: { id: 'user-123', buyeruid: 'buyer-456', data: [{ id: 'seg', segment: [{ id: '1' }] }], ext: { eids: [{ source: 'id5-sync.com', uids: [{ id: 'ID5*x' }] }] } } });
  const one = JSON.parse(typical) as object;
  rows.push(['requestLogJson, typical request (allowlist; ip, ipv6, ifa, user.id, buyeruid, data, eids, geo)', measure(() => requestLogJson(one, hasher, { keepRawPii: false }), iterations), '3 keyed hashes included']);
  rows.push(['  JSON.stringify of the same request (the raw-PII path)', measure(() => requestLogJson(one, hasher, { keepRawPii: true }), iterations), '']);

  const ids = Array.from({ length: 1000 }, (_, i) => `6d92078a-8246-4ba4-ae5b-${String(i).padStart(12, '0')}`);
  rows.push(['PiiHasher.hash, a 36-char id (crypto.hash twice on the key pads, prepared once)', measure((i) => hasher.hash(ids[i % 1000]), iterations), 'in use']);
  const key = randomBytes(32);
  rows.push(['  node:crypto createHmac per id', measure((i) => createHmac('sha256', key).update(ids[i % 1000]).digest().toString('base64url', 0, 16), iterations), 'the alternative']);

  const lines = [
    `Machine: ${os.cpus()[0]?.model ?? 'cpu'} x${os.cpus().length}; Node ${process.version}; ${new Date().toISOString()}`,
    `CPU ns per operation, best of 5 runs (after a warm-up); ${iterations} iterations per run unless the row says otherwise.`,
    '',
    '| privacy library | CPU ns/op | note |',
    '|---|---:|---|',
    ...rows.map(([name, ns, note]) => `| ${name} | ${ns.toFixed(0)} | ${note} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

main();
