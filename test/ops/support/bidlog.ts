// Reads the bid log from Redis as docs/log-pipeline.md defines it: a list of zstd frames, each NDJSON;
// and what the shipper already moved to Parquet.
import * as zlib from 'node:zlib';
import { DuckDBInstance } from '@duckdb/node-api';
import Redis from 'ioredis';
import { partitionFiles } from '../../../src/shipper/report-data';

export interface BidLogCounts {
  frames: number;
  records: number;
  /** Per request id: how many `request` and `response` records carry it. */
  requests: Map<string, number>;
  responses: Map<string, number>;
  /** Records without a numeric `ts` or a string `type`. */
  malformed: number;
}

export async function readBidLog(redisUrl: string, key: string): Promise<BidLogCounts> {
  const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  try {
    const frames = await redis.lrangeBuffer(key, 0, -1);
    const out: BidLogCounts = { frames: frames.length, records: 0, requests: new Map(), responses: new Map(), malformed: 0 };
    for (const frame of frames) {
      for (const line of zlib.zstdDecompressSync(frame).toString('utf8').split('\n')) {
        if (line === '') continue;
        out.records++;
        const r = JSON.parse(line) as { ts?: unknown; type?: unknown; id?: unknown };
        if (typeof r.ts !== 'number' || typeof r.type !== 'string') out.malformed++;
        const m = r.type === 'request' ? out.requests : r.type === 'response' ? out.responses : null;
        if (m && typeof r.id === 'string') m.set(r.id, (m.get(r.id) ?? 0) + 1);
      }
    }
    return out;
  } finally {
    redis.disconnect();
  }
}

/** Ids among `ids` that do not have exactly one request and one response record. */
export function incomplete(log: BidLogCounts, ids: readonly string[]): string[] {
  return ids.filter((id) => log.requests.get(id) !== 1 || log.responses.get(id) !== 1);
}

/**
 * Adds the request and response records the shipper moved to Parquet under `shipDir` (the other
 * half of the bid log once the shipper runs); returns how many records it found there.
 */
export async function addShipped(log: BidLogCounts, shipDir: string): Promise<number> {
  const files = await partitionFiles(shipDir);
  if (files.length === 0) return 0;
  const db = await DuckDBInstance.create(':memory:', { threads: '1' });
  const c = await db.connect();
  try {
    const rows = (await c.runAndReadAll(`SELECT type, id, ts FROM read_parquet([${files.map((f) => `'${f.replace(/'/g, "''")}'`).join(', ')}])`)).getRowObjectsJS();
    for (const r of rows) {
      log.records++;
      if (r.ts === null || typeof r.type !== 'string') log.malformed++;
      const m = r.type === 'request' ? log.requests : r.type === 'response' ? log.responses : null;
      if (m && typeof r.id === 'string') m.set(r.id, (m.get(r.id) ?? 0) + 1);
    }
    return rows.length;
  } finally {
    c.closeSync();
    db.closeSync();
  }
}
