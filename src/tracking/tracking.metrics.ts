import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { MetricSample } from '../metrics/scraped';
import { MetricsService } from '../metrics/metrics.service';
import { NoticeStats } from './notice-stats';
import { RedisClock } from './redis-clock';

/** Registers the tracking module's figures with this worker's Prometheus registry (read at scrape time). */
@Injectable()
export class TrackingMetrics implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    private readonly notices: NoticeStats,
    private readonly clock: RedisClock,
  ) {}

  onModuleInit(): void {
    this.metrics.gauge('bidder_clock_offset_seconds', 'Redis\u2019s clock minus this host\u2019s, s, as last measured (0 before): positive, the host is behind. The worker follows Redis\u2019s clock; past 1 s it says degraded.', 'max', [], () => [{ value: this.clock.offsetMs() / 1000, labels: {} }]);
    this.metrics.counter('bidder_notices_total', 'Notice and tracker calls by type (win, bill, loss, imp, click) and outcome (ok, duplicate, rejected, expired, error, ...).', ['type', 'outcome'], () => {
      const out: MetricSample[] = [];
      for (const [k, v] of this.notices.counts) {
        const [type, outcome] = k.split('\u0000');
        out.push({ value: v, labels: { type: type, outcome: outcome } });
      }
      return out;
    });
    this.metrics.counter('bidder_notices_refused_total', 'Notice and tracker calls refused (4xx), by type and reason: payload_missing, payload_bad_signature, payload_unknown_key, payload_undecodable, payload_bad_version, expired, future, price_invalid, price_currency, price_above_bid. A refused bill is spend the budget never counts.', ['type', 'reason'], () => {
      const out: MetricSample[] = [];
      for (const [k, v] of this.notices.refusals) {
        const [type, reason] = k.split('\u0000');
        out.push({ value: v, labels: { type: type, reason: reason } });
      }
      return out;
    });
  }
}
