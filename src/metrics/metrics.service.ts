import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { performance } from 'node:perf_hooks';
import { collectDefaultMetrics, Registry, type Aggregator, type Metric } from 'prom-client';
import { CONFIG, type Config } from '../config/config';
import { EventLoopDelay } from './event-loop';
import { CounterFamily, HistogramFamily } from './bid-path-metrics';
import { scrapedCounter, scrapedGauge, type MetricFamily, type MetricSample } from './scraped';

export type BidOutcome = 'bid' | 'nobid' | 'bad_request' | 'too_large' | 'error' | 'shed';

/** Seconds; a bid request takes ~0.05-0.5 ms in the handler, more under load (bench/README.md). */
const DURATION_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
/** Seconds a bid request waited before the bidder looked at it (an upper bound, src/http/turn-clock.ts). */
const WAIT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.5, 1];
/** CPM in the response currency. */
const PRICE_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 20, 50, 100];
/** No-bid reasons are a small fixed vocabulary; past this many distinct ones they count as "other". */
const MAX_REASONS = 64;
/** Event-loop delay window, also the cluster publishing period. */
export const WINDOW_MS = 5_000;
/**
 * How often the event-loop delay is sampled, for our windowed gauge and prom-client's `nodejs_eventloop_lag_*`
 * alike (their timers start together, so they wake the loop together). Each sample is a timer that
 * wakes an idle worker: at Node's default of 10 ms that cost ~4.5 ms of CPU per second per idle
 * worker on the 2-core test VM, and ~10-15 µs per bid request at 650 requests/s per worker
 * (bench/README.md); 20 ms keeps 250 samples per 5 s window for half the wake-ups.
 */
export const LOOP_RESOLUTION_MS = 20;
/**
 * How long (ms) a snapshot or a scrape reads families before it lets the event loop go (one
 * setImmediate) and the bid requests that came meanwhile are answered. Read in one go, every
 * family took 2-4.4 ms of one turn's CPU in a worker at 650 bid requests/s (the cluster snapshot
 * every WINDOW_MS, and each scrape); the costliest single family (process.memoryUsage(), the
 * listing of /proc/self/fd) takes ~0.5 ms.
 */
export const COLLECT_SLICE_MS = 0.5;

const yieldTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * This worker's Prometheus registry (prom-client). The bid path's calls are O(1) with no allocation
 * or string building: a switch picks a slot fixed at start-up (a Map lookup for the no-bid reason)
 * and a typed-array cell is incremented (src/metrics/bid-path-metrics.ts says why). Everything else
 * is prom-client's, read at scrape time: each module registers its own families (`gauge`,
 * `counter`) and, when they need a refresh first, a scrape hook (`onScrape`). This module depends
 * on none of them.
 */
@Injectable()
export class MetricsService implements OnApplicationShutdown {
  readonly registry = new Registry();
  readonly loop = new EventLoopDelay(WINDOW_MS, LOOP_RESOLUTION_MS);

  private readonly requests = new CounterFamily(
    'bidder_bid_requests_total',
    'Bid requests by outcome (bid, nobid by reason, bad_request = 400, too_large = 413, error = a bug answered as a no-bid, shed = answered at once under overload) and HTTP status.',
  );
  private readonly duration = new HistogramFamily(
    'bidder_bid_request_duration_seconds',
    'Time spent in the bid handler, from the request reaching it to the answer being ready.',
    DURATION_BUCKETS,
  );
  private readonly price = new HistogramFamily('bidder_bid_price_cpm', 'Price of each bid returned (CPM, response currency).', PRICE_BUCKETS);
  private readonly wait = new HistogramFamily(
    'bidder_bid_request_wait_seconds',
    'How long a bid request can have waited (socket buffers, the event loop) before the bidder looked at it: an upper bound; overload sheds on it.',
    WAIT_BUCKETS,
  );
  private readonly waitSlot: number;
  private readonly shedSlot: number;
  private readonly durationShed: number;

  private readonly bidSlot: number;
  private readonly badRequestSlot: number;
  private readonly tooLargeSlot: number;
  private readonly errorSlot: number;
  private readonly durationError: number;
  private readonly otherReasonSlot: number;
  private readonly reasonSlots = new Map<string, number>();
  private readonly durationBid: number;
  private readonly durationNobid: number;
  private readonly durationBadRequest: number;
  private readonly durationTooLarge: number;
  private readonly priceSlot: number;
  private readonly scrapeHooks: Array<() => void> = [];
  /** The labels every series gets (the registry's default labels). */
  private readonly defaultLabels: Record<string, string>;
  /** See COLLECT_SLICE_MS (tests set it). */
  sliceMs = COLLECT_SLICE_MS;

