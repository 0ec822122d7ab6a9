import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as zlib from 'node:zlib';
import { decompressFrame, splitLines } from '../../src/bidlog/reader';
import { compressFrame } from '../../src/log/frame';
import { LogBuffer } from '../../src/log/log-buffer';
import { headBytes, lineHead, lineParts, rawText } from '../../src/log/log-line';
import { lineText } from '../support/log-line';
import type { LogRecord } from '../../src/bidlog/records';
import { wellFormedJson, wellFormedJsonBytes } from '../../src/bidlog/well-formed';

function line(head: string, tail: string | null): string {
  return head + (tail ?? '') + '}';
}

describe('log line encoding', () => {
  it('starts with ts, type, worker, host, name, then the record fields in order', () => {
    const head = lineHead(1700000000123, '"w1"', '"host-a"', { type: 'response', id: 'r-1', name: 'pub', status: 204, nbr: 2, missing: undefined }, null);
    const rec = JSON.parse(line(head, null)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(rec), ['ts', 'type', 'worker', 'host', 'name', 'id', 'status', 'nbr']);
    assert.deepEqual(rec, { ts: 1700000000123, type: 'response', worker: 'w1', host: 'host-a', name: 'pub', id: 'r-1', status: 204, nbr: 2 });
  });

  it("never lets a record override the service's own fields", () => {
    const head = lineHead(5, '"w"', '"h"', { type: 'win', id: 'x', name: 'p', ts: 1, worker: 'evil', host: 'elsewhere' }, null);
    const rec = JSON.parse(line(head, null)) as Record<string, unknown>;
    assert.equal(rec.ts, 5);
    assert.equal(rec.worker, 'w');
    assert.equal(rec.host, 'h');
    assert.equal(head.match(/"host"/g)?.length, 1);
    assert.equal(head.match(/"ts"/g)?.length, 1);
  });

  it('escapes strings (quotes, newlines, unicode) and keeps a null name as null', () => {
    const head = lineHead(1, '"w"', '"h"', { type: 'request', id: 'a"b\nc', name: null as unknown as string, note: 'é\u2028😀' }, null);
    const text = line(head, null);
    assert.ok(!text.includes('\n'));
    assert.deepEqual(JSON.parse(text), { ts: 1, type: 'request', worker: 'w', host: 'h', name: null, id: 'a"b\nc', note: 'é\u2028😀' });
  });

  it('embeds a raw JSON text as is, made single-line', () => {
    const raw = '{\r\n  "id": "q1",\n  "imp": [ { "id": "1" } ],\r  "s": "a\\nb"\n}\n';
    const head = lineHead(9, '"w"', '"h"', { type: 'request', id: 'q1', name: 'p' }, 'req');
    const text = line(head, rawText(raw));
    assert.ok(!/[\r\n]/.test(text));
    const rec = JSON.parse(text) as { req: unknown };
    assert.deepEqual(rec.req, JSON.parse(raw));
    assert.equal(rawText('{"a":1}'), '{"a":1}');
    assert.equal(rawText(''), 'null');
  });
});

describe('LogBuffer', () => {
  it('keeps whole lines across chunks, counts records and UTF-8 bytes', () => {
    const b = new LogBuffer(64);
    const expected: string[] = [];
    for (let i = 0; i < 200; i++) {
      const head = lineHead(i, '"w"', '"h"', { type: 'request', id: `id-${i}`, name: i % 3 === 0 ? 'é😀' : 'p' }, 'req');
      const tail = i % 7 === 0 ? '{"big":"' + 'x'.repeat(100) + '"}' : '{}';
      b.append(head, tail);
      expected.push(line(head, tail));
    }
    assert.equal(b.records, 200);
    const bytes = expected.reduce((n, l) => n + Buffer.byteLength(l) + 1, 0);
    assert.equal(b.bytes, bytes);
    const batches = b.take(1000);
    assert.equal(b.records, 0);
    assert.equal(b.bytes, 0);
    assert.ok(batches.length > 1);
    const text = Buffer.concat(batches.flatMap((x) => x.chunks.map((c) => c.data))).toString('utf8');
    assert.deepEqual(splitLines(text), expected);
    for (const batch of batches) {
      const t = Buffer.concat(batch.chunks.map((c) => c.data)).toString('utf8');
      assert.ok(t.endsWith('\n'));
      assert.equal(splitLines(t).length, batch.records);
      assert.equal(Buffer.byteLength(t), batch.bytes);
      // at most one chunk over the limit
      assert.ok(batch.bytes <= 1000 || batch.chunks.length === 1 || batch.bytes - batch.chunks[batch.chunks.length - 1].data.length <= 1000);
    }
    assert.deepEqual(b.take(1000), []);
  });
});

