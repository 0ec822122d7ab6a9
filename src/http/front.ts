/**
 * The HTTP front: the one place that owns the bidder's HTTP servers and what every request meets
 * before any route code runs.
 *
 * - Two servers: the public one (exchanges and browsers: bids, notices, health) and the admin one
 *   (ADMIN_PORT: metrics, the machine view, debug routes, health). Each route is served on one of them.
 * - Deadlines and the connection cap, on both servers and every route (Node's own checks, no
 *   per-request timer): a client gets HTTP_HEADERS_TIMEOUT_MS to send its headers and
 *   HTTP_REQUEST_TIMEOUT_MS to send the whole request; past them the connection is answered 408 and
 *   closed; past HTTP_MAX_CONNECTIONS new connections are dropped. Exchanges send a bid request at
 *   once, so seconds are plenty. Every cut is counted (`stats.cut`).
 * - The hot routes (the bid route, the notices, and the admin's debug route) are matched here and
 *   served straight from Node's request, without Fastify's per-request machinery (~35 µs per request
 *   on one process, bench/README.md): their bodies are read here (BODY_LIMIT_BYTES, before and after
 *   Content-Encoding), their answers sent here (a send never throws), their access log written here.
 * - Everything else goes to Fastify, where the Nest controllers (health, metrics) are.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import type pino from 'pino';
import type { Config } from '../config/config';
import { errorAnswer, type HttpAnswer, internalError } from './answer';
import { BodyError, decodeBody, readBody } from './body';

/** What a route gets: the request line split, the headers, the decoded body for POST routes. */
export interface FrontRequest {
  readonly method: string;
  /** The path, without the query string. */
  readonly path: string;
  /** What follows `?` in the request target, '' when nothing does. */
  readonly query: string;
  readonly headers: http.IncomingHttpHeaders;
  /** The body after Content-Encoding, for routes that read one; null otherwise. */
  readonly body: Buffer | null;
  /** performance.now() when the request was whole (its body read). */
  readonly receivedAt: number;
  /**
   * performance.now() of the earliest moment the request can have arrived (see TurnClock): the
   * request has waited at most `receivedAt - arrivedAt` before the bidder looked at it.
   */
  readonly arrivedAt: number;
  /** The TCP peer's address (the bid route's exchange check); undefined once the socket is gone. */
  readonly remoteAddress: string | undefined;
}

export interface FrontRoute {
  /** The answer (a promise only when it waits on I/O). May throw: the front answers 500. */
  handle(r: FrontRequest): HttpAnswer | Promise<HttpAnswer>;
  /** The answer to a request the front refused before the route ran (413 too large, 400 bad encoding or aborted). */
  refused?(status: 400 | 413, reason: string, r: FrontRequest): HttpAnswer;
}

export type Port = 'public' | 'admin';

export interface RouteSpec {
  readonly method: 'GET' | 'POST';
  /** An exact path, or a prefix when `prefix` is true. A query string may follow either. */
  readonly path: string;
  readonly prefix?: boolean;
  readonly port: Port;
  readonly route: FrontRoute;
}

/** Paths served on the admin port only (Nest controllers behind Fastify, and the debug routes). */
export const ADMIN_PATHS: readonly string[] = ['/metrics', '/debug'];

export type CutReason = 'headers_timeout' | 'body_timeout' | 'over_connection_limit' | 'header_too_large' | 'malformed';
export const CUT_REASONS: readonly CutReason[] = ['headers_timeout', 'body_timeout', 'over_connection_limit', 'header_too_large', 'malformed'];

interface Entry extends RouteSpec {
  readonly body: boolean;
}

const EMPTY_QUERY = '';

/** How often the loop's stalls are looked for, and how late a tick must be to count as one. */
const TICK_MS = 20;
const STALL_MS = 10;

