import { DynamicModule, Global, Inject, Injectable, Module, type OnApplicationShutdown, type OnModuleInit, Optional } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, MetadataScanner } from '@nestjs/core';
import type pino from 'pino';
import type { Config } from '../config/config';
import { Route } from './route.decorator';
import { HttpServer, type HttpRoute, HttpStats, type RouteRequest, type ServerSettings } from './server';
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
 * Adds every method marked with @Route, of every provider of the application, to its server(s),
 * once every provider is built and before the servers listen.
 */
@Injectable()
class RouteRegistry implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
  ) {}

  onModuleInit(): void {
    const servers = this.servers;
    if (servers === null) return;
    for (const wrapper of this.discovery.getProviders()) {
      const instance: unknown = wrapper.instance;
      if (typeof instance !== 'object' || instance === null) continue;
      for (const name of this.scanner.getAllMethodNames(Object.getPrototypeOf(instance) as object)) {
        const options = this.discovery.getMetadataByDecorator(Route, wrapper, name);
        if (options === undefined) continue;
        const handler = (instance as Record<string, (r: RouteRequest) => ReturnType<HttpRoute['handle']>>)[name];
        const route: HttpRoute = name === 'handle' ? (instance as HttpRoute) : { handle: (r) => handler.call(instance, r) };
        const on = options.on === 'both' ? [servers.public, servers.admin] : [servers[options.on]];
        for (const server of on) server.route({ method: options.method, path: options.path, prefix: options.prefix, route });
      }
    }
  }
}

/**
 * Provides the HTTP servers createApp built before Nest, adds the routes (RouteRegistry) and closes
 * the public server last; the lifecycle drains them. An application context without HTTP (the
 * micro-benchmark) gets none: no route is added.
 */
@Global()
@Module({})
export class HttpModule {
  static forRoot(servers: HttpServers | null): DynamicModule {
    return {
      module: HttpModule,
      imports: [DiscoveryModule],
      providers: servers === null ? [{ provide: HttpServers, useValue: null }] : [{ provide: HttpServers, useValue: servers }, HttpServersHooks, RouteRegistry],
      exports: [HttpServers],
    };
  }
}