describe('LogBuffer, tails given as bytes', () => {
  it('copies UTF-8 bytes as they are, turns CR and LF into spaces only when asked, writes null for none', () => {
    const b = new LogBuffer(256);
    const head = lineHead(1, '"w"', '"h"', { type: 'request', id: 'q', name: 'p' }, 'req');
    const pretty = '{\r\n  "id": "q",\n  "s": "é😀\\n"\r}\n';
    b.append(head, Buffer.from(pretty), true);
    b.append(head, Buffer.from('{"id":"q","s":"✓"}'), false);
    b.append(head, Buffer.alloc(0), false);
    // Long enough to need a chunk of its own.
    const big = JSON.stringify({ id: 'q', pad: 'ü'.repeat(400) });
    b.append(head, Buffer.from(big), false);
    const text = Buffer.concat(b.take(1 << 20).flatMap((x) => x.chunks.map((c) => c.data))).toString('utf8');
    const lines = splitLines(text);
    assert.deepEqual(lines, [
      line(head, pretty.replace(/[\r\n]/g, ' ')),
      line(head, '{"id":"q","s":"✓"}'),
      line(head, 'null'),
      line(head, big),
    ]);
    assert.deepEqual((JSON.parse(lines[0]) as { req: unknown }).req, JSON.parse(pretty));
  });
});

describe('zstd frames', () => {
  it('one frame per batch, readable by plain zlib.zstdDecompressSync, content size in the header', async () => {
    const b = new LogBuffer(16 * 1024);
    for (let i = 0; i < 3000; i++) b.append(lineHead(i, '"w"', '"h"', { type: 'response', id: `r${i}`, name: 'p', status: 204 }, null), null);
    const [batch] = b.take(1 << 30);
    const frame = await compressFrame(batch.chunks, batch.bytes);
    assert.equal(frame.readUInt32LE(0), 0xfd2fb528);
    // Frame_Header_Descriptor: Frame_Content_Size_flag (bits 7-6) set, or Single_Segment_flag.
    const fhd = frame[4];
    assert.ok(fhd >> 6 !== 0 || (fhd & 0x20) !== 0, 'content size present');
    const plain = zlib.zstdDecompressSync(frame);
    assert.equal(plain.length, batch.bytes);
    const lines = splitLines(decompressFrame(frame));
    assert.equal(lines.length, 3000);
    assert.equal((JSON.parse(lines[2999]) as { id: string }).id, 'r2999');
    assert.ok(frame.length * 5 < batch.bytes, 'compresses');
  });
});

describe('well-formed lines (an escaped lone surrogate becomes U+FFFD)', () => {
  const cases: Array<[string, string]> = [
    ['"a\\ud800b"', '"a\ufffdb"'],
    ['"a\\uDC00"', '"a\ufffd"'],
    ['"\\udbff"', '"\ufffd"'],
    ['"x\\udc00\\ud800y"', '"x\ufffd\ufffdy"'],
    ['"\\ud800\\ud800\\udc00"', '"\ufffd\\ud800\\udc00"'],
    ['"a\\ud83d\\ude00b"', '"a\\ud83d\\ude00b"'],
    ['"a\\\\ud800"', '"a\\\\ud800"'],
    ['"a\\\\\\ud800"', '"a\\\\\ufffd"'],
    ['"\\u0000\\u001f"', '"\\u0000\\u001f"'],
    ['"\\ud80"', '"\\ud80"'],
    ['{"k\\ud800":["\\udfff",1]}', '{"k\ufffd":["\ufffd",1]}'],
  ];
  for (const [input, want] of cases) {
    it(`${input} → ${want}`, () => {
      assert.equal(wellFormedJson(input), want);
      assert.deepEqual(Buffer.from(wellFormedJsonBytes(Buffer.from(input))).toString(), want);
    });
  }

  it('a text without a \\u escape is returned as it is (the same string, the same bytes)', () => {
    const s = '{"id":"abc","ua":"Mozilla/5.0 😀"}';
    assert.equal(wellFormedJson(s), s);
    const b = Buffer.from(s);
    assert.equal(wellFormedJsonBytes(b), b);
  });

  it('lineParts: every string of the record, the raw text and the raw bytes come out well-formed', () => {
    const p = lineParts(1, '"w"', '"h"', { type: 'request', id: 'x\ud800', name: 'p\udc00', exchange: 'e\udbff' }, { key: 'req', json: JSON.stringify({ ua: 'u\ud800' }), singleLine: true });
    const rec = JSON.parse(lineText(p)) as Record<string, unknown>;
    assert.deepEqual(rec, { ts: 1, type: 'request', worker: 'w', host: 'h', name: 'p\ufffd', id: 'x\ufffd', exchange: 'e\ufffd', req: { ua: 'u\ufffd' } });
    const q = lineParts(1, '"w"', '"h"', { type: 'response', id: 'y', name: '', status: 200 }, { key: 'res', bytes: Buffer.from(JSON.stringify({ id: 'y\udfff' })), singleLine: true });
    assert.deepEqual((JSON.parse(lineText(q)) as { res: unknown }).res, { id: 'y\ufffd' });
  });
});

