/**
 * Reading the bid log back from Redis, for every reader: the log CLI (src/log/cli.ts) reads its
 * lists frame by frame, the bidder (src/log/log.module.ts) and the shipper watch the backlog, the
 * shipper claims frames (src/bidlog/scripts.ts) and stores them (src/bidlog/schema.ts, read by the
 * report). A list element is one zstd frame of NDJSON (docs/log-pipeline.md, "In Redis").
 */
import * as zlib from 'node:zlib';
import type { Cluster, Redis } from 'ioredis';

/** Decompresses one list element (or spill file) into its NDJSON text. */
export function decompressFrame(frame: Buffer): Buffer {
  return zlib.zstdDecompressSync(frame);
}

/** Splits NDJSON text into its lines (no trailing empty line). */
export function splitLines(text: Buffer | string): string[] {
  const s = typeof text === 'string' ? text : text.toString('utf8');
  if (s.length === 0) return [];
  const lines = s.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** Frames read per LRANGE. */
const PAGE = 50;

/**
 * The frames of one log list from index `start` to `end` (inclusive; negative counts from the end,
 * as LRANGE does), oldest first, a page at a time, with their index. Rejects when Redis fails.
 */
export async function* listFrames(redis: Redis | Cluster, key: string, start = 0, end = -1): AsyncGenerator<{ index: number; frame: Buffer }> {
  const len = await redis.llen(key);
  const from = start < 0 ? Math.max(0, len + start) : start;
  const to = Math.min(len - 1, end < 0 ? len + end : end);
  for (let i = from; i <= to; i += PAGE) {
    const page = await redis.lrangeBuffer(key, i, Math.min(to, i + PAGE - 1));
    for (let j = 0; j < page.length; j++) yield { index: i + j, frame: page[j] };
  }
}

/** What waits in the log lists, not yet claimed by a shipper. */
export interface Backlog {
  /** List elements (zstd frames). */
  frames: number;
  /** Redis's estimate of the lists' memory (`MEMORY USAGE key SAMPLES 5`), bytes. */
  bytes: number;
  /** `ts` of the first record of the oldest frame (the head of each list), epoch ms; null when empty or unreadable. */
  oldestTs: number | null;
}

/** Compressed prefixes tried, in turn, to reach the end of a frame's first line without decompressing all of it. */
const PREFIXES = [8 * 1024, 64 * 1024];

/**
 * The backlog of the log lists `keys`: frames and bytes in Redis and the age of the oldest record.
 * Costs per key one LLEN, one MEMORY USAGE and one LINDEX of the head frame (of which only a
 * prefix is decompressed). Commands go one by one, not in a pipeline or MULTI, so that it also
 * works on a Redis Cluster client whose keys live on different nodes. Rejects when Redis fails.
 */
export async function readBacklog(redis: Redis | Cluster, keys: readonly string[]): Promise<Backlog> {
  const per = await Promise.all(
    keys.map(async (key) => {
      const [frames, bytes, head] = await Promise.all([
        redis.llen(key),
        redis.memory('USAGE', key, 'SAMPLES', 5),
        redis.lindexBuffer(key, 0),
      ]);
      return { frames, bytes: bytes ?? 0, oldestTs: head === null ? null : firstRecordTs(head) };
    }),
  );
  const out: Backlog = { frames: 0, bytes: 0, oldestTs: null };
  for (const p of per) {
    out.frames += p.frames;
    out.bytes += p.bytes;
    if (p.oldestTs !== null && (out.oldestTs === null || p.oldestTs < out.oldestTs)) out.oldestTs = p.oldestTs;
  }
  return out;
}

/** `ts` of the first NDJSON record in a zstd frame, decompressing as little as needed; null when there is none. */
export function firstRecordTs(frame: Buffer): number | null {
  for (let i = 0; i <= PREFIXES.length; i++) {
    const whole = i === PREFIXES.length || PREFIXES[i] >= frame.length;
    let text: Buffer;
    try {
      text = whole
        ? zlib.zstdDecompressSync(frame)
        : zlib.zstdDecompressSync(frame.subarray(0, PREFIXES[i]), { finishFlush: zlib.constants.ZSTD_e_flush });
    } catch {
      if (whole) return null;
      continue;
    }
    const nl = text.indexOf(0x0a);
    if (nl < 0 && !whole) continue;
    return tsOf(text.subarray(0, nl < 0 ? text.length : nl).toString('utf8'));
  }
  return null;
}

function tsOf(line: string): number | null {
  try {
    const v = (JSON.parse(line) as { ts?: unknown }).ts;
    return typeof v === 'number' && Number.isFinite(v) ? v : null;
  } catch {
    return null;
  }
}
