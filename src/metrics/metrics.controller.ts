import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { HttpAnswer } from '../http/answer';
import { HttpServers } from '../http/http.module';
import { Route } from '../http/route.decorator';
import { CUT_REASONS, type RouteRequest } from '../http/server';
import { ClusterMetrics } from './cluster-metrics';
import { MetricsService } from './metrics.service';

const prometheus = (text: string): HttpAnswer => ({ status: 200, headers: { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE }, payload: text });

/** `GET /metrics` and `GET /metrics/cluster`, on the admin port only; the HTTP servers' own figures. */
@Injectable()
export class MetricsRoutes implements OnModuleInit {
  constructor(
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
    private readonly metrics: MetricsService,
    private readonly cluster: ClusterMetrics,
  ) {}

  onModuleInit(): void {
    if (this.servers === null) return;
    const s = this.servers.stats;
    this.metrics.counter(
      'bidder_http_connections_cut_total',
      'Connections cut or refused before any route ran: missed header or request deadline, over HTTP_MAX_CONNECTIONS (the newcomer refused, or the longest-idle connection closed for it), headers too large, malformed HTTP.',
      ['reason'],
      () => CUT_REASONS.map((reason) => ({ value: s.cut[reason], labels: { reason } })),
    );
    const servers = this.servers;
    this.metrics.gauge('bidder_http_connections_open', 'Open HTTP connections, by port (HTTP_MAX_CONNECTIONS caps each).', 'sum', ['port'], () => [
      { value: servers.public.connections.size, labels: { port: 'public' } },
      { value: servers.admin.connections.size, labels: { port: 'admin' } },
    ]);
    this.metrics.counter('bidder_http_send_errors_total', 'Answers Node refused to send (answered 500 or closed instead).', [], () => [{ value: s.sendErrors, labels: {} }]);
  }

  /** This worker's figures, every series labelled `worker`. */
  @Route({ method: 'GET', path: '/metrics', on: 'admin' })
  async worker(): Promise<HttpAnswer> {
    return prometheus(await this.metrics.render());
  }

  /**
   * The whole machine (see ClusterMetrics): every live worker's figures added up, or with
   * `?by=worker` each worker's series with its `worker` label (what Prometheus should scrape:
   * a worker's restart then resets only its own series).
   */
  @Route({ method: 'GET', path: '/metrics/cluster', on: 'admin' })
  async machine(r: RouteRequest): Promise<HttpAnswer> {
    try {
      return prometheus(await this.cluster.machine(r.query.by === 'worker'));
    } catch (e) {
      return {
        status: 503,
        headers: { 'content-type': 'text/plain; charset=utf-8' },
        payload: `# machine view unavailable: ${e instanceof Error ? e.message : String(e)}\n`,
      };
    }
  }
}
