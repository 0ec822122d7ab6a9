import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import * as net from 'node:net';
import { BeforeApplicationShutdown, Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { HttpServers } from '../http/http.module';
import { Health } from './health.service';

/** How long open keep-alive connections get to carry one more request (answered `Connection: close`). */
export const DRAIN_IDLE_MS = 1_000;
/** How long requests still running after that get to finish before their connections are cut. */
export const DRAIN_ACTIVE_MS = 3_000;
/** Upper bound of the whole HTTP drain; PM2's kill_timeout must exceed it plus SHUTDOWN_TIMEOUT_MS. */
export const DRAIN_MAX_MS = DRAIN_IDLE_MS + DRAIN_ACTIVE_MS + 500;

function closeAfterResponse(_req: IncomingMessage, res: ServerResponse): void {
  res.setHeader('connection', 'close');
}

function within(p: Promise<void>, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const t = setTimeout(() => resolve(false), ms);
    void p.then(() => {
      clearTimeout(t);
      resolve(true);
    });
  });
}

/**
 * Stops taking connections and lets open ones finish without failing a request. Closing an idle
 * keep-alive connection at once (what http.Server#close does) races with a client that is just
 * sending on it: that request fails. So: stop accepting (PM2's cluster master then hands new
 * connections to the other workers), answer whatever arrives on open connections with
 * `Connection: close` so clients retire them, and close the ones still idle only after DRAIN_IDLE_MS.
 */
export async function drainHttpServer(server: Server, idleMs = DRAIN_IDLE_MS, activeMs = DRAIN_ACTIVE_MS): Promise<void> {
  if (!server.listening) return;
  server.prependListener('request', closeAfterResponse);
  // net.Server#close, not http.Server#close: the latter also drops idle connections right away.
  const closed = new Promise<void>((resolve) => {
    net.Server.prototype.close.call(server, () => resolve());
  });
  if (await within(closed, idleMs)) return;
  server.closeIdleConnections();
  if (await within(closed, activeMs)) return;
  server.closeAllConnections();
  await within(closed, 500);
}

/** Tracks whether this worker has started listening and whether it is shutting down; drains both servers on the way out. */
@Injectable()
export class Lifecycle implements BeforeApplicationShutdown, OnModuleInit {
  started = false;
  stopping = false;

  constructor(
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
    private readonly health: Health,
  ) {}

  onModuleInit(): void {
    this.health.register({
      name: 'lifecycle',
      problem: () =>
        !this.started ? { level: 'not_ready', text: 'starting' } : this.stopping ? { level: 'not_ready', text: 'shutting down' } : null,
    });
  }

  /** Nest calls this after onModuleDestroy and before it closes the HTTP server and runs onApplicationShutdown. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    if (!this.started || this.servers === null) return;
    this.servers.turns.stop();
    await Promise.all([drainHttpServer(this.servers.public.server), drainHttpServer(this.servers.admin.server)]);
  }
}
