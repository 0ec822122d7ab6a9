import 'reflect-metadata';
import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import pino from 'pino';
import { AppModule } from './app.module';
import { ConfigError, type Config } from './config/config';
import { Lifecycle } from './health/lifecycle';
import { ClusterMetrics } from './metrics/cluster-metrics';
import { HttpServers } from './http/http.module';
import { LogService } from './log/log.service';
import { BiddingService } from './bidding/bidding.service';
import { warmUp, warmUpBodies, type WarmUpResult } from './bidding/warm-up';
import { CampaignStore } from './targeting/campaign-store';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

let stdout: pino.DestinationStream | null = null;

/**
 * One stdout destination per process. Under PM2 (cluster mode) it must be process.stdout: PM2
 * hooks its write() to carry each line to the app's log file; a write to fd 1 would bypass that
 * and land in the daemon's own log. Elsewhere pino's sonic-boom on fd 1: synchronous while only
 * application events are logged (a few lines, none lost on a crash), buffered when the access log
 * is on, flushed on exit.
 */
function stdoutDestination(buffered: boolean): pino.DestinationStream {
  if (stdout) return stdout;
  if (process.env.pm_id !== undefined) {
    stdout = process.stdout;
    return stdout;
  }
  const dest = pino.destination({ dest: 1, sync: !buffered, minLength: buffered ? 4096 : 0 });
  if (buffered) {
    process.once('exit', () => {
      try {
        dest.flushSync();
      } catch {
        // stdout gone: nothing left to do
      }
    });
  }
  stdout = dest;
  return dest;
}

/** The application logger: one JSON line per event (`level`, `time` epoch ms, `pid`, `worker`, `host`, `msg`, ...). */
export function createPino(config: Config): pino.Logger {
  return pino(
    {
      level: config.logLevel,
      base: { pid: process.pid, worker: config.workerId, host: config.hostId },
      formatters: { level: (label) => ({ level: label }) },
    },
    stdoutDestination(config.accessLog),
  );
}

const STACK = /\n\s+at /;
/** Nest's start-up chatter (one line per module and route) goes to debug, not info. */
const NEST_CHATTER = new Set(['NestFactory', 'InstanceLoader', 'RoutesResolver', 'RouterExplorer', 'NestApplication']);

/** Nest's LoggerService on pino: `log(message, context)`, `error(message, stack?, context?)`. */
export class NestPinoLogger implements LoggerService {
  constructor(readonly pino: pino.Logger) {}

  log(message: unknown, ...params: unknown[]): void {
    this.write('info', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.write('error', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.write('warn', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.write('debug', message, params);
  }
  verbose(message: unknown, ...params: unknown[]): void {
    this.write('trace', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.write('fatal', message, params);
  }

  private write(level: Level, message: unknown, params: unknown[]): void {
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    let last = params.length - 1;
    while (last >= 0 && params[last] === undefined) last--;
    if (last >= 0 && typeof params[last] === 'string' && !STACK.test(params[last] as string)) {
      fields.context = params[last];
      if (level === 'info' && NEST_CHATTER.has(params[last] as string)) {
        level = 'debug';
        if (!this.pino.isLevelEnabled(level)) return;
      }
      last--;
    }
    for (let i = 0; i <= last; i++) {
      const p = params[i];
      if (typeof p === 'string' && STACK.test(p)) fields.stack = p;
      else if (p instanceof Error) fields.err = p;
      else if (p !== undefined) fields[`arg${i}`] = p;
    }
    if (message instanceof Error) {
      fields.err = message;
      this.pino[level](fields, message.message);
    } else if (message !== null && typeof message === 'object') {
      this.pino[level]({ ...fields, ...(message as Record<string, unknown>) });
    } else {
      this.pino[level](fields, String(message));
    }
  }
}

/**
 * Builds the application: the two HTTP servers (src/http/), then Nest, which wires the providers and
 * runs on the admin instance (FastifyAdapter). The routes are plain Fastify routes, the providers'
 * methods marked with @Route (src/http/route.decorator.ts), added to the public or the admin instance
 * by HttpModule when the application starts; Nest's router serves none of them.
 */
export async function createApp(config: Config): Promise<NestFastifyApplication> {
  const logger = createPino(config);
  const servers = new HttpServers(config, logger);
  const adapter = new FastifyAdapter(servers.admin.fastify);
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config, servers), adapter, {
    bodyParser: false,
    // A provider that cannot start (a configuration error among them) throws to src/main.ts, which
    // says why in one line and picks the exit code; by default Nest would log it and exit 1 itself.
    abortOnError: false,
    logger: new NestPinoLogger(logger),
  });
  // An answer leaves once the records logged for it are in the crash journal.
  const journal = app.get(LogService).journal;
  servers.public.setBarrier(journal);
  servers.admin.setBarrier(journal);
  // useProcessExit: exit 0 after the hooks (log flush) instead of re-raising the signal.
  app.enableShutdownHooks(['SIGINT', 'SIGTERM'], { useProcessExit: true });
  return app;
}

/** Longest a warm-up may take (WARM_UP_REQUESTS is cut short past it). */
const WARM_UP_MAX_MS = 3_000;

/**
 * Runs the bid path's warm-up (src/bidding/warm-up.ts) over requests made from the campaigns in
 * use: WARM_UP_REQUESTS of them, at most WARM_UP_MAX_MS.
 */
export function warmUpBidPath(app: NestFastifyApplication, config: Config): WarmUpResult {
  const bodies = warmUpBodies(app.get(CampaignStore).current().candidates, 64);
  return warmUp(app.get(BiddingService), bodies, config.warmUpRequests, WARM_UP_MAX_MS);
}

/**
 * Starts listening (public port, then admin port) and marks the worker ready; resolves with the
 * public URL. The bid path is warmed up first (`warmed` is told what that did).
 */
export async function listen(app: NestFastifyApplication, config: Config, warmed?: (r: WarmUpResult) => void): Promise<string> {
  await app.init();
  // Before the first connection: under PM2 a worker takes traffic as soon as it listens.
  const warm = warmUpBidPath(app, config);
  warmed?.(warm);
  const servers = app.get(HttpServers);
  const url = await listenOn('PORT', config.port, config.host, () => servers.public.listen(config.port, config.host));
  await listenOn('ADMIN_PORT', config.adminPort, config.adminHost, () => app.listen(config.adminPort, config.adminHost));
  servers.turns.start();
  app.get(Lifecycle).started = true;
  // Show this worker as ready in the machine view now rather than at the next period.
  app.get(ClusterMetrics).publishInBackground();
  return url;
}

/**
 * A port another program holds, or one this user may not open, is a configuration error (PM2 does
 * not restart it: src/main.ts), named by its variable.
 */
async function listenOn<T>(name: string, port: number, host: string, listen: () => Promise<T>): Promise<T> {
  try {
    return await listen();
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new ConfigError([`${name}=${port}: ${host}:${port} is in use by another program; choose a free port`]);
    if (code === 'EACCES') throw new ConfigError([`${name}=${port}: not allowed to listen on ${host}:${port} (below 1024 needs privileges); choose a port from 1024`]);
    if (code === 'EADDRNOTAVAIL') throw new ConfigError([`${name}=${port}: ${host} is no address of this machine (HOST / ADMIN_HOST)`]);
    throw e;
  }
}

/** The admin server's URL (`http://host:port`), once listening. */
export function adminUrl(app: NestFastifyApplication): string {
  return app.get(HttpServers).admin.url();
}
