import { Registry } from 'prom-client';
import { type HttpAnswer, jsonAnswer } from '../http/answer';
import { HttpServer, HttpStats } from '../http/server';
import { TurnClock } from '../http/turn-clock';
import type { ShipperMetrics } from './shipper.metrics';
import type { ShipperStatus } from './shipper.service';

/** Deadlines and limits for a scrape-and-probe server: nothing here reads a body. */
const SETTINGS = { headersTimeoutMs: 5_000, requestTimeoutMs: 10_000, keepAliveTimeoutMs: 5_000, maxConnections: 64, bodyLimitBytes: 1024 };

/**
 * The shipper's small HTTP server (the bidder's server module, src/http/server.ts): `GET /metrics`
 * (Prometheus text), `GET /health/live` (200 while the process answers) and `GET /health/ready`
 * (200, or 503 with the problems: Redis away, storage failing, lease held by another process, stopping).
 */
export class AdminServer {
  private server: HttpServer | null = null;

  constructor(
    private readonly metrics: ShipperMetrics,
    private readonly status: () => ShipperStatus | Promise<ShipperStatus>,
    private readonly shipperId: string,
  ) {}

  async listen(port: number, host: string): Promise<string> {
    const server = new HttpServer(SETTINGS, { stats: new HttpStats(), turns: new TurnClock(null), accessLog: null, errors: { error: () => undefined } });
    server.route({ method: 'GET', path: '/metrics', route: { handle: () => this.prometheus() } });
    server.route({ method: 'GET', path: '/health/live', route: { handle: () => jsonAnswer(200, { status: 'ok', shipper: this.shipperId, pid: process.pid }) } });
    server.route({ method: 'GET', path: '/health/ready', route: { handle: () => this.ready() } });
    this.server = server;
    return server.listen(port, host);
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.server.closeAllConnections();
    await s.close();
  }

  private async prometheus(): Promise<HttpAnswer> {
    return { status: 200, headers: { 'content-type': Registry.PROMETHEUS_CONTENT_TYPE, 'cache-control': 'no-store' }, payload: await this.metrics.render() };
  }

  private async ready(): Promise<HttpAnswer> {
    const s = await this.status();
    const a = jsonAnswer(s.ready ? 200 : 503, { status: s.ready ? 'ready' : 'not ready', shipper: this.shipperId, pid: process.pid, problems: s.problems });
    a.headers['cache-control'] = 'no-store';
    return a;
  }
}
