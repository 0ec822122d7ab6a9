import { DiscoveryService } from '@nestjs/core';

/** The worker's two servers (src/http/http.module.ts): `public` (exchanges, browsers) and `admin` (ADMIN_PORT). */
export type RoutePort = 'public' | 'admin' | 'both';

export interface RouteOptions {
  readonly method: 'GET' | 'POST';
  /** An exact path, or a prefix when `prefix` is true. A query string may follow either. */
  readonly path: string;
  readonly prefix?: boolean;
  readonly on: RoutePort;
}

/**
 * Marks a provider's method as the handler of an HTTP route (it takes a RouteRequest and returns
 * an HttpAnswer, or its promise). HttpModule adds every marked method of every provider to its
 * server(s) when the application starts (none in an application without HTTP). A method named
 * `handle` makes its whole provider the route (src/http/server.ts, HttpRoute), so that its `admit`
 * and `refused`, when it has them, are the route's too.
 *
 * ```ts
 * @Route({ method: 'GET', path: '/health/live', on: 'both' })
 * live(): HttpAnswer { ... }
 * ```
 */
export const Route = DiscoveryService.createDecorator<RouteOptions>();
