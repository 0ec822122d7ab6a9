/**
 * The bidder's HTTP servers: Fastify instances made alike (the public one, the admin one, the
 * shipper's), and what every request meets before any route code runs.
 *
 * - Deadlines through Node's server options (no per-request timer): a client gets
 *   HTTP_HEADERS_TIMEOUT_MS to send its headers and HTTP_REQUEST_TIMEOUT_MS to send the whole
 *   request; past them the connection is answered 408 and closed. The connection cap
 *   (HTTP_MAX_CONNECTIONS) closes the longest-idle keep-alive connection for a newcomer
 *   (connections.ts). Every cut is counted (`HttpStats.cut`).
 * - Request bodies: one content-type parser for every type, the project's reader (body.ts):
 *   BODY_LIMIT_BYTES before and after Content-Encoding, the bytes kept as they came for the log. A
 *   body refused there reaches the route as a refusal, so that the route words and counts it.
 * - Routes are plain Fastify routes that compute an answer as data (answer.ts); the reply sends it
 *   (outbox.ts, after the crash journal's commit) and sending never throws. Each instance has only
 *   the routes registered on it: the admin routes do not exist on the public instance, whatever the
 *   spelling of a request target.
 * - One path for every request: Node's server dates it, then Fastify routes it; a route's admission
 *   is its `onRequest` hook, its body the content-type parser, its answer the handler's reply.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import * as querystring from 'node:querystring';
import type { ParsedUrlQuery } from 'node:querystring';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest, type onRequestHookHandler } from 'fastify';
import type pino from 'pino';
import { errorAnswer, type HttpAnswer, internalError } from './answer';
import { BodyError, decodeBody, readBody } from './body';
import { Connections } from './connections';
import { type AnswerBarrier, Outbox } from './outbox';
import { TurnClock } from './turn-clock';

/** What a route gets. */
export interface RouteRequest {
  readonly method: string;
  /** The path as sent, without the query string. */
  readonly path: string;
  /** The query string parsed (repeated keys give arrays). */
  readonly query: ParsedUrlQuery;
  readonly headers: http.IncomingHttpHeaders;
  /** The TCP peer's address (what a check of the caller needs, with the headers); undefined once the socket is gone. */
  readonly remoteAddress: string | undefined;
  /** The body after Content-Encoding, for routes that read one; null otherwise. */
  readonly body: Buffer | null;
  /** performance.now() when the request was whole (its body read). */
  readonly receivedAt: number;
  /**
   * performance.now() of the earliest moment the request can have arrived (turn-clock.ts): it has
   * waited at most `receivedAt - arrivedAt` before the bidder looked at it.
   */
  readonly arrivedAt: number;
  /** What the route's `admit` said of the caller (0 for a route without one). */
  readonly caller: number;
}

/** A Fastify request as the admission hook leaves it. */
type Admitted = FastifyRequest & { caller: number };

export interface HttpRoute {
  /** The answer (a promise only when it waits on I/O). May throw: the answer is then a 500. */
  handle(r: RouteRequest): HttpAnswer | Promise<HttpAnswer>;
  /** The answer to a body refused before the route ran (413 too large, 400 empty, bad encoding or aborted). */
  refused?(status: 400 | 413, reason: string, r: RouteRequest): HttpAnswer;
  /**
   * Looks at a request's head before its body is read: a number lets it through (who the caller is,
   * handed to `handle` as `r.caller`), an answer refuses it (sent at once with `Connection: close`;
   * the body is neither buffered nor decoded).
   */
  admit?(headers: http.IncomingHttpHeaders, remoteAddress: string | undefined): HttpAnswer | number;
}

export interface RouteSpec {
  readonly method: 'GET' | 'POST';
  /** An exact path, or a prefix when `prefix` is true. A query string may follow either. */
  readonly path: string;
  readonly prefix?: boolean;
  readonly route: HttpRoute;
}

export type CutReason = 'headers_timeout' | 'body_timeout' | 'over_connection_limit' | 'idle_at_cap' | 'header_too_large' | 'malformed';
export const CUT_REASONS: readonly CutReason[] = ['headers_timeout', 'body_timeout', 'over_connection_limit', 'idle_at_cap', 'header_too_large', 'malformed'];