  constructor(@Inject(CONFIG) config: Config) {
    this.defaultLabels = { worker: config.workerId };
    this.registry.setDefaultLabels(this.defaultLabels);
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LOOP_RESOLUTION_MS });

    this.bidSlot = this.requests.slot({ outcome: 'bid', reason: '', status: '200' });
    this.badRequestSlot = this.requests.slot({ outcome: 'bad_request', reason: '', status: '400' });
    this.tooLargeSlot = this.requests.slot({ outcome: 'too_large', reason: '', status: '413' });
    this.errorSlot = this.requests.slot({ outcome: 'error', reason: 'internal_error', status: '204' });
    this.shedSlot = this.requests.slot({ outcome: 'shed', reason: 'shed', status: '204' });
    this.durationShed = this.duration.slot({ outcome: 'shed' });
    this.waitSlot = this.wait.slot({});
    this.otherReasonSlot = this.requests.slot({ outcome: 'nobid', reason: 'other', status: '204' });
    this.reasonSlots.set('other', this.otherReasonSlot);
    this.durationBid = this.duration.slot({ outcome: 'bid' });
    this.durationNobid = this.duration.slot({ outcome: 'nobid' });
    this.durationBadRequest = this.duration.slot({ outcome: 'bad_request' });
    this.durationTooLarge = this.duration.slot({ outcome: 'too_large' });
    this.durationError = this.duration.slot({ outcome: 'error' });
    this.priceSlot = this.price.slot({});

    this.register(this.requests);
    this.register(this.duration);
    this.register(this.price);
    this.register(this.wait);
    this.gauge(
      'bidder_event_loop_delay_seconds',
      `Event-loop delay over the last ${WINDOW_MS / 1000} s window (monitorEventLoopDelay), by quantile; 1 is the maximum.`,
      'max',
      ['quantile'],
      () => this.loopSamples(),
    );
    this.loop.start();
  }

  /** One call per bid request: its outcome, the no-bid reason (null otherwise) and its duration in seconds. */
  bidRequest(outcome: BidOutcome, reason: string | null, seconds: number): void {
    let slot: number;
    let d: number;
    switch (outcome) {
      case 'bid':
        slot = this.bidSlot;
        d = this.durationBid;
        break;
      case 'nobid':
        slot = this.reasonSlots.get(reason ?? 'other') ?? this.addReason(reason ?? 'other');
        d = this.durationNobid;
        break;
      case 'bad_request':
        slot = this.badRequestSlot;
        d = this.durationBadRequest;
        break;
      case 'too_large':
        slot = this.tooLargeSlot;
        d = this.durationTooLarge;
        break;
      case 'error':
        slot = this.errorSlot;
        d = this.durationError;
        break;
      case 'shed':
        slot = this.shedSlot;
        d = this.durationShed;
        break;
    }
    this.requests.inc(slot);
    if (seconds >= 0) this.duration.observe(d, seconds);
  }

  /** One call per bid request that reached the bidding: how long it can have waited before (seconds). */
  bidWait(seconds: number): void {
    if (seconds >= 0) this.wait.observe(this.waitSlot, seconds);
  }

  /** One call per bid returned: its price (CPM, response currency). */
  bidPrice(price: number): void {
    if (price >= 0) this.price.observe(this.priceSlot, price);
  }

  /** Runs `fn` before every scrape (to refresh figures read from elsewhere). */
  onScrape(fn: () => void): void {
    this.scrapeHooks.push(fn);
  }

  /**
   * This worker's metrics in Prometheus text format: Registry.metrics()'s text, read family by
   * family across loop turns (`collect`).
   */
  async render(): Promise<string> {
    for (const fn of this.scrapeHooks) fn();
    const texts = await this.collect((name) => this.registry.getSingleMetricAsString(name));
    return `${texts.join('\n\n')}\n`;
  }

  /**
   * This worker's metrics as prom-client JSON (what the cluster view aggregates): what
   * Registry.getMetricsAsJSON() gives (each series with the default labels it lacks), read family
   * by family across loop turns (`collect`).
   */
  async snapshot(): Promise<MetricFamily[]> {
    for (const fn of this.scrapeHooks) fn();
    const defaults = Object.entries(this.defaultLabels);
    return this.collect(async (name) => {
      const family = (await (this.registry.getSingleMetric(name) as Metric).get()) as unknown as MetricFamily;
      for (const v of family.values ?? []) {
        const labels = { ...v.labels };
        for (const [k, d] of defaults) labels[k] = labels[k] || d;
        v.labels = labels;
      }
      return family;
    });
  }

  /**
   * Reads every family in registration order, one after another; once a stretch of reading has
   * taken `sliceMs`, the rest waits for the next loop turn, so that a scrape holds the loop (and
   * the bid requests read meanwhile) for about that long at a time, not for all of it. Families are
   * then read some milliseconds apart: a snapshot is not one instant (it never was: families whose
   * source is read at scrape time are refreshed by the scrape hooks first).
   */
  private async collect<T>(read: (name: string) => Promise<T>): Promise<T[]> {
    const out: T[] = [];
    let since = performance.now();
    for (const { name } of this.registry.getMetricsAsArray()) {
      // A family removed from the registry meanwhile (between two slices) is left out.
      if (this.registry.getSingleMetric(name) === undefined) continue;
      out.push(await read(name));
      if (performance.now() - since >= this.sliceMs) {
        await yieldTurn();
        since = performance.now();
      }
    }
    return out;
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }

  private addReason(reason: string): number {
    if (this.reasonSlots.size >= MAX_REASONS) return this.otherReasonSlot;
    const slot = this.requests.slot({ outcome: 'nobid', reason, status: '204' });
    this.reasonSlots.set(reason, slot);
    return slot;
  }

  private loopSamples(): MetricSample[] {
    const w = this.loop.window();
    return [
      { value: w.p50, labels: { quantile: '0.5' } },
      { value: w.p90, labels: { quantile: '0.9' } },
      { value: w.p99, labels: { quantile: '0.99' } },
      { value: w.max, labels: { quantile: '1' } },
    ];
  }

  /** Adds a gauge read at scrape time (another module's figures). */
  gauge(name: string, help: string, aggregator: Aggregator, labelNames: readonly string[], read: () => MetricSample[]): void {
    scrapedGauge(this.registry, name, help, aggregator, labelNames, read);
  }

  /** Adds a counter read at scrape time (another module's cumulative figures, e.g. tracking's). */
  counter(name: string, help: string, labelNames: readonly string[], read: () => MetricSample[]): void {
    scrapedCounter(this.registry, name, help, labelNames, read);
  }

  private register(m: CounterFamily | HistogramFamily): void {
    // The registry only calls name/get()/reset(); prom-client's type names its own classes.
    this.registry.registerMetric(m as unknown as Metric);
  }
}
