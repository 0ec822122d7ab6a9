/**
 * The public port serves the exchange routes only: the admin routes (metrics, the machine view,
 * the debug routes) do not exist there, whatever the spelling of the request target (percent
 * encodings, case, absolute form, doubled slashes, dot segments, trailing junk). Issue 23, finding 1.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { request, startTestApp, type TestApp } from '../support/app';
import { rawRequest, type RawAnswer } from './raw';

let t: TestApp;
before(async () => {
  t = await startTestApp({ DEBUG_ENDPOINTS: 'true' });
});
after(async () => {
  await t.close();
});

const ADMIN: Array<{ method: 'GET' | 'HEAD' | 'POST'; path: string; body?: string }> = [
  { method: 'GET', path: '/metrics' },
  { method: 'HEAD', path: '/metrics' },
  { method: 'GET', path: '/metrics/cluster' },
  { method: 'GET', path: '/metrics/cluster?by=worker' },
  { method: 'POST', path: '/debug/explain', body: JSON.stringify({ id: 'x', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' } }) },
];

/** Every percent-encoding of one letter at a time, in both hex cases. */
function encodings(path: string): string[] {
  const out: string[] = [];
  for (let i = 1; i < path.length; i++) {
    const c = path[i];
    if (!/[a-z]/i.test(c)) continue;
    const hex = c.charCodeAt(0).toString(16);
    out.push(`${path.slice(0, i)}%${hex}${path.slice(i + 1)}`, `${path.slice(0, i)}%${hex.toUpperCase()}${path.slice(i + 1)}`);
  }
  out.push(path.replace(/[a-z]/gi, (c) => `%${c.charCodeAt(0).toString(16)}`));
  return out;
}

/** The spellings of one target an attacker would try. */
function variants(target: string, port: string): string[] {
  const q = target.indexOf('?');
  const path = q < 0 ? target : target.slice(0, q);
  const query = q < 0 ? '' : target.slice(q);
  const segs = path.split('/').filter((s) => s !== '');
  const out = new Set<string>();
  for (const p of [path, ...encodings(path)]) out.add(p + query);
  for (const p of [path.toUpperCase(), path[0] + path[1].toUpperCase() + path.slice(2)]) out.add(p + query);
  for (const host of ['http://x', 'HTTP://X', `http://127.0.0.1:${port}`, 'https://x']) out.add(host + path + query);
  out.add(`http://x${encodings(path)[0]}${query}`);
  out.add(`//${segs.join('/')}${query}`);
  out.add(`/${segs.join('//')}${query}`);
  out.add(`/./${segs.join('/')}${query}`);
  out.add(`/x/../${segs.join('/')}${query}`);
  out.add(`/t/../${segs.join('/')}${query}`);
  out.add(`/health/../${segs.join('/')}${query}`);
  out.add(`/openrtb2/../${segs.join('/')}${query}`);
  out.add(`/%2e/${segs.join('/')}${query}`);
  out.add(`/x/%2e%2e/${segs.join('/')}${query}`);
  out.add(`/${segs.join('%2f')}${query}`);
  out.add(`/${segs.join('%2F')}${query}`);
  out.add(`%2f${segs.join('/')}${query}`);
  for (const junk of ['/', '/.', ';x', ';', '?', '??', '#x', '%00', '%20', '.', '%23', '/%2e']) out.add(path + junk + query);
  out.add(`${path}${query}${query === '' ? '?' : '&'}x=1`);
  return [...out];
}

/** What an admin route would answer: Prometheus text, the machine view, or an explain document. */
function isAdminAnswer(a: RawAnswer): boolean {
  if (a.status >= 200 && a.status < 300) return true;
  return /# (HELP|TYPE) |bidder_[a-z_]+|machine view|"imps"\s*:/.test(a.body) || /text\/plain; version=0\.0\.4/i.test(a.head);
}

describe('the public port', () => {
  it('the admin port serves every admin route (so that the test below can fail)', async () => {
    for (const r of ADMIN) {
      if (r.method === 'HEAD') continue;
      const a = await rawRequest(t.adminUrl, r.method, r.path, r.body);
      assert.ok(isAdminAnswer(a), `${r.method} ${r.path} on the admin port: ${a.status}`);
    }
  });

  it('answers no admin route under any encoding or form of the request target', async () => {
    const port = new URL(t.url).port;
    const leaked: string[] = [];
    let tried = 0;
    for (const r of ADMIN) {
      for (const target of variants(r.path, port)) {
        const a = await rawRequest(t.url, r.method, target, r.body);
        tried++;
        if (isAdminAnswer(a)) leaked.push(`${r.method} ${target} -> ${a.status}`);
      }
    }
    assert.ok(tried > 150, `tried ${tried} targets`);
    assert.deepEqual(leaked, []);
  });

  it('still serves the exchange routes and the probes', async () => {
    assert.equal((await request(`${t.url}/health/live`, { method: 'GET' })).status, 200);
    assert.equal((await request(`${t.url}/health/ready`, { method: 'GET' })).status, 200);
    const bid = await request(`${t.url}/openrtb2/bid`, {
      body: JSON.stringify({ id: 'p', imp: [{ id: '1', banner: { w: 300, h: 250 } }], site: { domain: 'a.example' } }),
    });
    assert.equal(bid.status, 200);
  });
});