/** Counters shared by the servers of one process. */
export class HttpStats {
  /** Connections cut or refused before a route ran, by reason. */
  readonly cut: Record<CutReason, number> = { headers_timeout: 0, body_timeout: 0, over_connection_limit: 0, idle_at_cap: 0, header_too_large: 0, malformed: 0 };
  /** Answers that failed to be sent (answered 500 or closed instead). */
  sendErrors = 0;
}

export interface ServerSettings {
  readonly headersTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly maxConnections: number;
  readonly bodyLimitBytes: number;
}

export interface ServerDeps {
  readonly stats: HttpStats;
  /** Dates arrivals for shedding; one per process. */
  readonly turns: TurnClock;
  /** The access log (one line per request), or null. */
  readonly accessLog: pino.Logger | null;
  /** Where route failures are reported. */
  readonly errors: { error(o: object): void };
}

/** The body as the parser leaves it for the route: the bytes, or why they were refused. */
interface ReadBody {
  readonly bytes: Buffer | null;
  readonly refusal: BodyError | null;
  readonly receivedAt: number;
}

const NO_QUERY: ParsedUrlQuery = Object.freeze({});

/** An HTTP server: a Fastify instance with the settings above, and `route()` to add to it. */
export class HttpServer {
  readonly fastify: FastifyInstance;
  readonly server: http.Server;
  readonly connections: Connections;
  /** Where every answer leaves: after the crash journal's commit (outbox.ts). */
  private readonly outbox: Outbox;
  /** Requests that asked `Expect: 100-continue`, until their body is read: their answer, to send the 100 on. */
  private readonly awaitingContinue = new WeakMap<http.IncomingMessage, http.ServerResponse>();

