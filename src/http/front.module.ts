import { DynamicModule, Global, Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { ComputedCounter } from '../metrics/fast-metrics';
import { MetricsService } from '../metrics/metrics.service';
import { CUT_REASONS, HttpFront } from './front';

/** Registers the front's figures with the worker's registry (read at scrape time). */
@Injectable()
class FrontMetrics implements OnModuleInit {
  constructor(
    private readonly front: HttpFront,
    private readonly metrics: MetricsService,
  ) {}

  onModuleInit(): void {
    const f = this.front;
    this.metrics.addComputed(
      new ComputedCounter(
        'bidder_http_connections_cut_total',
        'Connections cut or refused before any route ran: missed header or request deadline, over HTTP_MAX_CONNECTIONS, headers too large, malformed HTTP.',
        () => CUT_REASONS.map((reason) => ({ value: f.cut[reason], labels: { reason } })),
      ),
    );
    this.metrics.addComputed(
      new ComputedCounter('bidder_http_send_errors_total', 'Answers Node refused to send (answered 500 or closed instead).', () => [
        { value: f.sendErrors, labels: {} },
      ]),
    );
  }
}

/**
 * Provides the HTTP front (src/http/front.ts) that createApp built before Nest, so that routes add
 * themselves to it and the lifecycle drains its servers. An application context without HTTP (the
 * micro-benchmark) gets no front: routes then add nothing.
 */
@Global()
@Module({})
export class FrontModule {
  static forRoot(front: HttpFront | null): DynamicModule {
    return {
      module: FrontModule,
      providers: front === null ? [{ provide: HttpFront, useValue: null }] : [{ provide: HttpFront, useValue: front }, FrontMetrics],
      exports: [HttpFront],
    };
  }
}
