import { Inject, Injectable, type OnApplicationShutdown } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Histogram, Registry, type Aggregator } from 'prom-client';
import { CONFIG, type Config } from '../config/config';
import { EventLoopDelay } from './event-loop';
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

type RequestLabels = Readonly<{ outcome: BidOutcome; reason: string; status: string }>;

/** The `bidder_bid_requests_total` series of every outcome but `nobid` (whose reason varies). */
const REQUEST_LABELS: Readonly<Record<Exclude<BidOutcome, 'nobid'>, RequestLabels>> = {
  bid: { outcome: 'bid', reason: '', status: '200' },
  bad_request: { outcome: 'bad_request', reason: '', status: '400' },
  too_large: { outcome: 'too_large', reason: '', status: '413' },
  error: { outcome: 'error', reason: 'internal_error', status: '204' },
  shed: { outcome: 'shed', reason: 'shed', status: '204' },
};
const OUTCOMES: readonly BidOutcome[] = ['bid', 'nobid', 'bad_request', 'too_large', 'error', 'shed'];
const DURATION_LABELS = Object.fromEntries(OUTCOMES.map((outcome) => [outcome, { outcome }])) as Readonly<Record<BidOutcome, Readonly<{ outcome: BidOutcome }>>>;

/**
 * This worker's Prometheus registry (prom-client). The bid path's calls pass label objects built
 * once (per outcome, per no-bid reason), so they allocate nothing. Everything else is read at
 * scrape time: each module registers its own families (`gauge`, `counter`) and, when they need a
 * refresh first, a scrape hook (`onScrape`). This module depends on none of them.
 */
@Injectable()
export class MetricsService implements OnApplicationShutdown {
  readonly registry = new Registry();
  readonly loop = new EventLoopDelay(WINDOW_MS, LOOP_RESOLUTION_MS);

  private readonly requests = new Counter({
    name: 'bidder_bid_requests_total',
    help: 'Bid requests by outcome (bid, nobid by reason, bad_request = 400, too_large = 413, error = a bug answered as a no-bid, shed = answered at once under overload) and HTTP status.',
    labelNames: ['outcome', 'reason', 'status'],
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'bidder_bid_request_duration_seconds',
    help: 'Time spent in the bid handler, from the request reaching it to the answer being ready.',
    labelNames: ['outcome'],
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });
  private readonly price = new Histogram({
    name: 'bidder_bid_price_cpm',
    help: 'Price of each bid returned (CPM, response currency).',
    buckets: PRICE_BUCKETS,
    registers: [this.registry],
  });
  private readonly wait = new Histogram({
    name: 'bidder_bid_request_wait_seconds',
    help: 'How long a bid request can have waited (socket buffers, the event loop) before the bidder looked at it: an upper bound; overload sheds on it.',
    buckets: WAIT_BUCKETS,
    registers: [this.registry],
  });
  /** No-bid reason → its series' labels; past MAX_REASONS reasons, "other". */
  private readonly reasons = new Map<string, RequestLabels>();
  private readonly scrapeHooks: Array<() => void> = [];

  constructor(@Inject(CONFIG) config: Config) {
    this.registry.setDefaultLabels({ worker: config.workerId });
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: LOOP_RESOLUTION_MS });

    // Every fixed series is exported from the start, at 0.
    for (const labels of Object.values(REQUEST_LABELS)) this.requests.inc(labels, 0);
    this.requests.inc(this.nobidLabels('other'), 0);
    for (const outcome of OUTCOMES) this.duration.zero(DURATION_LABELS[outcome]);

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
    this.requests.inc(outcome === 'nobid' ? this.nobidLabels(reason ?? 'other') : REQUEST_LABELS[outcome]);
    if (seconds >= 0) this.duration.observe(DURATION_LABELS[outcome], seconds);
  }

  /** One call per bid request that reached the bidding: how long it can have waited before (seconds). */
  bidWait(seconds: number): void {
    if (seconds >= 0) this.wait.observe(seconds);
  }

  /** One call per bid returned: its price (CPM, response currency). */
  bidPrice(price: number): void {
    if (price >= 0) this.price.observe(price);
  }

  /** Runs `fn` before every scrape (to refresh figures read from elsewhere). */
  onScrape(fn: () => void): void {
    this.scrapeHooks.push(fn);
  }

  /** This worker's metrics in Prometheus text format. */
  async render(): Promise<string> {
    for (const fn of this.scrapeHooks) fn();
    return this.registry.metrics();
  }

  /** This worker's metrics as prom-client JSON (what the cluster view aggregates). */
  async snapshot(): Promise<MetricFamily[]> {
    for (const fn of this.scrapeHooks) fn();
    return (await this.registry.getMetricsAsJSON()) as unknown as MetricFamily[];
  }

  onApplicationShutdown(): void {
    this.loop.stop();
  }

  private nobidLabels(reason: string): RequestLabels {
    let labels = this.reasons.get(reason);
    if (labels === undefined) {
      labels = this.reasons.size >= MAX_REASONS ? this.nobidLabels('other') : { outcome: 'nobid', reason, status: '204' };
      this.reasons.set(reason, labels);
    }
    return labels;
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
}
