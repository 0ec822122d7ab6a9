import { Counter, Gauge, type Aggregator, type Registry } from 'prom-client';

/** One series read at scrape time: its value and labels (names from the family's `labelNames`). */
export interface MetricSample {
  value: number;
  labels: Record<string, string>;
}

/** One family as `Registry.getMetricsAsJSON()` gives it: what a worker publishes for the machine view. */
export interface MetricFamily {
  name: string;
  help: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary';
  aggregator: Aggregator;
  values: Array<{ value: number; labels: Record<string, string | number>; metricName?: string }>;
}

/**
 * A prom-client gauge whose series are read from elsewhere when the registry is scraped (its
 * `collect`): the series `read` returns, and only those. `aggregator` says how the machine view
 * (src/metrics/cluster-metrics.ts) combines workers.
 */
export function scrapedGauge(
  registry: Registry,
  name: string,
  help: string,
  aggregator: Aggregator,
  labelNames: readonly string[],
  read: () => MetricSample[],
): Gauge {
  return new Gauge({
    name,
    help,
    aggregator,
    labelNames,
    registers: [registry],
    collect() {
      const samples = read();
      this.reset();
      for (const s of samples) this.set(s.labels, s.value);
    },
  });
}

/**
 * A prom-client counter whose series are cumulative numbers kept elsewhere (a service's stats),
 * read when the registry is scraped.
 */
export function scrapedCounter(registry: Registry, name: string, help: string, labelNames: readonly string[], read: () => MetricSample[]): Counter {
  return new Counter({
    name,
    help,
    labelNames,
    registers: [registry],
    collect() {
      const samples = read();
      this.reset();
      for (const s of samples) this.inc(s.labels, s.value);
    },
  });
}