  constructor(
    private readonly settings: ServerSettings,
    private readonly deps: ServerDeps,
    opts: { nest?: boolean } = {},
  ) {
    const s = settings;
    const stats = deps.stats;
    this.outbox = new Outbox(stats, deps.errors);
    this.connections = new Connections(s.maxConnections, (reason) => stats.cut[reason]++);
    const turns = deps.turns;
    const conns = this.connections;
    let server: http.Server | null = null;
    let handler: ((req: http.IncomingMessage, res: http.ServerResponse) => void) | null = null;
    const onRequest = (req: http.IncomingMessage, res: http.ServerResponse): void => {
      const now = performance.now();
      conns.began(req, res, now, turns.arrivedBy(now));
      handler!(req, res);
    };
    this.fastify = Fastify({
      // Node's server with the deadlines; every request is dated and its connection marked busy first.
      serverFactory: (fastifyHandler) => {
        handler = fastifyHandler;
        server = http.createServer(
          {
            headersTimeout: s.headersTimeoutMs,
            requestTimeout: s.requestTimeoutMs,
            keepAliveTimeout: s.keepAliveTimeoutMs,
            // How often Node checks the deadlines: a quarter of the shorter one, at least every second.
            connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(s.headersTimeoutMs / 4))),
          },
          onRequest,
        );
        // `Expect: 100-continue`: no automatic 100. It goes when the body is about to be read
        // (parseBody), after the route's admission: a refused caller is never asked for its body.
        server.on('checkContinue', (req: http.IncomingMessage, res: http.ServerResponse) => {
          this.awaitingContinue.set(req, res);
          onRequest(req, res);
        });
        // No inactivity timeout on the socket: the deadlines above and keep-alive cover every phase.
        server.setTimeout(0);
        return server;
      },
      clientErrorHandler: this.onClientError,
      bodyLimit: s.bodyLimitBytes,
      logger: false,
      // The request id is not used: a constant spares a string per request.
      genReqId: () => '',
      // Finish what arrives on open keep-alive connections while closing instead of answering 503, so
      // that `pm2 reload` fails no request (the lifecycle drains open connections before the close).
      return503OnClosing: false,
      forceCloseConnections: false,
      exposeHeadRoutes: true,
      // Node's parser, as the notice routes have always read their query strings.
      routerOptions: { querystringParser: (q: string) => querystring.parse(q) },
    });
    this.server = server!;
    this.connections.watch(this.server);
    const f = this.fastify;
    // Every request has the field the admission hook sets, so that all have one shape.
    f.decorateRequest('caller', 0);
    f.removeAllContentTypeParsers();
    // JSON named as well as every other type: Fastify caches its lookup of a named type only.
    f.addContentTypeParser('application/json', this.parseBody);
    f.addContentTypeParser('*', this.parseBody);
    if (opts.nest !== true) this.handleErrors();
    if (deps.accessLog !== null) {
      const log = deps.accessLog;
      f.addHook('onResponse', (req, reply, done) => {
        log.info({
          msg: 'request',
          method: req.method,
          url: req.url,
          status: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 1000) / 1000,
          bytes: Number(reply.getHeader('content-length') ?? 0),
        });
        done();
      });
    }
  }

  /** Unknown paths (404) and Fastify's own refusals (a Content-Type it cannot read, 415), worded as the routes word theirs. */
  private handleErrors(): void {
    this.fastify.setNotFoundHandler((_req, reply) => {
      this.outbox.send(reply, errorAnswer(404, 'not found'));
    });
    this.fastify.setErrorHandler((err: Error & { statusCode?: number; code?: string }, req, reply) => {
      const route = (req.routeOptions.config as { route?: HttpRoute }).route;
      if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' && route !== undefined) {
        this.refuse(reply, route, this.request(req, undefined), new BodyError(400, 'Content-Type is not a media type'), true);
        return;
      }
      const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
      if (status === 500) this.deps.errors.error({ msg: 'route failed', url: req.url.slice(0, 200), err });
      this.outbox.send(reply, status === 500 ? internalError() : errorAnswer(status, err.message));
    });
  }

  /** Adds a route. */
  route(spec: RouteSpec): void {
    const route = spec.route;
    const body = spec.method === 'POST';
    this.fastify.route({
      method: spec.method,
      url: spec.prefix === true ? `${spec.path}*` : spec.path,
      // Read back by the error handler (a Content-Type Fastify cannot read is refused before the route runs).
      config: { route },
      // Before the content-type parser: a caller refused by its head costs no body read.
      onRequest: route.admit === undefined ? undefined : this.admitting(route.admit.bind(route)),
      handler: (req: FastifyRequest, reply: FastifyReply): void => {
        const read = body ? (req.body as ReadBody | undefined) : undefined;
        // A POST without a body never reaches the parser.
        const refusal = body ? (read === undefined ? new BodyError(400, 'empty body') : read.refusal) : null;
        this.serve(route, this.request(req, read), refusal, reply);
      },
    });
  }

  /** A route's answer to `r`, or to the refusal of its body; sent through the outbox. */
  private serve(route: HttpRoute, r: RouteRequest, refusal: BodyError | null, to: FastifyReply): void {
    if (refusal !== null) {
      this.refuse(to, route, r, refusal);
      return;
    }
    let a: HttpAnswer | Promise<HttpAnswer>;
    try {
      a = route.handle(r);
    } catch (x) {
      a = this.failed(x, r.path);
    }
    if (a instanceof Promise) {
      a.then(
        (x) => this.outbox.send(to, x),
        (x: unknown) => this.outbox.send(to, this.failed(x, r.path)),
      );
    } else {
      this.outbox.send(to, a);
    }
  }

  /** What the route's admission says of a request's head: its caller, or its refusal (`Connection: close`). */
  private admitted(admit: NonNullable<HttpRoute['admit']>, raw: http.IncomingMessage): HttpAnswer | number {
    let a: HttpAnswer | number;
    try {
      a = admit(raw.headers, raw.socket.remoteAddress);
    } catch (x) {
      a = this.failed(x, raw.url ?? '');
    }
    // The unread body is not worth reading before a next request would be: close (Node discards what still arrives).
    if (typeof a !== 'number') a.headers.connection = 'close';
    return a;
  }

  private admitting(admit: NonNullable<HttpRoute['admit']>): onRequestHookHandler {
    return (req, reply, done) => {
      const a = this.admitted(admit, req.raw);
      if (typeof a === 'number') {
        (req as Admitted).caller = a;
        done();
        return;
      }
      this.outbox.send(reply, a);
    };
  }

  private request(req: FastifyRequest, read: ReadBody | undefined): RouteRequest {
    const url = req.url;
    const raw = req.raw;
    const q = url.indexOf('?');
    const now = performance.now();
    return {
      method: raw.method ?? '',
      path: q < 0 ? url : url.slice(0, q),
      query: q < 0 ? NO_QUERY : (req.query as ParsedUrlQuery),
      headers: raw.headers,
      remoteAddress: raw.socket.remoteAddress,
      body: read?.bytes ?? null,
      receivedAt: read?.receivedAt ?? now,
      arrivedAt: this.connections.arrivedAt(raw.socket, now),
      caller: (req as Admitted).caller,
    };
  }

  /** A request refused before its route ran, answered as the route words it. */
  private refuse(reply: FastifyReply, route: HttpRoute, r: RouteRequest, refusal: BodyError, unread = false): void {
    let a: HttpAnswer;
    try {
      a = route.refused?.(refusal.status, refusal.reason, r) ?? errorAnswer(refusal.status, refusal.reason);
    } catch (x) {
      a = this.failed(x, r.path);
    }
    // The rest of a body over the limit (or not read at all) is not worth reading before a next request would be: close.
    if (refusal.status === 413 || unread) a.headers.connection = 'close';
    this.outbox.send(reply, a);
  }

  /** Listens; resolves with `http://host:port` (127.0.0.1 for a wildcard address). */
  async listen(port: number, host: string): Promise<string> {
    await this.fastify.listen({ port, host });
    return this.url();
  }

  url(): string {
    const a = this.server.address();
    if (a === null || typeof a === 'string') return '';
    const host = a.address === '0.0.0.0' || a.address === '::' ? '127.0.0.1' : a.address.includes(':') ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  /** Closes the instance (after the lifecycle's drain, or at once). */
  async close(): Promise<void> {
    await this.fastify.close();
  }

  /** Every body, whatever its type: read within the limit, then decoded within it (body.ts); the 100 of `Expect: 100-continue` is sent first. */
  private readonly parseBody = (_req: FastifyRequest, payload: http.IncomingMessage, done: (err: Error | null, body?: ReadBody) => void): void => {
    const limit = this.settings.bodyLimitBytes;
    if (payload.headers.expect !== undefined) {
      const res = this.awaitingContinue.get(payload);
      if (res !== undefined && !res.headersSent) res.writeContinue();
    }
    readBody(payload, limit, (err, raw) => {
      const receivedAt = performance.now();
      if (err !== null) {
        done(null, { bytes: null, refusal: err, receivedAt });
        return;
      }
      let read: ReadBody;
      try {
        read = { bytes: decodeBody(raw, payload.headers['content-encoding'], limit), refusal: null, receivedAt };
      } catch (x) {
        if (!(x instanceof BodyError)) throw x;
        read = { bytes: null, refusal: x, receivedAt };
      }
      done(null, read);
    });
  };

  private failed(e: unknown, url: string): HttpAnswer {
    this.deps.errors.error({ msg: 'route failed', url: url.slice(0, 200), err: e });
    return internalError();
  }

  /** What must be committed before answers leave (the crash journal): see outbox.ts. */
  setBarrier(barrier: AnswerBarrier | null): void {
    this.outbox.setBarrier(barrier);
  }

  /**
   * Malformed requests and missed deadlines (Node's clientError): counted by reason, answered as
   * Node would (408, 431, 400) when nothing was written on the connection yet, then closed.
   */
  private readonly onClientError = (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const inFlight = this.connections.inFlight(socket);
    let status: number;
    let reason: CutReason;
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      status = 408;
      reason = inFlight === null ? 'headers_timeout' : 'body_timeout';
    } else if (err.code === 'HPE_HEADER_OVERFLOW') {
      status = 431;
      reason = 'header_too_large';
    } else {
      status = 400;
      reason = 'malformed';
    }
    this.deps.stats.cut[reason]++;
    if (socket.writable && (inFlight === null || !inFlight.headersSent)) {
      const body = JSON.stringify({ error: reason.replace(/_/g, ' ') });
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}
