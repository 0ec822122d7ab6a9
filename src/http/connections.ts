import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** What the bidder knows about one open connection (kept on the socket under a symbol of its own). */
class Conn {
  /** Requests begun on it. */
  requests = 0;
  /** performance.now() when it opened, then when its last request began. */
  lastAt: number;
  /** The answer to its last request (finished when the connection is idle). */
  res: ServerResponse | null = null;
  /** The turn clock's bound on when its last request arrived. */
  arrivedAt = 0;

  constructor(now: number) {
    this.lastAt = now;
  }

  /** Between requests: at least one answered, none in flight. */
  idle(): boolean {
    return this.requests > 0 && (this.res === null || this.res.writableFinished);
  }
}

const kConn = Symbol('bidder.conn');
type Tracked = Socket & { [kConn]?: Conn };

/**
 * The server's open connections and HTTP_MAX_CONNECTIONS. Node's own cap (server.maxConnections)
 * refuses the newcomer, so a client that keeps idle keep-alive connections open locks everyone else
 * out until its keep-alive timeout. Here a new connection past the cap closes the connection that has
 * been idle the longest (between two requests) instead; only when none is idle is the newcomer
 * closed. A connection that has not sent a request yet is not idle: the header deadline cuts it.
 */
export class Connections {
  private readonly open = new Set<Socket>();
  private readonly cap: number;
  /** A 'close' listener: `this` is the socket that closed. */
  private readonly onClose: (this: Socket) => void;

  constructor(
    cap: number,
    private readonly onCut: (reason: 'over_connection_limit' | 'idle_at_cap') => void,
  ) {
    this.cap = cap;
    const open = this.open;
    this.onClose = function (this: Socket): void {
      open.delete(this);
    };
  }

  /** Listens on `server`'s connections. */
  watch(server: Server): void {
    server.on('connection', this.onConnection);
  }

  /** Called for every request as it begins (the server's request handler). */
  began(req: IncomingMessage, res: ServerResponse, now: number, arrivedAt: number): void {
    const c = (req.socket as Tracked)[kConn];
    if (c === undefined) return;
    c.requests++;
    c.lastAt = now;
    c.res = res;
    c.arrivedAt = arrivedAt;
  }

  /** When the request being read on `socket` may have arrived (pipelined requests share their connection's latest). */
  arrivedAt(socket: Socket, otherwise: number): number {
    return (socket as Tracked)[kConn]?.arrivedAt ?? otherwise;
  }

  /** The answer in flight on `socket`, if any (for the client-error handler). */
  inFlight(socket: Socket): ServerResponse | null {
    const c = (socket as Tracked)[kConn];
    if (c === undefined || c.res === null || c.res.writableFinished) return null;
    return c.res;
  }

  get size(): number {
    return this.open.size;
  }

  private readonly onConnection = (socket: Socket): void => {
    if (this.open.size >= this.cap && !this.closeLongestIdle()) {
      this.onCut('over_connection_limit');
      socket.destroy();
      return;
    }
    (socket as Tracked)[kConn] = new Conn(performance.now());
    this.open.add(socket);
    socket.once('close', this.onClose);
  };


  private closeLongestIdle(): boolean {
    let oldest: Socket | null = null;
    let at = Infinity;
    for (const s of this.open) {
      const c = (s as Tracked)[kConn]!;
      if (c.lastAt < at && c.idle()) {
        at = c.lastAt;
        oldest = s;
      }
    }
    if (oldest === null) return false;
    this.open.delete(oldest);
    oldest.destroy();
    this.onCut('idle_at_cap');
    return true;
  }
}
