import { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { type HttpAnswer, internalError } from './answer';

/**
 * What must be on disk before an answer leaves: the bid log's crash journal (LogService.journal).
 * Answers wait while `pending()`; `commit()` writes, once for all the answers held in one turn.
 */
export interface AnswerBarrier {
  pending(): boolean;
  commit(): void;
}

/**
 * How long an answer may wait for the commit of its turn (ms). A turn usually lasts well under this
 * (one to a few requests); after a stall the poll phase may read tens of requests at once, and
 * their answers would otherwise all wait for the last one's. Costs one more write(2) per this much
 * of a long turn.
 */
export const HOLD_MAX_MS = 2;

/**
 * Where an answer goes: a Fastify reply, or Node's response itself for a request served before
 * Fastify (server.ts, `serveFast`), which gets the same headers Fastify would write (`writeAnswer`).
 */
export type AnswerTarget = FastifyReply | ServerResponse;

/** A media type of JSON (`application/json`, `application/ld+json`, ...) without a charset parameter. */
function jsonWithoutCharset(type: string): boolean {
  const t = type.toLowerCase();
  const semi = t.indexOf(';');
  return (semi < 0 ? t : t.slice(0, semi)).includes('json') && !t.includes('charset=');
}

/**
 * An answer written on Node's response as Fastify's `reply.send` writes the payloads routes give
 * (a string, a Buffer or none): Content-Length measured unless given, no body, Content-Type or
 * Content-Length on a 204, `content-length: 0` on a body-less answer of any other status, and the
 * type Fastify would name for an untyped payload (and its `; charset=utf-8` after a JSON type that
 * names none, for a text). Header names are lower case, as the routes write them.
 */
export function writeAnswer(res: ServerResponse, a: HttpAnswer): void {
  const headers = a.headers;
  const status = a.status;
  let payload = a.payload;
  if (payload === undefined) {
    if (status >= 200 && status !== 204 && status !== 304) headers['content-length'] = '0';
  } else if (status === 204 || status < 200) {
    delete headers['content-type'];
    delete headers['content-length'];
    payload = undefined;
  } else {
    const type = headers['content-type'];
    if (type === undefined) headers['content-type'] = typeof payload === 'string' ? 'text/plain; charset=utf-8' : 'application/octet-stream';
    // A JSON text named without its charset gets Fastify's `; charset=utf-8`.
    else if (typeof payload === 'string' && typeof type === 'string' && jsonWithoutCharset(type)) headers['content-type'] = `${type}; charset=utf-8`;
    const length = typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
    if (headers['content-length'] === undefined || Number(headers['content-length']) !== length) headers['content-length'] = String(length);
  }
  res.writeHead(status, headers);
  res.end(payload);
}

/**
 * The last step of every request: its answer (data, answer.ts) written to the client. Answers leave
 * only after what the barrier guards is committed (the crash journal: a worker killed right after
 * answering has the records of that answer on disk). Answers computed while it is pending are held
 * until the check phase of this event-loop turn, after every request the poll phase read: one commit
 * (one write(2)) then covers all of them. A long turn (a burst read at once after a stall) does not
 * hold the first answers until its end: once the oldest held answer has waited HOLD_MAX_MS, the
 * commit and the sending happen then, within the turn. Sending never throws.
 */
export class Outbox {
  private barrier: AnswerBarrier | null = null;
  /** Answers waiting for the barrier's commit: reply, answer, reply, answer, ... */
  private held: Array<AnswerTarget | HttpAnswer> = [];
  /** When the oldest held answer was held (performance.now()). */
  private heldSince = 0;
  private releaseQueued = false;

  constructor(
    /** Where answers that could not be sent are counted (server.ts, HttpStats). */
    private readonly stats: { sendErrors: number },
    private readonly errors: { error(o: object): void },
    private readonly holdMaxMs = HOLD_MAX_MS,
    private readonly now: () => number = () => performance.now(),
  ) {}

  setBarrier(barrier: AnswerBarrier | null): void {
    this.barrier = barrier;
  }

  send(reply: AnswerTarget, a: HttpAnswer): void {
    if (this.barrier !== null && this.barrier.pending()) {
      if (this.held.length === 0) this.heldSince = this.now();
      this.held.push(reply, a);
      if (!this.releaseQueued) {
        this.releaseQueued = true;
        setImmediate(this.release);
      } else if (this.now() - this.heldSince >= this.holdMaxMs) {
        this.flush();
      }
      return;
    }
    this.sendNow(reply, a);
  }

  private readonly release = (): void => {
    this.releaseQueued = false;
    this.flush();
  };

  /** Commits the barrier and sends every held answer. */
  private flush(): void {
    const held = this.held;
    this.held = [];
    try {
      this.barrier?.commit();
    } catch (e) {
      // The journal reports its own write errors; an answer is never lost to it.
      this.errors.error({ msg: 'journal commit failed', err: e });
    }
    for (let i = 0; i < held.length; i += 2) this.sendNow(held[i] as AnswerTarget, held[i + 1] as HttpAnswer);
  }

  /**
   * Sends an answer. Never throws: an answer Node refuses (a header value it rejects, say) becomes a
   * plain 500, and when even that cannot be written the connection is closed.
   */
  private sendNow(to: AnswerTarget, a: HttpAnswer): void {
    const res = to instanceof ServerResponse ? to : to.raw;
    if (to instanceof ServerResponse ? res.headersSent || res.writableEnded : to.sent) return;
    try {
      if (to instanceof ServerResponse) writeAnswer(res, a);
      else to.code(a.status).headers(a.headers).send(a.payload);
    } catch (e) {
      this.stats.sendErrors++;
      this.errors.error({ msg: 'answer could not be sent', url: (res.req?.url ?? '').slice(0, 200), err: e });
      try {
        if (res.headersSent) throw e;
        const fallback = internalError();
        res.removeHeader('location');
        res.writeHead(500, { 'content-type': fallback.headers['content-type'], 'content-length': Buffer.byteLength(fallback.payload as string) });
        res.end(fallback.payload);
      } catch {
        res.destroy();
      }
    }
  }
}
