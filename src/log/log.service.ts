import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationShutdown,
  type OnModuleInit,
  Optional,
} from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { mkdirEachLevelSync } from '../config/dirs';
import { RedisService } from '../redis/redis.service';
import { logListKeys } from '../bidlog/keys';
import { type FieldBytes, headBytes, lineParts, type RawJson, rawText } from './log-line';
import { wellFormedJson, wellFormedJsonBytes } from '../bidlog/well-formed';
import { Journal } from './journal';
import { LogPipeline } from './log-pipeline';
import { RedisFrameSink } from './log-sink';
import type { LogRecord } from '../bidlog/records';
import type { LogStats } from './log.types';
import { SpillStore } from './spill';

/**
 * The bid log of this worker (docs/log-pipeline.md). `log()` appends one NDJSON line to an
 * in-memory queue and returns; the pipeline compresses batches with zstd on the thread pool and
 * RPUSHes them to the log's lists (src/bidlog/keys.ts), keeping them in memory, then on disk, while
 * Redis is away.
 * On shutdown (after the HTTP server has finished its last requests) everything is flushed.
 */
/** Token of an optional observer of the flusher's synchronous steps (the log benchmark provides one). */
export const LOG_STEP_HOOK = Symbol('LOG_STEP_HOOK');

@Injectable()
export class LogService implements OnModuleInit, BeforeApplicationShutdown, OnApplicationShutdown {
  private readonly logger = new Logger('BidLog');
  private readonly pipeline: LogPipeline;
  private readonly workerJson: string;
  private readonly hostJson: string;
  /** The two as UTF-8 bytes, well-formed. */
  private readonly workerBytes: Buffer;
  private readonly hostBytes: Buffer;
  private finalFlush: Promise<void> | null = null;
  /** Why LOG_JOURNAL is on but the journal is not in use (a readiness warning), or null. */
  readonly journalProblem: string | null = null;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    @Optional() @Inject(LOG_STEP_HOOK) stepHook: ((ms: number, what: string) => void) | null = null,
  ) {
    this.workerJson = JSON.stringify(config.workerId);
    this.hostJson = JSON.stringify(config.hostId);
    this.workerBytes = Buffer.from(wellFormedJson(this.workerJson), 'utf8');
    this.hostBytes = Buffer.from(wellFormedJson(this.hostJson), 'utf8');
    let journal: Journal | null = null;
    if (config.logJournal) {
      try {
        // Made here one level at a time: the journal's own recursive mkdir never returns under /proc.
        mkdirEachLevelSync(config.logJournalDir);
        journal = new Journal(config.logJournalDir, this.logger, config.logJournalFsyncMs, config.logJournalMaxBytes);
      } catch (e) {
        this.journalProblem = `LOG_JOURNAL_DIR ${config.logJournalDir} cannot be made (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}): running without the bid log journal, a crash loses what is not yet in Redis`;
        this.logger.warn(this.journalProblem);
      }
    }
    this.pipeline = new LogPipeline(
      {
        flushIntervalMs: config.logFlushIntervalMs,
        flushBytes: config.logFlushBytes,
        maxMemoryBytes: config.logMaxMemoryBytes,
        zstdLevel: config.logZstdLevel,
      },
      new RedisFrameSink(redis, logListKeys(config), config.logWaitReplicas, config.logWaitTimeoutMs),
      new SpillStore(config.logSpillDir, config.logSpillMaxBytes, `${config.hostId}.${config.workerId}`),
      this.logger,
      stepHook,
      journal,
    );
    redis.onLogReady(() => this.pipeline.redisReady());
  }

  /**
   * Logs one record: O(1), synchronous, no I/O, never throws. The line is well-formed UTF-8 JSON
   * whatever the strings held (an escaped lone surrogate becomes U+FFFD). The line starts with `ts`, `type`,
   * `worker`, `host` and `name`, then the record's other fields; `raw` embeds an already-serialized JSON
   * text (the bid request body) under `raw.key` without parsing or re-serializing it; line breaks in
   * it become spaces unless `raw.singleLine` says there are none (the caller knows it more cheaply).
   * `fields`: members already serialized (`,"key":value…`, src/bidlog/compact.ts), written last in
   * the line (after `raw`: copied once, never joined to the other parts).
   */
  log(record: LogRecord, raw?: RawJson, fields: string | FieldBytes = ''): void {
    const ts = Date.now();
    const rawKey = raw === undefined ? null : raw.key;
    const headMax = headBytes.measure(record, rawKey);
    if (headMax < 0) {
      // A value other than a string, number, boolean or null: the text path, which also handles what JSON cannot hold.
      const line = lineParts(ts, this.workerJson, this.hostJson, record, raw, typeof fields === 'string' ? fields : Buffer.from(fields.buf.buffer, fields.buf.byteOffset, fields.length).toString('utf8'));
      this.pipeline.append(line.head, line.tail, line.lineBreaks, line.after);
      return;
    }
    const after = typeof fields === 'string' ? wellFormedJson(fields) : fields;
    const tail = raw === undefined ? null : raw.bytes !== undefined ? wellFormedJsonBytes(raw.bytes) : wellFormedJson(raw.singleLine === true ? raw.json : rawText(raw.json));
    this.pipeline.appendRecord(headMax, ts, this.workerBytes, this.hostBytes, record, rawKey, tail, raw !== undefined && raw.bytes !== undefined && raw.singleLine !== true, after);
  }

  /** A bid request's two records, `request` then `response`, one after the other in the queue. */
  logPair(request: LogRecord, requestRaw: RawJson | undefined, response: LogRecord, responseRaw?: RawJson, requestFields: string | FieldBytes = '', responseFields: string | FieldBytes = ''): void {
    this.log(request, requestRaw, requestFields);
    this.log(response, responseRaw, responseFields);
  }

  /**
   * The crash journal as the HTTP servers see it: an answer is sent only once the records logged
   * before it are in the journal. `pending` says whether any are not yet; `commit` writes them
   * (once per event-loop turn for all the answers of that turn, see src/http/outbox.ts).
   */
  readonly journal: { pending(): boolean; commit(): void } = {
    pending: () => this.pipeline.journalPending(),
    commit: () => this.pipeline.commitJournal(),
  };

  /**
   * The fatal-error path (main.ts): writes every record still only in memory to the spill directory,
   * synchronously. Returns how many were written and how many could not be.
   */
  emergencySpill(): { written: number; lost: number } {
    return this.pipeline.emergencySpill();
  }

  /** False when the pipeline is over its memory bound or dropped records in the last 10 s (readiness). */
  isHealthy(): boolean {
    return this.pipeline.healthy();
  }

  /** Metric values for this worker (see LogStats). */
  stats(): LogStats {
    return this.pipeline.stats();
  }

  onModuleInit(): void {
    this.pipeline.start();
  }

  beforeApplicationShutdown(): void {
    // The Redis connection must outlive the final flush, whatever order Nest closes modules in:
    // Redis's own shutdown hook starts the flush if it runs first, and waits for it.
    this.redis.closeAfter(() => this.flushOnce());
  }

  /** Runs after the HTTP server has closed, so the last requests' records are included. */
  async onApplicationShutdown(): Promise<void> {
    await this.flushOnce();
  }

  /** The final flush, once, from whichever shutdown hook comes first (both run after the HTTP server has closed). */
  private flushOnce(): Promise<void> {
    this.finalFlush ??= this.finalFlushNow();
    return this.finalFlush;
  }

  private async finalFlushNow(): Promise<void> {
    await this.pipeline.close(this.config.shutdownTimeoutMs);
    const s = this.pipeline.stats();
    this.logger.log(
      `final flush done: ${s.recordsFlushed} records in ${s.batchesFlushed} batches to Redis, ` +
        `${s.recordsSpilled} spilled, ${s.recordsDropped} dropped since start`,
    );
  }
}
