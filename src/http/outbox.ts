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
 * The last step of every request: its answer (data, answer.ts) sent by its Fastify reply. Answers leave
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
  private held: Array<FastifyReply | HttpAnswer> = [];
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

  send(reply: FastifyReply, a: HttpAnswer): void {
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
    for (let i = 0; i < held.length; i += 2) this.sendNow(held[i] as FastifyReply, held[i + 1] as HttpAnswer);
  }

  /**
   * Sends an answer. Never throws: an answer Node refuses (a header value it rejects, say) becomes a
   * plain 500, and when even that cannot be written the connection is closed.
   */
  private sendNow(reply: FastifyReply, a: HttpAnswer): void {
    if (reply.sent) return;
    const res = reply.raw;
    try {
      reply.code(a.status).headers(a.headers).send(a.payload);
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
