import { performance } from 'node:perf_hooks';
import * as zlib from 'node:zlib';
import type { LineChunk } from './log-buffer';

/**
 * The default zstd level (LOG_ZSTD_LEVEL). On the load test's bid records level 2 compressed 15.6×
 * at ~610 MB/s per core against 16.4× at ~390 MB/s for zstd's own default, 3: a third less CPU per
 * logged bid for 5 % more bytes in Redis (bench/README.md).
 */
export const ZSTD_LEVEL = 2;

/** Output buffer of the streaming compressor. */
const OUT_CHUNK = 256 * 1024;
/**
 * Input per thread-pool job: ~1.3 ms of zstd at ~400 MiB/s. Short jobs matter on a machine without
 * an idle core, where the woken compression thread can take the event loop's core for a whole job;
 * shorter still costs more main-thread CPU per MiB (each job is a round of stream callbacks:
 * 256 KiB took twice the main-thread time of 1 MiB, bench/RESULTS-log.md).
 */
const FEED_BYTES = 512 * 1024;

/**
 * Compresses lines into ONE zstd frame (one Redis list element, docs/log-pipeline.md) off the event loop:
 * the chunks are streamed into zlib's async zstd compressor, which does the work on the libuv
 * thread pool, one chunk at a time (stream back-pressure), so the loop only moves buffers around.
 * The frame header carries the content size (pledged), which some decoders require.
 */
export function compressFrame(
  chunks: readonly LineChunk[],
  bytes: number,
  step: (ms: number, what: string) => void = noop,
  level = ZSTD_LEVEL,
): Promise<Buffer> {
  const options: zlib.ZstdOptions = { chunkSize: OUT_CHUNK, ...frameOptions(bytes, level) };
  if (chunks.length === 1 && bytes <= FEED_BYTES) {
    // One small buffer: a single thread-pool job, one callback.
    return new Promise<Buffer>((resolve, reject) => {
      zlib.zstdCompress(chunks[0].data, options, (err, out) => (err ? reject(err) : resolve(out)));
    });
  }
  return new Promise<Buffer>((resolve, reject) => {
    const z = zlib.createZstdCompress(options);
    const out: Buffer[] = [];
    let i = 0;
    let off = 0;
    z.on('data', (d: Buffer) => out.push(d));
    z.once('error', reject);
    z.once('end', () => {
      const t0 = performance.now();
      const frame = out.length === 1 ? out[0] : Buffer.concat(out);
      step(performance.now() - t0, 'join output');
      resolve(frame);
    });
    const pump = (): void => {
      const t0 = performance.now();
      while (i < chunks.length) {
        const data = chunks[i].data;
        const end = Math.min(off + FEED_BYTES, data.length);
        const piece = off === 0 && end === data.length ? data : data.subarray(off, end);
        if (end === data.length) {
          i++;
          off = 0;
        } else {
          off = end;
        }
        if (!z.write(piece)) {
          z.once('drain', pump);
          step(performance.now() - t0, 'feed compressor');
          return;
        }
      }
      z.end();
      step(performance.now() - t0, 'feed compressor');
    };
    pump();
  });
}

function noop(): void {}

/** Options of every frame: the level, the content checksum (verified on every decompression) and the content size. */
function frameOptions(bytes: number, level: number): zlib.ZstdOptions {
  return {
    pledgedSrcSize: bytes,
    params: { [zlib.constants.ZSTD_c_compressionLevel]: level, [zlib.constants.ZSTD_c_checksumFlag]: 1 },
  };
}

/** One frame, synchronously: the fatal-error path only (it blocks the event loop). */
export function compressFrameSync(chunks: readonly LineChunk[], bytes: number, level = ZSTD_LEVEL): Buffer {
  const data = chunks.length === 1 ? chunks[0].data : Buffer.concat(chunks.map((c) => c.data), bytes);
  return zlib.zstdCompressSync(data, frameOptions(bytes, level));
}

/**
 * Verifies a frame read back from disk: decompresses it on the thread pool (zstd checks the content
 * checksum every frame carries, and a truncated frame does not decompress) and counts its lines.
 * Resolves the number of records, or null when the frame is not whole and sound.
 */
export function verifyFrame(frame: Buffer, maxBytes: number): Promise<number | null> {
  return new Promise((resolve) => {
    zlib.zstdDecompress(frame, { maxOutputLength: maxBytes }, (err, out) => {
      if (err !== null || out.length === 0 || out[out.length - 1] !== 0x0a) {
        resolve(null);
        return;
      }
      let n = 0;
      for (let i = out.indexOf(0x0a); i !== -1; i = out.indexOf(0x0a, i + 1)) n++;
      resolve(n);
    });
  });
}
