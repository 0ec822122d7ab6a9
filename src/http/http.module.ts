import { DynamicModule, Global, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common';
import type pino from 'pino';
import type { Config } from '../config/config';
import { HttpServer, HttpStats, type ServerSettings } from './server';
import { TurnClock } from './turn-clock';

export function serverSettings(c: Config): ServerSettings {
  return {
    headersTimeoutMs: c.httpHeadersTimeoutMs,
    requestTimeoutMs: c.httpRequestTimeoutMs,
    keepAliveTimeoutMs: c.httpKeepAliveTimeoutMs,
    maxConnections: c.httpMaxConnections,
    bodyLimitBytes: c.bodyLimitBytes,
  };
}

/**
 * The worker's two HTTP servers: `public` (exchanges and browsers: bids, notices, the probes) and
 * `admin` (ADMIN_PORT: metrics, the machine view, debug routes, the probes). Routes add themselves
 * to one of them when their module starts. Nest's application runs on the admin instance (createApp);
 * the public one is plain Fastify, no Nest code on its requests.
 */
export class HttpServers {
  readonly stats = new HttpStats();
  readonly turns = new TurnClock();
  readonly public: HttpServer;
  readonly admin: HttpServer;

  constructor(config: Config, logger: pino.Logger) {
    const deps = { stats: this.stats, turns: this.turns, accessLog: config.accessLog ? logger : null, errors: logger };
    this.public = new HttpServer(serverSettings(config), deps);
    // Nest sets the admin instance's not-found and error handlers itself.
    this.admin = new HttpServer(serverSettings(config), deps, { nest: true });
  }
}

/** Closes the public instance last (the admin one is Nest's). */
@Injectable()
class HttpServersHooks implements OnApplicationShutdown {
  constructor(private readonly servers: HttpServers) {}

  /** After the lifecycle's drain (beforeApplicationShutdown) and Nest's close of the admin instance. */
  async onApplicationShutdown(): Promise<void> {
    this.servers.turns.stop();
    await this.servers.public.close();
  }
}

/**
 * Provides the HTTP servers createApp built before Nest, so that routes add themselves to them and
 * the lifecycle drains them. An application context without HTTP (the micro-benchmark) gets none:
 * routes then add nothing.
 */
@Global()
@Module({})
export class HttpModule {
  static forRoot(servers: HttpServers | null): DynamicModule {
    return {
      module: HttpModule,
      providers: servers === null ? [{ provide: HttpServers, useValue: null }] : [{ provide: HttpServers, useValue: servers }, HttpServersHooks],
      exports: [HttpServers],
    };
  }
}
