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
 * - Routes are plain Fastify routes that compute an answer as data (answer.ts); sending it never
 *   throws. Each instance has only the routes registered on it: the admin routes do not exist on
 *   the public instance, whatever the spelling of a request target.
 * - The common case of a route is served before Fastify (`serveFast`): its method, its path as
 *   written (no `%`, `;` or `#` for a prefix), and for a body a JSON Content-Type as exchanges send
 *   it. The same admission, body reader, route and outbox run, without Fastify's router, hooks,
 *   request and reply objects (23–38 µs less CPU per bid request at 650/s, bench/README.md).
 *   Anything else (HEAD, another type, an encoded path, the access log on) goes through Fastify.
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
import { type AnswerBarrier, type AnswerTarget, Outbox } from './outbox';
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

/** A route as the fast lane finds it. */
interface FastRoute {
  readonly method: string;
  readonly path: string;
  readonly prefix: boolean;
  readonly route: HttpRoute;
  readonly admit: HttpRoute['admit'];
}

/** The Content-Types a body is served before Fastify with (what Fastify reads the same way). */
const FAST_TYPES: ReadonlySet<string | undefined> = new Set(['application/json', 'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset=utf-8']);

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
  /** The routes served before Fastify, by exact path, and those matched by a prefix (serveFast). */
  private readonly fastExact = new Map<string, FastRoute>();
  private readonly fastPrefix: FastRoute[] = [];
  /** Off when the access log is on (it is a Fastify hook). */
  private readonly fastLane: boolean;
  /** Set when the instance starts closing: answers then say `Connection: close`, as Fastify's do. */
  private closing = false;

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
      if (this.fastLane) {
        let served: boolean;
        try {
          served = this.serveFast(req, res);
        } catch (x) {
          // A bug of the fast lane itself: a 500, as Fastify answers one (a route's own failures are caught in `serve`).
          this.outbox.send(res, this.failed(x, req.url ?? ''));
          return;
        }
        if (served) return;
      }
      handler!(req, res);
    };
    this.fastLane = deps.accessLog === null;
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
    f.addHook('preClose', (done) => {
      this.closing = true;
      done();
    });
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
    const fast: FastRoute = { method: spec.method, path: spec.path, prefix: spec.prefix === true, route, admit: route.admit?.bind(route) };
    if (fast.prefix) this.fastPrefix.push(fast);
    else this.fastExact.set(spec.path, fast);
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

  /**
   * The fast lane: serves `req` when a route takes it as it is (see the top of this file), and says
   * whether it did; Fastify serves the rest. The steps are the Fastify route's: admission, body,
   * `serve`.
   */
  private serveFast(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    const url = req.url ?? '';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    let fast = this.fastExact.get(path);
    if (fast === undefined) {
      for (const p of this.fastPrefix) {
        if (path.startsWith(p.path) && path.indexOf('%') === -1 && path.indexOf(';') === -1 && path.indexOf('#') === -1) {
          fast = p;
          break;
        }
      }
      if (fast === undefined) return false;
    }
    if (req.method !== fast.method) return false;
    const body = fast.method === 'POST';
    if (body && !FAST_TYPES.has(req.headers['content-type'])) return false;
    if (this.closing) res.setHeader('connection', 'close');
    let caller = 0;
    if (fast.admit !== undefined) {
      const a = this.admitted(fast.admit, req);
      if (typeof a !== 'number') {
        this.outbox.send(res, a);
        return true;
      }
      caller = a;
    }
    const query = q < 0 ? NO_QUERY : querystring.parse(url.slice(q + 1));
    const route = fast.route;
    if (!body) {
      this.serve(route, this.routeRequest(req, url, query, undefined, caller), null, res);
      return true;
    }
    this.readRequestBody(req, (read) => this.serve(route, this.routeRequest(req, url, query, read, caller), read.refusal, res));
    return true;
  }

  /** A route's answer to `r`, or to the refusal of its body; sent through the outbox. */
  private serve(route: HttpRoute, r: RouteRequest, refusal: BodyError | null, to: AnswerTarget): void {
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
    return this.routeRequest(req.raw, url, url.indexOf('?') < 0 ? NO_QUERY : (req.query as ParsedUrlQuery), read, (req as Admitted).caller);
  }

  private routeRequest(raw: http.IncomingMessage, url: string, query: ParsedUrlQuery, read: ReadBody | undefined, caller: number): RouteRequest {
    const q = url.indexOf('?');
    const now = performance.now();
    return {
      method: raw.method ?? '',
      path: q < 0 ? url : url.slice(0, q),
      query,
      headers: raw.headers,
      remoteAddress: raw.socket.remoteAddress,
      body: read?.bytes ?? null,
      receivedAt: read?.receivedAt ?? now,
      arrivedAt: this.connections.arrivedAt(raw.socket, now),
      caller,
    };
  }

  /** A request refused before its route ran, answered as the route words it. */
  private refuse(reply: AnswerTarget, route: HttpRoute, r: RouteRequest, refusal: BodyError, unread = false): void {
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

  /** Every body, whatever its type: read within the limit, then decoded within it (body.ts). */
  private readonly parseBody = (_req: FastifyRequest, payload: http.IncomingMessage, done: (err: Error | null, body?: ReadBody) => void): void => {
    this.readRequestBody(payload, (read) => done(null, read));
  };

  /** A request's body, or why it was refused; the 100 of `Expect: 100-continue` is sent first. */
  private readRequestBody(payload: http.IncomingMessage, done: (read: ReadBody) => void): void {
    const limit = this.settings.bodyLimitBytes;
    if (payload.headers.expect !== undefined) {
      const res = this.awaitingContinue.get(payload);
      if (res !== undefined && !res.headersSent) res.writeContinue();
    }
    readBody(payload, limit, (err, raw) => {
      const receivedAt = performance.now();
      if (err !== null) {
        done({ bytes: null, refusal: err, receivedAt });
        return;
      }
      let read: ReadBody;
      try {
        read = { bytes: decodeBody(raw, payload.headers['content-encoding'], limit), refusal: null, receivedAt };
      } catch (x) {
        if (!(x instanceof BodyError)) throw x;
        read = { bytes: null, refusal: x, receivedAt };
      }
      done(read);
    });
  }

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
