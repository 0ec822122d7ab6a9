// One source of truth for the bid log's records: every field of every record the real bidder writes
// (bid requests: a bid, a no-bid, a 400, a test request; every notice) is a field of its kind in
// src/bidlog/records.ts, and lands in its Parquet column(s) when the real ParquetStore ships it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { LOG_TYPES } from '../../src/bidlog/records';
import { columnsOf, type FieldSpec, PARQUET_COLUMNS, RECORD_FIELDS } from '../../src/bidlog/schema';
import { toBatch } from '../../src/shipper/batch';
import { ParquetStore } from '../../src/shipper/parquet-store';
import { bidRequest, readRedisLog, type LogLine } from '../log/support';
import { frameOf, readShipped, tmpDir } from '../shipper/support';

/** The fields a record of `type` has (notices share one kind). */
function fieldsOf(type: (typeof LOG_TYPES)[number]): Readonly<Record<string, FieldSpec>> {
  return type === 'request' || type === 'response' ? RECORD_FIELDS[type] : RECORD_FIELDS.notice;
}
import { request, startTestApp, type TestApp } from '../support/app';
import { postBid } from '../support/bid';

interface Bid {
  adm: string;
  nurl: string;
  burl: string;
  lurl: string;
}

describe('bid log records and their Parquet columns', () => {
  const KEY = 'schema-log';
  let t: TestApp;
  let shipDir: string;
  let records: LogLine[] = [];
  let lines: string[] = [];

  before(async () => {
    t = await startTestApp({ LOG_REDIS_KEY: KEY, LOG_FLUSH_INTERVAL_MS: '50', LOG_LEVEL: 'warn', SHED_MAX_WAIT_MS: '0' });
    shipDir = tmpDir('bidlog-schema-');
  });
  after(async () => {
    await t?.close();
    if (shipDir) fs.rmSync(shipDir, { recursive: true, force: true });
  });

  function local(url: string, macros: Record<string, string> = {}): string {
    const u = new URL(url.replace(/&amp;/g, '&'));
    let s = `${t.url}${u.pathname}${u.search}`;
    for (const [k, v] of Object.entries(macros)) s = s.split(`\${${k}}`).join(encodeURIComponent(v));
    return s;
  }

  async function bid(body: string, status: number): Promise<Bid[]> {
    return (await postBid<Bid>(t.url, body, status, { 'content-type': 'application/json' })).bids;
  }

  async function notice(url: string, status: number): Promise<void> {
    const r = await request(url, { method: 'GET' });
    assert.equal(r.status, status, `${url}: ${r.body.toString()}`);
  }

  it('the bidder writes only the fields its records declare, every kind of record included', async () => {
    const [won] = await bid(bidRequest('s-1'), 200);
    const [lost] = await bid(bidRequest('s-2'), 200);
    await bid(bidRequest('s-3').replace('"w":300,"h":250', '"w":1,"h":1'), 204);
    await bid(JSON.stringify({ id: 's-4', imp: [] }), 400);
    const test = JSON.parse(bidRequest('s-5')) as Record<string, unknown>;
    const [testBid] = await bid(JSON.stringify({ ...test, test: 1 }), 200);
    await notice(local(won.nurl, { AUCTION_PRICE: '0.5', AUCTION_CURRENCY: 'USD' }), 204);
    await notice(local(won.burl, { AUCTION_PRICE: '0.5', AUCTION_CURRENCY: 'USD' }), 204);
    await notice(local(lost.lurl, { AUCTION_PRICE: '', AUCTION_LOSS: '102' }), 204);
    const imp = /(https?:\/\/[^'"\s]+\/t\/imp\?[^'"\s<]+)/.exec(won.adm);
    const click = /(https?:\/\/[^'"\s]+\/t\/click\?[^'"\s<]+)/.exec(won.adm);
    assert.ok(imp && click, 'the markup carries its impression and click URLs');
    await notice(local(imp[1]), 200);
    await notice(local(click[1]), 302);
    await notice(local(testBid.burl, { AUCTION_PRICE: '0.5', AUCTION_CURRENCY: 'USD' }), 204);
    // Notice records follow their answers (once Redis has said `counted`); the final flush takes them all.
    await new Promise((r) => setTimeout(r, 300));
    await t.app.close();
    ({ records, lines } = await readRedisLog(t.redis.url, KEY));

    assert.deepEqual([...new Set(records.map((r) => r.type))].sort(), [...LOG_TYPES].sort(), 'every kind of record was written');
    assert.ok(records.some((r) => r.test === true) && records.some((r) => r.status === 400));
    for (const r of records) {
      const declared = Object.keys(fieldsOf(r.type as (typeof LOG_TYPES)[number]));
      for (const field of Object.keys(r)) assert.ok(declared.includes(field), `${r.type} record field ${field} is declared in src/bidlog/records.ts: ${JSON.stringify(r)}`);
    }
  });

  it('every field of every record kind has its Parquet column, and what the bidder wrote is in it', async () => {
    assert.ok(lines.length > 0, 'the records of the test above');
    const store = new ParquetStore({ dir: shipDir, shipperId: 'schema', threads: 1, memoryMb: 256 });
    await store.open();
    try {
      const r = await store.store(toBatch([frameOf(lines)]));
      assert.equal(r.records, lines.length);
    } finally {
      store.close();
    }
    const rows = await readShipped(shipDir, '*');
    assert.equal(rows.length, lines.length);
    // readShipped adds the file's name and the partition's date and hour.
    assert.deepEqual(Object.keys(rows[0]), [...PARQUET_COLUMNS, 'filename', 'date', 'hour'], 'the file has the columns the schema lists, in order');
    for (const [kind, fields] of Object.entries(RECORD_FIELDS)) {
      for (const [field, spec] of Object.entries(fields)) {
        assert.ok(columnsOf(spec, field).length > 0, `${kind}.${field} lands in a column`);
        for (const c of columnsOf(spec, field)) assert.ok(PARQUET_COLUMNS.includes(c), `${kind}.${field} lands in column ${c}`);
      }
    }

    // A row is known by its record's kind, id, bid and time (`raw` holds the line only for a record with a body).
    const key = (type: unknown, id: unknown, bid: unknown, ts: unknown): string => JSON.stringify([type, id, bid ?? null, ts instanceof Date ? ts.getTime() : ts]);
    const byKey = new Map(records.map((rec) => [key(rec.type, rec.id, (rec as { bid?: unknown }).bid, rec.ts), rec]));
    assert.equal(byKey.size, records.length, 'the records are told apart by kind, id, bid and time');
    let checked = 0;
    for (const row of rows) {
      const rec = byKey.get(key(row.type, row.id, row.bid, row.ts));
      assert.ok(rec !== undefined, `row ${key(row.type, row.id, row.bid, row.ts)} is one of the records`);
      if (rec.req !== undefined || rec.res !== undefined) assert.deepEqual(JSON.parse(String(row.raw)), rec, 'raw: the whole line of a record with a body');
      else assert.equal(row.raw, null, 'raw: nothing for a record without a body (its fields are its columns)');
      const fields = fieldsOf(rec.type as (typeof LOG_TYPES)[number]);
      for (const [field, value] of Object.entries(rec)) {
        const spec = fields[field];
        for (const c of columnsOf(spec, field)) {
          const got = row[c] instanceof Date ? row[c].getTime() : row[c];
          if (spec.columns === undefined) assert.deepEqual(got, value, `${rec.type}.${field} in column ${c}`);
          else if (value !== null) assert.notEqual(got, null, `${rec.type}.${field} fills column ${c}`);
          checked++;
        }
      }
    }
    assert.ok(checked > records.length * 6, `${checked} values checked`);
  });
});
