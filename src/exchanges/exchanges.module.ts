import { Inject, Injectable, Logger, Module, type OnModuleInit } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { errorAnswer, type HttpAnswer } from '../http/answer';
import type { MetricSample } from '../metrics/scraped';
import { MetricsService } from '../metrics/metrics.service';
import { ExchangeGate, UNKNOWN } from './exchanges';

/** How often at most a refused caller is written to the process log (the count covers the rest). */
const REFUSED_LOG_INTERVAL_MS = 10_000;

/**
 * The bid endpoint's callers: which source each request is (ExchangeGate), counted per exchange,
 * refusals counted and written to the process log at most once per 10 s (with how many since and
 * the last caller's address). Refused requests are not bid log records: they were never bid
 * requests of an exchange, and an unauthenticated flood must not fill the log.
 */
@Injectable()
export class Exchanges implements OnModuleInit {
  private readonly logger = new Logger('Exchanges');
  readonly gate: ExchangeGate;
  /** Accepted requests per source index; refused ones. */
  readonly accepted: Float64Array;
  refused = 0;
  private refusedLogged = 0;
  private lastRefusedLogAt = -Infinity;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly metrics: MetricsService,
  ) {
    this.gate = new ExchangeGate(config.exchanges);
    this.accepted = new Float64Array(this.gate.names.length);
  }

  onModuleInit(): void {
    if (this.gate.open && this.config.nodeEnv === 'production') {
      this.logger.warn('EXCHANGES_FILE is not set: the bid endpoint answers ANY caller, and any caller can reserve campaign budget; list your exchanges in EXCHANGES_FILE (docs/operations.md)');
    } else if (!this.gate.open) {
      this.logger.log(`bid endpoint open to ${this.gate.names.length - 1} exchange(s): ${this.gate.names.slice(1).join(', ')}; other callers get 403`);
    }
    this.metrics.counter('bidder_exchange_requests_total', `Bid requests by calling exchange ("open" when EXCHANGES_FILE is unset; "unknown": refused with 403).`, ['exchange'], () => {
      const out: MetricSample[] = [];
      for (let i = this.gate.open ? 0 : 1; i < this.gate.names.length; i++) out.push({ value: this.accepted[i], labels: { exchange: this.gate.names[i] } });
      if (!this.gate.open) out.push({ value: this.refused, labels: { exchange: 'unknown' } });
      return out;
    });
  }

  /**
   * The bid route's admission (EXCHANGES_FILE set), from the request's head before its body is read:
   * the caller's source index, counted, or a 403 (counted as refused and, now and then, logged).
   */
  readonly admit = (headers: Parameters<ExchangeGate['identify']>[0], remoteAddress: string | undefined): HttpAnswer | number => {
    const s = this.gate.identify(headers, remoteAddress);
    if (s !== UNKNOWN) {
      this.accepted[s]++;
      return s;
    }
    this.refusedOne(remoteAddress);
    return errorAnswer(403, 'caller is not a configured exchange (EXCHANGES_FILE)');
  };

  /** Bid path, EXCHANGES_FILE unset: a request of the open endpoint (source 0), counted. */
  open(): number {
    this.accepted[0]++;
    return 0;
  }

  private refusedOne(remoteAddress: string | undefined): void {
    this.refused++;
    const now = performance.now();
    if (now - this.lastRefusedLogAt >= REFUSED_LOG_INTERVAL_MS) {
      this.logger.warn(`refused ${this.refused - this.refusedLogged} bid request(s) from callers that are no configured exchange; the last from ${remoteAddress ?? 'an unknown address'}`);
      this.refusedLogged = this.refused;
      this.lastRefusedLogAt = now;
    }
  }

  /** A source's name for log records and metrics. */
  name(source: number): string {
    return this.gate.names[source] ?? 'unknown';
  }
}

@Module({ providers: [Exchanges], exports: [Exchanges] })
export class ExchangesModule {}
