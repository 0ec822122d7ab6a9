import type * as querystring from 'node:querystring';
import { Inject, Injectable, Logger, type OnModuleInit, Optional } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { CurrencyService } from '../currency/currency.service';
import { CapsService } from '../delivery/caps.service';
import { Clock } from '../delivery/clock';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { errorAnswer, type HttpAnswer, noContent } from '../http/answer';
import { OPEN_SOURCE } from '../exchanges/exchanges';
import { HttpServers } from '../http/http.module';
import type { HttpRoute, RouteRequest } from '../http/server';
import { LogService } from '../log/log.service';
import type { NoticeRecord } from '../bidlog/records';
import { RedisBatch } from '../redis/batch';
import { RedisService } from '../redis/redis.service';
import { CampaignStore } from '../targeting/campaign-store';
import { isNoticeEvent, NoticeError, readNotice, type Notice } from './notice';
import { NoticeStats } from './notice-stats';
import { PayloadCodec, type TrackingPayload } from './payload';

export const NOTICE_PREFIX = '/t/';

/** Marks the first win, loss or click notice of a bid (bill and imp have their own markers). */
export const noticeMarker = (event: string, bidId: string): string => `bidder:notice:{${bidId}}:${event}`;

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
export class NoticeRoute implements HttpRoute, OnModuleInit {
  private readonly logger = new Logger('Notices');
  private readonly maxAgeMs: number;
  private readonly markerTtlSeconds: number;
  /** Source names by index (src/exchanges/exchanges.ts), for the records. */
  private readonly sourceNames: readonly string[];

  constructor(
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
    @Inject(CONFIG) config: Config,
    private readonly codec: PayloadCodec,
    private readonly log: LogService,
    private readonly store: CampaignStore,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly stats: NoticeStats,
    private readonly currency: CurrencyService,
    private readonly redis: RedisService,
    private readonly shading: ShadingService,
    private readonly clock: Clock,
    private readonly batch: RedisBatch,
  ) {
    this.maxAgeMs = config.billDedupeTtlSeconds * 1000;
    // A marker outlives every notice of its bid: older ones are refused (410) anyway.
    this.markerTtlSeconds = config.billDedupeTtlSeconds;
    this.sourceNames = [OPEN_SOURCE, ...(config.exchanges ?? []).map((e) => e.name)];
  }

  onModuleInit(): void {
    this.servers?.public.route({ method: 'GET', path: NOTICE_PREFIX, prefix: true, route: this });
  }

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
      n = readNotice(event, query, this.codec, this.maxAgeMs, this.currency.current(), this.clock.now());
    } catch (e) {
      if (!(e instanceof NoticeError)) throw e;
      this.stats.count(event, e.status === 410 ? 'expired' : 'rejected');
      this.stats.refused(event, e.code);
      return errorAnswer(e.status, e.reason);
    }
    const p = n.payload;
    if (n.event === 'win' || n.event === 'bill' || n.event === 'loss') this.learn(n, query.sd);
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
      exchange: this.sourceNames[p.source ?? 0] ?? 'unknown',
      // A bid to a test request: spends nothing, counts no caps.
      test: p.test === true ? true : undefined,
    };
    switch (n.event) {
      case 'win':
        return this.once(p, record, 'ok', noContentAnswer);
      case 'loss':
        // A loss gives the bid's reservation back to the campaign's lease, once per bid.
        return this.once(p, { ...record, loss: n.loss }, 'ok', noContentAnswer, () => this.spend.release(p, false));
      case 'bill':
        if (p.test === true) {
          this.stats.count('bill', 'test');
          this.log.log({ ...record, counted: false });
          return noContent();
        }
        return this.bill(p, n.price, record);
      case 'imp':
        if (p.test === true) {
          this.stats.count('imp', 'test');
          this.log.log({ ...record, user: p.userKey === '' ? null : p.userKey, counted: false });
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

  /** Bid shading learns from a shaded bid's win, bill and loss notices (`sd`: its segment's device type). */
  private learn(n: Notice, sd: string | string[] | undefined): void {
    const raw = Array.isArray(sd) ? sd[0] : sd;
    if (raw === undefined || raw === '') return;
    const deviceType = Number(raw);
    if (!Number.isInteger(deviceType) || deviceType < 0 || deviceType > 1000) return;
    const p = n.payload;
    if (p.test === true) return;
    const rates = this.currency.current();
    const toUsd = (v: number) => (p.cur === 'USD' ? v : rates.convert(v, p.cur, 'USD'));
    const bid = toUsd(p.price);
    if (bid === null) return;
    // A loss's clearing price is the winner's: the price to beat when the exchange sent no ${AUCTION_MIN_TO_WIN}.
    const minToWin = n.minToWin ?? (n.event === 'loss' ? n.price : null);
    this.shading.learn(n.event as 'win' | 'bill' | 'loss', p, bid, minToWin === null ? null : toUsd(minToWin), deviceType, n.loss);
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
    return new Promise<HttpAnswer>((resolve) => {
      this.batch.later(() =>
        this.redis
          .connection()
          .set(noticeMarker(event, p.bidId), '1', 'EX', this.markerTtlSeconds, 'NX')
          .then(
            (ok) => {
              const counted = ok !== null;
              this.stats.count(event, counted ? outcome : 'repeated');
              this.log.log({ ...record, counted });
              if (counted) first?.();
              resolve(answer());
            },
            (e: unknown) => {
              this.stats.count(event, 'error');
              this.log.log({ ...record, counted: null });
              this.logger.warn(`${event} notice not checked for repeats: ${(e as Error).message}`);
              resolve(answer());
            },
          ),
      );
    });
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
        this.stats.count('imp', counted ? 'ok' : 'repeated');
        this.log.log({ ...record, user, counted });
        return pixel();
      },
      (e: unknown) => {
        this.stats.count('imp', 'cap_error');
        this.log.log({ ...record, user, counted: null });
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
      this.stats.count('bill', 'error');
      this.log.log({ ...record, counted: null });
      return errorAnswer(503, 'billing store unavailable, retry', { 'retry-after': '1' });
    }
    this.stats.count('bill', counted ? 'ok' : 'duplicate');
    this.log.log({ ...record, counted });
    // Its cost is in the spend now: it leaves the window of unbilled bids.
    if (counted) this.spend.release(p, true);
    return noContent();
  }
}
