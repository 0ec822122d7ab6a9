import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Kinds of error the shipper counts (and logs). */
export type ShipErrorKind = 'redis' | 'lease' | 'stage' | 'load' | 'write' | 'retention' | 'backlog';

/** How often prom-client samples the event-loop delay (`nodejs_eventloop_lag_*`) in the shipper. */
export const EVENT_LOOP_SAMPLE_MS = 1_000;

/** The shipper's Prometheus registry (its own: the shipper is a process of its own). */
export class ShipperMetrics {
  readonly registry = new Registry();

  readonly frames = new Counter({ name: 'shipper_frames_shipped_total', help: 'Frames (Redis list elements) stored in Parquet and removed from Redis.', registers: [this.registry] });
  readonly records = new Counter({ name: 'shipper_records_shipped_total', help: 'Records in the batch groups shipped (each record once).', registers: [this.registry] });
  readonly bytes = new Counter({
    name: 'shipper_bytes_shipped_total',
    help: 'Bytes shipped: zstd frames taken from Redis (kind="redis") and Parquet files written (kind="parquet").',
    labelNames: ['kind'],
    registers: [this.registry],
  });
  readonly batches = new Counter({
    name: 'shipper_batches_total',
    help: 'Batch groups shipped, by how they were obtained: claimed from the list, resumed from this shipper\'s processing list, adopted from a dead shipper.',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly errors = new Counter({ name: 'shipper_errors_total', help: 'Failures by kind; each is retried with backoff, nothing is lost.', labelNames: ['kind'], registers: [this.registry] });
  readonly invalidLines = new Counter({ name: 'shipper_invalid_lines_total', help: 'Lines that were not JSON, stored with type NULL and the line in raw.', registers: [this.registry] });
  readonly deadLetters = new Counter({
    name: 'shipper_dead_letter_lines_total',
    help: 'Lines the store refused (not well-formed UTF-8 JSON to DuckDB), kept with the reason in SHIP_DIR/dead-letters/; the rest of their batch is stored.',
    registers: [this.registry],
  });
  readonly framesSetAside = new Counter({
    name: 'shipper_frames_set_aside_total',
    help: 'Frames that kept their batch from being stored (FRAME_TRIES loads in a row) and failed alone, kept in SHIP_DIR/bad-frames/ with a .reason file.',
    registers: [this.registry],
  });
  readonly badFrames = new Counter({ name: 'shipper_bad_frames_total', help: 'List elements that were not zstd frames, kept in SHIP_DIR/bad-frames/.', registers: [this.registry] });
  readonly partitionsDeleted = new Counter({ name: 'shipper_partitions_deleted_total', help: 'date= partitions deleted by the retention (SHIP_RETENTION_DAYS).', registers: [this.registry] });
  readonly batchSeconds = new Histogram({
    name: 'shipper_batch_duration_seconds',
    help: 'Time to store one batch group (stage, load, write, fsync, rename) and remove it from Redis.',
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly backlogFrames = new Gauge({ name: 'shipper_backlog_frames', help: 'Frames waiting in the log lists (not yet claimed), as last read.', registers: [this.registry] });
  readonly backlogBytes = new Gauge({ name: 'shipper_backlog_bytes', help: 'Memory of the log lists in Redis (MEMORY USAGE, sampled), as last read.', registers: [this.registry] });
  readonly backlogAge = new Gauge({ name: 'shipper_backlog_oldest_age_seconds', help: 'Age of the first record of the oldest frame waiting (0 when none).', registers: [this.registry] });
  readonly processingFrames = new Gauge({ name: 'shipper_processing_frames', help: 'Frames in this shipper\'s processing list (the batch under way).', registers: [this.registry] });
  readonly lastSuccess = new Gauge({ name: 'shipper_last_success_timestamp_seconds', help: 'When a batch was last shipped, or the list last found empty (epoch seconds).', registers: [this.registry] });
  readonly redisUp = new Gauge({ name: 'shipper_redis_up', help: '1 while the Redis connection is up.', registers: [this.registry] });
  readonly storageUp = new Gauge({ name: 'shipper_storage_ok', help: '0 while the last attempt to store a batch failed.', registers: [this.registry] });

  constructor() {
    // The event-loop delay is sampled by a timer that wakes the loop: at prom-client's 10 ms that cost
    // the idle shipper ~6-8 ms of CPU a second (~3 µs per record at the reference load). Its loop is
    // idle by design (DuckDB works on libuv's pool), so one sample a second says enough.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });
    this.storageUp.set(1);
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }
}
