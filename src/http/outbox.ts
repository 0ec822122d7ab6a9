import type { FastifyReply } from 'fastify';
import { type HttpAnswer, internalError } from './answer';
import type { HttpStats } from './server';

/**
 * What must be on disk before an answer leaves: the bid log's crash journal (LogService.journal).
 * Answers wait while `pending()`; `commit()` writes, once for all the answers held in one turn.
 */
export interface AnswerBarrier {
  pending(): boolean;
  commit(): void;
}

/**
 * The last step of every request: its answer (data, answer.ts) written to the client. Answers leave
 * only after what the barrier guards is committed (the crash journal: a worker killed right after
 * answering has the records of that answer on disk). Answers computed while it is pending are held
 * until the check phase of this event-loop turn, after every request the poll phase read: one commit
 * (one write(2)) then covers all of them. Sending never throws.
 */
export class Outbox {
  private barrier: AnswerBarrier | null = null;
  /** Answers waiting for the barrier's commit: reply, answer, reply, answer, ... */
  private held: Array<FastifyReply | HttpAnswer> = [];
  private releaseQueued = false;

  constructor(
    private readonly stats: HttpStats,
    private readonly errors: { error(o: object): void },
  ) {}

  setBarrier(barrier: AnswerBarrier | null): void {
    this.barrier = barrier;
  }

  send(reply: FastifyReply, a: HttpAnswer): void {
    if (this.barrier !== null && this.barrier.pending()) {
      this.held.push(reply, a);
      if (!this.releaseQueued) {
        this.releaseQueued = true;
        setImmediate(this.release);
      }
      return;
    }
    this.sendNow(reply, a);
  }

  private readonly release = (): void => {
    this.releaseQueued = false;
    const held = this.held;
    this.held = [];
    try {
      this.barrier?.commit();
    } catch (e) {
      // The journal reports its own write errors; an answer is never lost to it.
      this.errors.error({ msg: 'journal commit failed', err: e });
    }
    for (let i = 0; i < held.length; i += 2) this.sendNow(held[i] as FastifyReply, held[i + 1] as HttpAnswer);
  };

  /**
   * Sends an answer. Never throws: an answer Node refuses (a header value it rejects, say) becomes a
   * plain 500, and when even that cannot be written the connection is closed.
   */
  private sendNow(reply: FastifyReply, a: HttpAnswer): void {
    if (reply.sent) return;
    try {
      reply.code(a.status).headers(a.headers).send(a.payload);
    } catch (e) {
      this.stats.sendErrors++;
      this.errors.error({ msg: 'answer could not be sent', url: reply.request.url.slice(0, 200), err: e });
      const res = reply.raw;
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
