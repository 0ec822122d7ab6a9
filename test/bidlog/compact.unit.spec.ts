// The compact request fields (src/bidlog/compact.ts) are valid JSON whatever the strings hold, and say what the typed request says.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { requestFields } from '../../src/bidlog/compact';
import { wellFormedJson } from '../../src/bidlog/well-formed';
import { NativeRequestCache, parseBidRequest } from '../../src/openrtb/parse';

function fields(body: object, kept = false): Record<string, unknown> {
  const raw = Buffer.from(JSON.stringify(body));
  const req = parseBidRequest(JSON.parse(raw.toString()), new NativeRequestCache());
  req.userKey = 'key"\\';
  return JSON.parse(wellFormedJson(`{"x":0${requestFields(req, raw, kept)}}`)) as Record<string, unknown>;
}

describe('compact request fields', () => {
  it('quotes, backslashes, controls and lone surrogates in strings: valid JSON, the same strings (a lone surrogate as U+FFFD)', () => {
    const hostile = 'a"b\\c\u0000d\ud800e\u2028😀';
    const f = fields({
      id: 'r',
      cur: ['USD', hostile],
      imp: [{ id: '1', bidfloor: 1.25, bidfloorcur: 'EUR', banner: { format: [{ w: 300, h: 250 }, { w: 728, h: 90 }] }, pmp: { deals: [{ id: hostile }, { id: 'd2' }] } }, { id: '2', video: { mimes: ['video/mp4'], w: 640, h: 360 } }],
      site: { domain: hostile },
      device: { os: hostile, devicetype: 4, geo: { country: 'FRA' } },
      at: 1,
      tmax: 250,
    }, true);
    const wf = hostile.replace('\ud800', '\ufffd');
    assert.equal(String(f.domain).toLowerCase(), wf.toLowerCase());
    assert.equal(String(f.os).toLowerCase(), wf.toLowerCase());
    assert.deepEqual(f.deals, [wf, 'd2']);
    assert.deepEqual(f.sizes, ['300x250', '728x90', '640x360']);
    assert.deepEqual(f.media, ['banner', 'video']);
    assert.deepEqual(f.floors, [1.25, 0]);
    assert.equal(f.imps, 2);
    assert.equal(f.devicetype, 4);
    assert.equal(f.country, 'FRA');
    assert.equal(f.at, 1);
    assert.equal(f.tmax, 250);
    assert.equal(f.user, 'key"\\');
    assert.equal(f.body, true);
    assert.equal(typeof f.bytes, 'number');
  });

  it('whole numbers of every size are written as JSON writes them', () => {
    for (const tmax of [0, 1, 9, 10, 99, 100, 12345, 2 ** 31 - 1]) {
      const f = fields({ id: 'r', imp: [{ id: '1', banner: { w: 300, h: 250 } }], tmax });
      assert.equal(f.tmax, tmax, String(tmax));
    }
  });
});
