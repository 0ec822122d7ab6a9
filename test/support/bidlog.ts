/** Reads every record of the bid log from Redis (each list element is one zstd frame of NDJSON). */
import * as zlib from 'node:zlib';
import Redis from 'ioredis';

export interface LoggedRecord {
  ts: number;
  type: string;
  id: string;
  [k: string]: unknown;
}

export async function readBidLog(redisUrl: string, key = 'bidlog'): Promise<LoggedRecord[]> {
  const r = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await r.connect();
  try {
    const frames = await r.lrangeBuffer(key, 0, -1);
    const out: LoggedRecord[] = [];
    for (const f of frames) {
      const text = zlib.zstdDecompressSync(f).toString('utf8');
      for (const line of text.split('\n')) if (line !== '') out.push(JSON.parse(line) as LoggedRecord);
    }
    return out;
  } finally {
    r.disconnect();
  }
}
