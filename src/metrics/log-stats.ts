import type { Aggregator, Registry } from 'prom-client';
import { scrapedCounter, scrapedGauge } from './scraped';

/** What the log service may offer: `stats()` returning plain numbers (records queued, batches flushed...). */
interface StatsSource {
  stats?: () => unknown;
}

/** Words of a field name that mark a cumulative count (exported as a Prometheus counter). */
const COUNTER_WORDS = new Set(['logged', 'flushed', 'spilled', 'drained', 'dropped', 'quarantined', 'written', 'sent', 'failed', 'failures', 'errors', 'retries', 'total']);
/** Words that mark a current value even next to a counter word ("lastFlushMs"). */
const GAUGE_WORDS = new Set(['last', 'queued', 'pending', 'current', 'ratio', 'up']);

export interface LogStatMetricName {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly aggregator: Aggregator;
  /** Multiplier from the field's unit to the metric's (ms → s). */
  readonly scale: number;
}

/**
 * Maps a LogService.stats() field (camelCase, documented there as counter or gauge) to a metric:
 * `recordsQueued` → gauge `bidder_log_records_queued`, `batchesFlushed` → counter
 * `bidder_log_batches_flushed_total`, `flushMsTotal` → counter `bidder_log_flush_seconds_total`,
 * `lastFlushMs` → gauge `bidder_log_last_flush_seconds`, `compressionRatio` → gauge averaged
 * across workers in the machine view.
 */
export function logStatMetricName(field: string): LogStatMetricName {
  let words = field
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/[^A-Za-z0-9_]/g, '_')
    .toLowerCase()
    .split('_')
    .filter((w) => w !== '');
  let scale = 1;
  if (words.includes('ms')) {
    words = words.map((w) => (w === 'ms' ? 'seconds' : w));
    scale = 1 / 1000;
  }
  const counter = words.some((w) => COUNTER_WORDS.has(w)) && !words.some((w) => GAUGE_WORDS.has(w));
  if (counter) {
    const base = words.filter((w) => w !== 'total');
    // Prometheus puts the unit before _total.
    if (base.includes('seconds')) base.push(base.splice(base.indexOf('seconds'), 1)[0]);
    return { name: `bidder_log_${base.join('_')}_total`, type: 'counter', aggregator: 'sum', scale };
  }
  let aggregator: Aggregator = 'sum';
  if (words.includes('ratio')) aggregator = 'average';
  else if (words.includes('seconds') || words.includes('duration') || words.includes('age')) aggregator = 'max';
  return { name: `bidder_log_${words.join('_')}`, type: 'gauge', aggregator, scale };
}

/**
 * Log pipeline metrics read from `LogService.stats()` at scrape time. Families are registered on
 * first sight of each field, so this follows the log service's figures without a second list of
 * names; while the log service has no `stats()` there are none (only `bidder_log_healthy`).
 */
export class LogStatsMetrics {
  private readonly values = new Map<string, number>();

  constructor(
    private readonly registry: Registry,
    private readonly source: object,
  ) {}

  refresh(): void {
    const fn = (this.source as StatsSource).stats;
    if (typeof fn !== 'function') return;
    const stats: unknown = fn.call(this.source);
    if (stats === null || typeof stats !== 'object') return;
    for (const [field, v] of Object.entries(stats as Record<string, unknown>)) {
      const n = typeof v === 'number' ? v : typeof v === 'boolean' ? Number(v) : NaN;
      if (!Number.isFinite(n)) continue;
      if (!this.values.has(field)) this.register(field);
      this.values.set(field, n);
    }
  }

  private register(field: string): void {
    const m = logStatMetricName(field);
    if (this.registry.getSingleMetric(m.name)) return;
    const read = () => [{ value: (this.values.get(field) ?? 0) * m.scale, labels: {} }];
    const help = `Log pipeline: LogService.stats().${field}.`;
    if (m.type === 'counter') scrapedCounter(this.registry, m.name, help, [], read);
    else scrapedGauge(this.registry, m.name, help, m.aggregator, [], read);
  }
}
