import type * as querystring from 'node:querystring';
import { Injectable, Logger } from '@nestjs/common';
import { CapsService } from '../delivery/caps.service';
import { SpendService } from '../delivery/spend.service';
import { errorAnswer, type HttpAnswer, noContent } from '../http/answer';
import { Route } from '../http/route.decorator';
import type { HttpRoute, RouteRequest } from '../http/server';
import type { NoticeRecord } from '../bidlog/records';
import { CampaignStore } from '../targeting/campaign-store';
import { isNoticeEvent, NoticeError, type Notice } from './notice';
import { NoticeLog } from './notice-log';
import { NoticeMarkers } from './notice-markers';
import { NoticeReader } from './notice-reader';
import type { TrackingPayload } from './payload';
import { ShadingFeedback } from './shading-feedback';

export { noticeMarker } from './notice-markers';

export const NOTICE_PREFIX = '/t/';

/** The smallest transparent GIF, the impression pixel's answer. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

function noContentAnswer(): HttpAnswer {
  return noContent();
}

function pixel(): HttpAnswer {
  return { status: 200, headers: { 'content-type': 'image/gif', 'cache-control': 'no-store' }, payload: PIXEL };
}

/**
 * Notice and tracker endpoints, the targets of every bid's nurl/burl/lurl, impression tracker and
 * click URL: `GET /t/{win,bill,loss,imp,click}?p=<payload>&s=<signature>&<macros>`, served by the
 * public HTTP server (src/http/server.ts). Each logs one record of its type. A payload signed for the other
 * audience, forged or tampered: 403; about a bid older than the age limit: 410.
 */
@Injectable()
export class NoticeRoute implements HttpRoute {
  private readonly logger = new Logger('Notices');

  constructor(
    private readonly reader: NoticeReader,
    private readonly markers: NoticeMarkers,
    private readonly notices: NoticeLog,
    private readonly store: CampaignStore,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly shading: ShadingFeedback,
  ) {}

  @Route({ method: 'GET', path: NOTICE_PREFIX, prefix: true, on: 'public' })
  handle(r: RouteRequest): HttpAnswer | Promise<HttpAnswer> {
    // Repeated keys give arrays, as in any query parser; readNotice takes the first.
    return this.answer(r.path.slice(NOTICE_PREFIX.length), r.query);
  }

  /**
   * The answer to one notice: a promise when its record waits for Redis (is this the bid's first
   * notice of the kind? was the bill counted?), which the answer waits for in turn.
   */
  answer(event: string, query: querystring.ParsedUrlQuery): HttpAnswer | Promise<HttpAnswer> {
    if (!isNoticeEvent(event)) return errorAnswer(404, 'unknown notice type');
    let n: Notice;
    try {
      n = this.reader.read(event, query);
    } catch (e) {
      if (!(e instanceof NoticeError)) throw e;
      this.notices.refused(event, e);
      return errorAnswer(e.status, e.reason);
    }
    const p = n.payload;
    if (n.event === 'win' || n.event === 'bill' || n.event === 'loss') this.shading.learn(n, query.sd);
    const record = this.notices.record(n);
    switch (n.event) {
      case 'win':
        return this.once(p, record, 'ok', noContentAnswer);
      case 'loss':
        // A loss gives the bid's reservation back to the campaign's lease, once per bid.
        return this.once(p, { ...record, loss: n.loss }, 'ok', noContentAnswer, () => this.spend.release(p, false));
      case 'bill':
        if (p.test === true) {
          this.notices.logged(record, 'test', false);
          return noContent();
        }
        return this.bill(p, n.price, record);
      case 'imp':
        if (p.test === true) {
          this.notices.logged({ ...record, user: p.userKey === '' ? null : p.userKey }, 'test', false);
          return pixel();
        }
        return this.impression(p, record);
      case 'click': {
        const c = this.store.current().get(p.crid);
        // Only ever redirect to the landing page of the creative named by the signed payload.
        const answer = c === undefined ? () => errorAnswer(404, 'creative no longer exists') : () => ({ status: 302, headers: { location: c.landingUrl, 'cache-control': 'no-store' }, payload: undefined });
        return this.once(p, { ...record, landing: c?.landingUrl ?? null }, c === undefined ? 'unknown_creative' : 'ok', answer);
      }
    }
  }

  /**
   * Win, loss and click: the record says whether this is the bid's first notice of the kind
   * (`counted`: true the first time, false for a repeat, null when Redis failed), as bills and
   * impressions say it; `first` runs for the first one only. The answer leaves once the record is
   * logged, so that it is in the crash journal with its answer (src/http/outbox.ts holds an answer
   * until the records logged before it are written there): a worker killed after answering has the
   * record on disk, and the next one recovers it. The marker is set with the next batch of commands
   * (src/redis/batch.ts: within REDIS_BATCH_MS, one write to Redis for all of them), so a notice's
   * answer waits up to that long; when Redis fails the record says null and the answer goes at once.
   */
  private once(p: TrackingPayload, record: NoticeRecord, outcome: string, answer: () => HttpAnswer, first?: () => void): Promise<HttpAnswer> {
    const event = record.type;
    return this.markers.first(event, p.bidId).then(
      (counted) => {
        this.notices.logged(record, counted ? outcome : 'repeated', counted);
        if (counted) first?.();
        return answer();
      },
      (e: unknown) => {
        this.notices.logged(record, 'error', null);
        this.logger.warn(`${event} notice not checked for repeats: ${(e as Error).message}`);
        return answer();
      },
    );
  }

  /**
   * The pixel answers once the record is logged (in the crash journal with its answer, as `once`
   * says), when Redis has said whether this bid's impression was counted before (`counted`: true the
   * first time, false for a replay, null when Redis failed).
   */
  private impression(p: TrackingPayload, record: NoticeRecord): Promise<HttpAnswer> {
    const user = p.userKey === '' ? null : p.userKey;
    return this.caps.recordImpression(p.bidId, p.userKey, p.cid, p.crid).then(
      (counted) => {
        this.notices.logged({ ...record, user }, counted ? 'ok' : 'repeated', counted);
        return pixel();
      },
      (e: unknown) => {
        this.notices.logged({ ...record, user }, 'cap_error', null);
        this.logger.warn(`impression not counted: ${(e as Error).message}`);
        return pixel();
      },
    );
  }

  private async bill(p: TrackingPayload, price: number | null, record: NoticeRecord): Promise<HttpAnswer> {
    let counted: boolean;
    try {
      counted = (await this.spend.bill(p, price)) === 'counted';
    } catch {
      // Spend could not be recorded: ask the exchange to retry (billing is idempotent).
      this.notices.logged(record, 'error', null);
      return errorAnswer(503, 'billing store unavailable, retry', { 'retry-after': '1' });
    }
    this.notices.logged(record, counted ? 'ok' : 'duplicate', counted);
    // Its cost is in the spend now: it leaves the window of unbilled bids.
    if (counted) this.spend.release(p, true);
    return noContent();
  }
}