/**
 * How long a request may have waited before its handler runs (an upper bound; shedding on it errs on
 * the side of answering in time). Under overload requests wait in the socket buffers while the event
 * loop works: each loop turn reads every socket that was readable when it polled and handles what it
 * read, one after another.
 * - A request handled in turn k became readable after turn k−1 began (or it would have been read
 *   then): when turns follow each other without a pause, it has waited at most since turn k−1 began;
 *   when the loop was idle before turn k, since turn k began. A turn starts with its first request
 *   and ends in the check phase (one setImmediate per turn, none while idle).
 * - Anything else that holds the loop (a long callback, a GC pause) delays the next turn: a timer
 *   every TICK_MS notices when it runs late, and the requests of the next turn may have waited since
 *   the tick was due.
 */
class TurnClock {
  private inTurn = false;
  private turnStart = 0;
  private lastTurnStart = 0;
  private lastTurnEnd = -Infinity;
  /** The earliest moment the loop was found held since the last turn began (Infinity: not held). */
  private heldSince = Infinity;
  private turnHeldSince = Infinity;
  private due = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly endTurn = (): void => {
    this.inTurn = false;
    this.lastTurnEnd = performance.now();
  };
  private readonly tick = (): void => {
    const now = performance.now();
    if (now - this.due > STALL_MS && this.due < this.heldSince) this.heldSince = this.due;
    this.due = now + TICK_MS;
  };

  start(): void {
    if (this.timer !== null) return;
    this.due = performance.now() + TICK_MS;
    this.timer = setInterval(this.tick, TICK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** The earliest time a request handled now can have arrived. */
  arrivedBy(now: number): number {
    if (!this.inTurn) {
      this.inTurn = true;
      this.lastTurnStart = this.turnStart;
      this.turnStart = now;
      this.turnHeldSince = this.heldSince;
      this.heldSince = Infinity;
      setImmediate(this.endTurn);
    }
    // Busy: the last turn ended (check phase) right before this one began (timers and poll between).
    const byTurns = this.turnStart - this.lastTurnEnd < 1 ? this.lastTurnStart : this.turnStart;
    return byTurns < this.turnHeldSince ? byTurns : this.turnHeldSince;
  }
}

export class HttpFront {
  /** Connections cut or refused before a route ran, by reason (counters). */
  readonly cut: Record<CutReason, number> = { headers_timeout: 0, body_timeout: 0, over_connection_limit: 0, header_too_large: 0, malformed: 0 };
  /** Answers that failed to be sent (the connection was then closed). */
  sendErrors = 0;
  readonly publicServer: http.Server;
  readonly adminServer: http.Server;
  private fastify: http.RequestListener | null = null;
  private readonly entries: Entry[] = [];
  private readonly limit: number;
  private readonly turns = new TurnClock();

  constructor(
    private readonly config: Config,
    /** The access log (ACCESS_LOG=true), or null. */
    private readonly accessLog: pino.Logger | null,
    /** Where route failures are reported. */
    private readonly errors: { error(o: object): void },
  ) {
    this.limit = config.bodyLimitBytes;
    this.publicServer = this.server(this.onPublic);
    this.adminServer = this.server(this.onAdmin);
    // Fastify installs its own clientError handler on the server it is given (serverFactory); it is
    // told to use this one (FastifyAdapter's clientErrorHandler), the admin server gets it here.
    this.adminServer.on('clientError', this.onClientError);
  }

  private server(listener: http.RequestListener): http.Server {
    const c = this.config;
    const s = http.createServer(
      {
        headersTimeout: c.httpHeadersTimeoutMs,
        requestTimeout: c.httpRequestTimeoutMs,
        keepAliveTimeout: c.httpKeepAliveTimeoutMs,
        // How often Node checks the deadlines: a quarter of the shorter one, at least every second.
        connectionsCheckingInterval: Math.max(25, Math.min(1_000, Math.floor(c.httpHeadersTimeoutMs / 4))),
      },
      listener,
    );
    s.maxConnections = c.httpMaxConnections;
    // No inactivity timeout on the socket: the deadlines above and keep-alive cover every phase.
    s.setTimeout(0);
    s.on('drop', this.onDrop);
    return s;
  }

  /** FastifyAdapter's serverFactory: Fastify serves what the front does not, on the public server (and the admin one). */
  readonly serverFactory = (handler: http.RequestListener): http.Server => {
    this.fastify = handler;
    return this.publicServer;
  };

  /** Adds a route; routes add themselves when their module starts. */
  route(spec: RouteSpec): void {
    if (this.entries.some((e) => e.method === spec.method && e.path === spec.path && e.port === spec.port)) {
      throw new Error(`route ${spec.method} ${spec.path} declared twice`);
    }
    this.entries.push({ ...spec, prefix: spec.prefix === true, body: spec.method === 'POST' });
  }

  /** Starts watching the loop for stalls (TurnClock); stopped with `close()`. */
  watchLoop(): void {
    this.turns.start();
  }

  /** Stops the loop watch (the servers themselves are drained and closed by the lifecycle). */
  close(): void {
    this.turns.stop();
  }

  /** Starts the admin server (the public one is Fastify's `listen`). */
  listenAdmin(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.adminServer.once('error', reject);
      this.adminServer.listen(this.config.adminPort, this.config.adminHost, () => {
        this.adminServer.removeListener('error', reject);
        resolve();
      });
    });
  }

