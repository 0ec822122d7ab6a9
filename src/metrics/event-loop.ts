import { monitorEventLoopDelay, type ELDHistogram } from 'node:perf_hooks';

/** Quantiles of the event-loop delay over the last completed window, in seconds. */
export interface LoopDelayWindow {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly max: number;
  readonly mean: number;
}

const EMPTY: LoopDelayWindow = Object.freeze({ p50: 0, p90: 0, p99: 0, max: 0, mean: 0 });

/**
 * Event-loop delay (node:perf_hooks monitorEventLoopDelay) summarised per fixed window. The window
 * is closed by its own timer, not by scrapes, so two scrapers (Prometheus, the cluster publisher)
 * see the same figures and neither resets the other's view.
 */
export class EventLoopDelay {
  private readonly histogram: ELDHistogram;
  private timer: NodeJS.Timeout | null = null;
  private last: LoopDelayWindow = EMPTY;

  constructor(
    readonly windowMs: number,
    resolutionMs = 10,
  ) {
    this.histogram = monitorEventLoopDelay({ resolution: resolutionMs });
  }

  start(): void {
    if (this.timer) return;
    this.histogram.enable();
    this.timer = setInterval(() => this.roll(), this.windowMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.histogram.disable();
  }

  /** The last completed window (zeros before the first one closes). */
  window(): LoopDelayWindow {
    return this.last;
  }

  /** Closes the current window. */
  roll(): void {
    const h = this.histogram;
    const ns = 1e-9;
    this.last =
      h.count === 0
        ? EMPTY
        : {
            p50: h.percentile(50) * ns,
            p90: h.percentile(90) * ns,
            p99: h.percentile(99) * ns,
            max: h.max * ns,
            mean: h.mean * ns,
          };
    h.reset();
  }
}
