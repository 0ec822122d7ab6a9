import type { IncomingMessage, ServerResponse } from 'node:http';
import * as querystring from 'node:querystring';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { errorAnswer, type HttpAnswer, internalError, sendFastify, sendRaw } from '../http-answer';
import { LogService } from '../log/log.service';
import type { LogRecord } from '../log/log.types';
import { CampaignStore } from '../targeting/campaign-store';
import { CapsService } from './caps.service';
import { isNoticeEvent, NoticeError, readNotice, type Notice, type Query } from './notice';
import { NoticeStats } from './notice-stats';
import { PayloadCodec, type TrackingPayload } from './payload';
import { SpendService } from './spend.service';

export const NOTICE_PREFIX = '/t/';

/** Whether a request line's target is a notice route: `/t/<event>`, with or without a query string. */
export function isNoticeTarget(url: string | undefined): boolean {
  if (url === undefined || !url.startsWith(NOTICE_PREFIX)) return false;
  const q = url.indexOf('?');
  const slash = url.indexOf('/', NOTICE_PREFIX.length);
  // `/t/` alone and deeper paths are Fastify's (404); so are escapes, which its router decodes.
  const end = q < 0 ? url.length : q;
  return end > NOTICE_PREFIX.length && (slash < 0 || slash > end) && url.lastIndexOf('%', end) < NOTICE_PREFIX.length;
}

const NO_CONTENT = (): HttpAnswer => ({ status: 204, headers: {}, payload: undefined });

/** The smallest transparent GIF, the impression pixel's answer. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/**
 * Notice and tracker endpoints, the targets of every bid's nurl/burl/lurl, impression tracker and
 * click URL: `GET /t/{win,bill,loss,imp,click}?p=<payload>&s=<signature>&<macros>`.
 * Each logs one record of its type through the log pipeline. Forged or tampered payloads: 403.
 * Notices are hot too (one win notice and one impression per won bid): like the bid route
 * (src/bidding/bid-route.ts) they are served without Fastify (`handleRaw`), and through a route on
 * the Fastify instance itself when the access log is on.
 */
@Injectable()
export class TrackingRoutes implements OnModuleInit {
  private readonly logger = new Logger('TrackingRoutes');
  private readonly codec: PayloadCodec;

  constructor(
    private readonly host: HttpAdapterHost,
    @Inject(CONFIG) config: Config,
    private readonly log: LogService,
    private readonly store: CampaignStore,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly stats: NoticeStats,
  ) {
    this.codec = new PayloadCodec(config.trackingSecret);
  }

  onModuleInit(): void {
    // An application context without HTTP (the micro-benchmark, some tests) has no adapter.
    const adapter = this.host.httpAdapter as HttpAdapterHost['httpAdapter'] | null;
    if (adapter === null) return;
    adapter.getInstance<FastifyInstance>().get<{ Params: { event: string } }>('/t/:event', async (req, reply) => {
      sendFastify(reply, await this.answer(req.params.event, req.query as Query));
    });
  }

  /**
   * The notice route without Fastify, for GETs of `/t/<event>` that src/app.ts routes here before
   * Fastify sees them (the query string parsed as Fastify would: repeated keys give arrays).
   */
  readonly handleRaw = (req: IncomingMessage, res: ServerResponse): void => {
    const url = req.url!;
    const q = url.indexOf('?');
    let a: HttpAnswer | Promise<HttpAnswer>;
    try {
      a = this.answer(url.slice(NOTICE_PREFIX.length, q < 0 ? url.length : q), q < 0 ? {} : querystring.parse(url.slice(q + 1)));
    } catch (e) {
      a = this.failed(e);
    }
    if (a instanceof Promise) {
      a.then(
        (x) => sendRaw(res, x),
        (e: unknown) => sendRaw(res, this.failed(e)),
      );
    } else {
      sendRaw(res, a);
    }
  };

  private failed(e: unknown): HttpAnswer {
    // A bug, not the caller's doing: what Fastify would make of it.
    this.logger.error({ msg: 'notice failed', err: e });
    return internalError();
  }

  /** The answer to one notice; a promise only for billing, which waits for Redis. */
  answer(event: string, query: Query): HttpAnswer | Promise<HttpAnswer> {
    if (!isNoticeEvent(event)) return errorAnswer(404, 'unknown notice type');
    let n: Notice;
    try {
      n = readNotice(event, query, this.codec);
    } catch (e) {
      if (!(e instanceof NoticeError)) throw e;
      this.stats.count(event, 'rejected');
      return errorAnswer(e.status, e.reason);
    }
    const p = n.payload;
    const record = {
      type: n.event,
      id: p.requestId,
      name: p.publisher,
      bid: p.bidId,
      imp: p.impId,
      crid: p.crid,
      cid: p.cid,
      price: n.price,
      bidPrice: p.price,
      cur: p.cur,
      deal: p.dealId === '' ? null : p.dealId,
      bidTs: p.ts,
    };
    switch (n.event) {
      case 'win':
        this.stats.count('win', 'ok');
        this.log.log(record);
        return NO_CONTENT();
      case 'loss':
        this.stats.count('loss', 'ok');
        this.log.log({ ...record, loss: n.loss });
        return NO_CONTENT();
      case 'bill':
        return this.bill(p, n.price, record);
      case 'imp':
        this.stats.count('imp', 'ok');
        this.log.log({ ...record, user: p.userId === '' ? null : p.userId });
        this.caps.recordImpression(p.userId, p.cid, p.crid).catch(() => {
          this.stats.count('imp', 'cap_error');
        });
        return { status: 200, headers: { 'content-type': 'image/gif', 'cache-control': 'no-store' }, payload: PIXEL };
      case 'click': {
        const c = this.store.current().get(p.crid);
        this.stats.count('click', c === undefined ? 'unknown_creative' : 'ok');
        this.log.log({ ...record, landing: c?.landingUrl ?? null });
        // Only ever redirect to the landing page of the creative named by the signed payload.
        if (c === undefined) return errorAnswer(404, 'creative no longer exists');
        return { status: 302, headers: { location: c.landingUrl, 'cache-control': 'no-store' }, payload: undefined };
      }
    }
  }

  private async bill(p: TrackingPayload, price: number | null, record: LogRecord): Promise<HttpAnswer> {
    let counted: boolean;
    try {
      counted = (await this.spend.bill(p, price)) === 'counted';
    } catch {
      // Spend could not be recorded: ask the exchange to retry (billing is idempotent).
      this.stats.count('bill', 'error');
      this.log.log({ ...record, counted: null });
      return errorAnswer(503, 'billing store unavailable, retry', { 'retry-after': '1' });
    }
    this.stats.count('bill', counted ? 'ok' : 'duplicate');
    this.log.log({ ...record, counted });
    return NO_CONTENT();
  }
}
