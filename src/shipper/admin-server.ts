import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { ShipperMetrics } from './shipper.metrics';
import type { ShipperStatus } from './shipper.service';

/**
 * The shipper's small HTTP server (node:http, no framework): `GET /metrics` (Prometheus text),
 * `GET /health/live` (200 while the process answers) and `GET /health/ready` (200, or 503 with the
 * problems: Redis away, storage failing, lease held by another process, stopping).
 */
export class AdminServer {
  private server: http.Server | null = null;

  constructor(
    private readonly metrics: ShipperMetrics,
    private readonly status: () => ShipperStatus,
    private readonly shipperId: string,
  ) {}

  async listen(port: number, host: string): Promise<string> {
    const server = http.createServer((req, res) => void this.handle(req, res));
    server.keepAliveTimeout = 5_000;
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const a = server.address() as AddressInfo;
    return `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
  }

  async close(): Promise<void> {
    const s = this.server;
    this.server = null;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'application/json', JSON.stringify({ error: 'method not allowed' }));
    try {
      switch (url) {
        case '/metrics':
          return send(res, 200, Registry.PROMETHEUS_CONTENT_TYPE, await this.metrics.render());
        case '/health/live':
          return send(res, 200, 'application/json', JSON.stringify({ status: 'ok', shipper: this.shipperId, pid: process.pid }));
        case '/health/ready': {
          const s = this.status();
          const body = { status: s.ready ? 'ready' : 'not ready', shipper: this.shipperId, pid: process.pid, problems: s.problems };
          return send(res, s.ready ? 200 : 503, 'application/json', JSON.stringify(body));
        }
        default:
          return send(res, 404, 'application/json', JSON.stringify({ error: 'not found' }));
      }
    } catch (e) {
      return send(res, 500, 'application/json', JSON.stringify({ error: e instanceof Error ? e.message : String(e) }));
    }
  }
}

function send(res: http.ServerResponse, status: number, type: string, body: string): void {
  res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body), 'cache-control': 'no-store' });
  res.end(body);
}
