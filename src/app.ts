import 'reflect-metadata';
import * as http from 'node:http';
import type { LoggerService } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import pino from 'pino';
import { AppModule } from './app.module';
import { BID_PATH, BidRoute, isBidTarget } from './bidding/bid-route';
import type { Config } from './config/config';
import { Lifecycle } from './health/lifecycle';
import { ClusterMetrics } from './metrics/cluster-metrics';
import { MetricsService } from './metrics/metrics.service';
import { isNoticeTarget, TrackingRoutes } from './tracking/tracking.routes';


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

/** The application logger: one JSON line per event (`level`, `time` epoch ms, `pid`, `worker`, `msg`, ...). */
export function createPino(config: Config): pino.Logger {
  return pino(
    {
      level: config.logLevel,
      base: { pid: process.pid, worker: config.workerId },
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

// Exchanges keep connections alive (OpenRTB 2.6 §2.1): don't close idle ones early.
const KEEP_ALIVE_MS = 65_000;

/** The hot routes served without Fastify once set (null: through Fastify). */
interface FrontRoutes {
  bid: http.RequestListener | null;
  notice: http.RequestListener | null;
}

/**
 * The HTTP server, in front of Fastify: bid POSTs and notice GETs go straight to their routes' raw
 * handlers once set (the hot paths without Fastify's per-request machinery, see BidRoute),
 * everything else to Fastify. Timeouts as Fastify sets them on a server it creates itself.
 */
function frontServer(fastifyHandler: http.RequestListener, front: FrontRoutes): http.Server {
  const server = http.createServer((req, res) => {
    const method = req.method;
    if (method === 'POST') {
      if (front.bid !== null && isBidTarget(req.url)) return front.bid(req, res);
    } else if (method === 'GET') {
      if (front.notice !== null && isNoticeTarget(req.url)) return front.notice(req, res);
    }
    fastifyHandler(req, res);
  });
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  server.requestTimeout = 0;
  server.setTimeout(0);
  return server;
}

/**
 * Builds the Nest application on Fastify. Bodies are read as raw buffers by one catch-all parser
 * so that the bid route decides itself about gzip, size (413) and malformed JSON (400):
 * exchanges send JSON with or without Content-Type (OpenRTB 2.6 §2.3).
 */
export async function createApp(config: Config): Promise<NestFastifyApplication> {
  const logger = createPino(config);
  const front: FrontRoutes = { bid: null, notice: null };
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    keepAliveTimeout: KEEP_ALIVE_MS,
    serverFactory: (handler: http.RequestListener) => frontServer(handler, front),
    // On close, finish what arrives on open keep-alive connections instead of answering 503, so
    // that `pm2 reload` fails no request (Lifecycle drains open connections before this close).
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    // No Nest middleware is used: without @fastify/middie no request pays for its hook.
    skipMiddie: true,
    // No per-request logger on the hot path unless the access log is asked for (ACCESS_LOG):
    // Fastify then logs one line per request and one per response through the same pino.
    ...(config.accessLog ? { loggerInstance: logger } : { logger: false }),
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    bodyParser: false,
    logger: new NestPinoLogger(logger),
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: config.bodyLimitBytes }, (_req, body, done) => {
    done(null, body);
  });
  // On the Fastify route (access log on), a body over the limit (413) or with a bad Content-Length
  // (400) is refused by Fastify before the bid handler runs; count it with the bid outcomes all the
  // same. onError hooks cost nothing on requests that succeed.
  const metrics = app.get(MetricsService);
  fastify.addHook('onError', (req, reply, err: Error & { statusCode?: number }, done) => {
    if (req.routeOptions.url === BID_PATH) {
      const seconds = reply.elapsedTime / 1000;
      if (err.statusCode === 413) metrics.bidRequest('too_large', null, seconds);
      else if (err.statusCode === 400) metrics.bidRequest('bad_request', null, seconds);
    }
    done();
  });
  // With the access log on, bids and notices go through Fastify too, which logs each request and response.
  if (!config.accessLog) {
    front.bid = app.get(BidRoute).handleRaw;
    front.notice = app.get(TrackingRoutes).handleRaw;
  }
  // useProcessExit: exit 0 after the hooks (log flush) instead of re-raising the signal.
  app.enableShutdownHooks(['SIGINT', 'SIGTERM'], { useProcessExit: true });
  return app;
}

/** Starts listening and marks the worker ready. */
export async function listen(app: NestFastifyApplication, config: Config): Promise<string> {
  await app.listen(config.port, config.host);
  app.get(Lifecycle).started = true;
  // Show this worker as ready in the machine view now rather than at the next period.
  app.get(ClusterMetrics).publishInBackground();
  return app.getUrl();
}
