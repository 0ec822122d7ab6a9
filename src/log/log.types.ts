// The records themselves are the bid log's contract: src/bidlog/records.ts.

/**
 * The log pipeline's metrics for this worker, as plain numbers. "counter" values only grow (since
 * start); "gauge" values go up and down. Byte counts are UTF-8 bytes of NDJSON ("raw") or of zstd
 * frames ("compressed"). Spill fields describe the spill directory (LOG_SPILL_DIR).
 */
export interface LogStats {
  /** counter: records accepted by log(). */
  readonly recordsLogged: number;
  /** gauge: records in the in-memory queue, not yet compressed. */
  readonly recordsQueued: number;
  /** gauge: raw bytes in that queue. */
  readonly bytesQueued: number;
  /** gauge: compressed batches in memory waiting for Redis (retrying while Redis is away). */
  readonly batchesPending: number;
  /** gauge: records in those batches. */
  readonly recordsPending: number;
  /** gauge: compressed bytes of those batches. */
  readonly bytesPending: number;
  /** gauge: queued + being compressed + pending bytes; kept at or under memoryLimitBytes. */
  readonly memoryBytes: number;
  /** LOG_MAX_MEMORY_BYTES. */
  readonly memoryLimitBytes: number;
  /** counter: batches (zstd frames) written to Redis, including drained spill files. */
  readonly batchesFlushed: number;
  /** counter: records in those batches. */
  readonly recordsFlushed: number;
  /** counter: raw bytes of batches written from memory (drained spill files not included). */
  readonly bytesFlushedRaw: number;
  /** counter: compressed bytes written to Redis. */
  readonly bytesFlushedCompressed: number;
  /** gauge: duration of the last flush from memory: compressing the batch plus its push, ms. */
  readonly lastFlushMs: number;
  /** counter: sum of those durations, ms (with batchesFlushed - batchesDrained, an average). */
  readonly flushMsTotal: number;
  /** gauge: raw / compressed bytes over every batch compressed since start (0 before the first). */
  readonly compressionRatio: number;
  /** counter: failed push attempts (each is retried; none loses records). */
  readonly flushErrors: number;
  /** counter: batches and records written to the spill directory. */
  readonly batchesSpilled: number;
  readonly recordsSpilled: number;
  /** gauge: bytes in the spill directory (all workers' files), as this worker last saw it. */
  readonly spillBytes: number;
  /** gauge: spill files waiting that this worker may drain. */
  readonly spillFiles: number;
  /** counter: spill files (and their records) pushed to Redis. */
  readonly batchesDrained: number;
  readonly recordsDrained: number;
  /** counter: records lost because memory and spill directory were both full (or the final flush ran out of time). */
  readonly recordsDropped: number;
  /** counter: spill files set aside (`.bad`) because their frame failed verification, and their records. */
  readonly batchesQuarantined: number;
  readonly recordsQuarantined: number;
  /** gauge: 1 while the Redis connection is up. */
  readonly redisUp: number;
  /**
   * gauge: the longest synchronous step the flusher itself took on the event loop since start, ms
   * (taking the queue, feeding the compressor, joining its output, sending a push). GC and the
   * zlib/ioredis callbacks are not in it; bench/RESULTS-log.md measures the whole loop.
   */
  readonly longestStepMs: number;
}