describe('record heads written as bytes (headBytes, LogBuffer.appendRecord)', () => {
  const worker = Buffer.from('"w1"');
  const host = Buffer.from('"host-é"');
  const strings = ['', 'pub', 'a"b\\c', 'line\nbreak\t\u0001', 'é', 'News Exámple 😀', 'x\ud800', '\udc00y', 'ok\u2028', 'x'.repeat(300), '"'.repeat(50), '\u0000'.repeat(40)];
  const numbers = [0, -0, 1, -1, 204, 0.001, 0.12, 1.5, 12.345, -3.25, 1700000000123, 999999999999.999, 1e15, 1e21, 0.1 + 0.2, 1 / 3, 5e-7, -1e-7, NaN, Infinity, -Infinity, 2 ** 53, 123456.0005];
  const records: LogRecord[] = [];
  for (const s of strings) {
    records.push({ type: 'request', id: s, name: s, exchange: s, test: true });
    records.push({ type: 'response', id: 'r', name: s, exchange: 'open', test: undefined, dropped: undefined, status: 204, reason: s, ms: 0.25, privacy: 'none' });
  }
  for (const n of numbers) records.push({ type: 'response', id: 'r', name: 'p', status: 200, ms: n, dropped: n } as unknown as LogRecord);
  records.push({ type: 'win', id: 'w', name: null, user: null, counted: false, price: 1.2345 } as unknown as LogRecord);
  records.push({ type: 'odd\ud800' as 'win', id: 'w', name: 'p', ts: 1, worker: 'evil', host: 'elsewhere' } as unknown as LogRecord);

  it('the same bytes as the text path (lineParts), for every string, number and flag', () => {
    for (const r of records) {
      for (const raw of [undefined, { key: 'req', json: '{"a":"\\ud800"}', singleLine: true }] as const) {
        const want = lineText(lineParts(1700000000123, '"w1"', '"host-é"', r, raw, ',"k":1'));
        const b = new LogBuffer(1 << 16);
        const max = headBytes.measure(r, raw === undefined ? null : raw.key);
        assert.ok(max > 0);
        b.appendRecord(max, 1700000000123, worker, host, r, raw === undefined ? null : raw.key, raw === undefined ? null : wellFormedJson(raw.json), false, { buf: Buffer.from(',"k":1'), length: 6 });
        const got = Buffer.concat(b.take(1 << 20).flatMap((x) => x.chunks.map((c) => c.data))).toString('utf8');
        assert.equal(got, want, JSON.stringify(r));
        assert.ok(Buffer.byteLength(got) - 8 - (raw === undefined ? 0 : raw.json.length) <= max, `${Buffer.byteLength(got)} bytes, measured ${max}`);
      }
    }
  });

  it('a record holding an object or a BigInt takes the text path (measure says -1)', () => {
    assert.equal(headBytes.measure({ type: 'win', id: 'x', name: 'p', o: { a: 1 } } as unknown as LogRecord, null), -1);
    assert.equal(headBytes.measure({ type: 'win', id: 'x', name: 'p', n: 1n } as unknown as LogRecord, null), -1);
  });

  it('keeps whole lines across chunks, records and bytes counted as by append', () => {
    const a = new LogBuffer(256);
    const b = new LogBuffer(256);
    for (let i = 0; i < 300; i++) {
      const r = records[i % records.length];
      a.append(lineParts(i, '"w1"', '"host-é"', r).head, null, false, '');
      b.appendRecord(headBytes.measure(r, null), i, worker, host, r, null, null, false, '');
    }
    assert.equal(b.records, a.records);
    assert.equal(b.bytes, a.bytes);
    const text = (x: LogBuffer): string => Buffer.concat(x.take(1 << 20).flatMap((t) => t.chunks.map((c) => c.data))).toString('utf8');
    assert.deepEqual(splitLines(text(b)), splitLines(text(a)));
  });
});