  /** `http://host:port` of the admin server once listening (127.0.0.1 for a wildcard address). */
  adminUrl(): string {
    const a = this.adminServer.address();
    if (a === null || typeof a === 'string') return '';
    const host = a.address === '0.0.0.0' || a.address === '::' ? '127.0.0.1' : a.address.includes(':') ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  private readonly onPublic = (req: http.IncomingMessage, res: http.ServerResponse): void => this.dispatch(req, res, 'public');
  private readonly onAdmin = (req: http.IncomingMessage, res: http.ServerResponse): void => this.dispatch(req, res, 'admin');

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse, port: Port): void {
    const url = req.url ?? '/';
    // HEAD is GET without the body (Node leaves the payload out).
    const method = req.method === 'HEAD' ? 'GET' : req.method;
    const entries = this.entries;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i];
      if (e.method === method && e.port === port && matches(url, e.path, e.prefix === true)) {
        this.serve(e, req, res, url);
        return;
      }
    }
    if (port === 'public' && isAdminPath(url)) {
      this.send(req, res, errorAnswer(404, 'not found'), performance.now());
      return;
    }
    if (this.fastify === null) {
      this.send(req, res, errorAnswer(404, 'not found'), performance.now());
      return;
    }
    this.fastify(req, res);
  }

  private serve(e: Entry, req: http.IncomingMessage, res: http.ServerResponse, url: string): void {
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = q < 0 ? EMPTY_QUERY : url.slice(q + 1);
    const now = performance.now();
    const arrivedAt = this.turns.arrivedBy(now);
    if (!e.body) {
      this.run(e.route, { method: e.method, path, query, headers: req.headers, body: null, receivedAt: now, arrivedAt, remoteAddress: req.socket.remoteAddress }, req, res);
      return;
    }
    readBody(req, this.limit, (err, raw) => {
      const receivedAt = performance.now();
      let body: Buffer | null = null;
      let refusal: BodyError | null = err;
      if (refusal === null) {
        try {
          body = decodeBody(raw, req.headers['content-encoding'], this.limit);
        } catch (x) {
          if (!(x instanceof BodyError)) throw x;
          refusal = x;
        }
      }
      const r: FrontRequest = { method: e.method, path, query, headers: req.headers, body, receivedAt, arrivedAt, remoteAddress: req.socket.remoteAddress };
      if (refusal === null) {
        this.run(e.route, r, req, res);
        return;
      }
      let a: HttpAnswer;
      try {
        a = e.route.refused?.(refusal.status, refusal.reason, r) ?? errorAnswer(refusal.status, refusal.reason);
      } catch (x) {
        a = this.failed(x, url);
      }
      // The rest of a body over the limit is not worth reading before a next request would be: close.
      if (refusal.status === 413) a.headers.connection = 'close';
      this.send(req, res, a, receivedAt);
    });
  }

  private run(route: FrontRoute, r: FrontRequest, req: http.IncomingMessage, res: http.ServerResponse): void {
    let a: HttpAnswer | Promise<HttpAnswer>;
    try {
      a = route.handle(r);
    } catch (x) {
      a = this.failed(x, req.url);
    }
    if (a instanceof Promise) {
      a.then(
        (x) => this.send(req, res, x, r.receivedAt),
        (x: unknown) => this.send(req, res, this.failed(x, req.url), r.receivedAt),
      );
    } else {
      this.send(req, res, a, r.receivedAt);
    }
  }

  private failed(e: unknown, url: string | undefined): HttpAnswer {
    this.errors.error({ msg: 'route failed', url: url?.slice(0, 200), err: e });
    return internalError();
  }

  /**
   * Sends an answer: one writeHead and one end, so headers and payload leave in one write. Never
   * throws: an answer Node refuses (a header value it rejects, say) becomes a plain 500, and when
   * even that cannot be written the connection is closed.
   */
  private send(req: http.IncomingMessage, res: http.ServerResponse, a: HttpAnswer, startedAt: number): void {
    if (res.destroyed || res.headersSent) return;
    const payload = a.payload;
    if (payload !== undefined) a.headers['content-length'] = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    try {
      res.writeHead(a.status, a.headers);
    } catch (e) {
      this.sendErrors++;
      this.errors.error({ msg: 'answer could not be sent', url: req.url?.slice(0, 200), err: e });
      try {
        res.removeHeader('location');
        const fallback = internalError();
        res.writeHead(500, { 'content-type': fallback.headers['content-type'], 'content-length': Buffer.byteLength(fallback.payload as string) });
        res.end(fallback.payload);
      } catch {
        res.destroy();
      }
      return;
    }
    res.end(payload);
    if (this.accessLog !== null) {
      this.accessLog.info({
        msg: 'request',
        method: req.method,
        url: req.url,
        status: a.status,
        ms: Math.round((performance.now() - startedAt) * 1000) / 1000,
        bytes: payload === undefined ? 0 : a.headers['content-length'],
      });
    }
  }

  private readonly onDrop = (): void => {
    this.cut.over_connection_limit++;
  };

  /**
   * Malformed requests and missed deadlines (Node's clientError): counted by reason, answered as
   * Node would (408, 431, 400) when nothing was written on the connection yet, then closed.
   */
  readonly onClientError = (err: NodeJS.ErrnoException, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    // Node's own marker of the response in flight on this connection (set once the headers are read).
    const inFlight = (socket as Socket & { _httpMessage?: http.ServerResponse | null })._httpMessage ?? null;
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
    this.cut[reason]++;
    if (socket.writable && (inFlight === null || !inFlight.headersSent)) {
      const body = JSON.stringify({ error: reason.replace(/_/g, ' ') });
      socket.write(
        `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
      );
    }
    socket.destroy(err);
  };
}

/** `url` is `path` (or, with `prefix`, starts with it), optionally followed by a query string. */
function matches(url: string, path: string, prefix: boolean): boolean {
  if (!url.startsWith(path)) return false;
  if (prefix) return true;
  return url.length === path.length || url.charCodeAt(path.length) === 63; /* ? */
}

function isAdminPath(url: string): boolean {
  for (const p of ADMIN_PATHS) {
    if (url.startsWith(p)) {
      const next = url.charCodeAt(p.length);
      if (url.length === p.length || next === 47 /* / */ || next === 63 /* ? */) return true;
    }
  }
  return false;
}
