import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import type { LogRecord } from '../bidlog/records';
import { markupVersion, requestFieldBytes, responseFieldBytes, untypedRequestFields } from '../bidlog/compact';
import type { FieldBytes } from '../bidlog/json-bytes';
import { lineHead } from '../log/log-line';
import { LogService } from '../log/log.service';
import { MetricsService, type BidOutcome } from '../metrics/metrics.service';
import { InvalidRequestError } from '../openrtb/parse';
import { REQUEST_LIMITS } from '../openrtb/limits';
import { PrivacyStats } from '../privacy/privacy.module';
import { CampaignStore } from '../targeting/campaign-store';
import { OPEN_SOURCE } from '../exchanges/exchanges';
import { PacingGate } from '../delivery/pacing.gate';
import { type AuctionEffects, type AuctionOutcome, type BidAnswer, BidAuction } from './auction';
import { PrepareError, type Prepared, RequestPreparer } from './prepare';

export type { BidAnswer } from './auction';

/** The no-bid reason of a request shed under overload. */
export const SHED = 'shed';

/**
 * The bid path, in order: the body prepared (prepare.ts: read, privacy decision, typed request,
 * request record, user key), the auction (auction.ts) and its effects applied (budget, pacing and
 * cap counts, the bid price metric), then exactly one `request` and one `response` log record for
 * every request that carries an id, logged together. Synchronous and free of I/O: logging is an
 * in-memory append (log module).
 */
@Injectable()
export class BiddingService {
  private readonly logger = new Logger('Bidding');
  /** Source names by index (src/exchanges/exchanges.ts), for the log records. */
  private readonly sourceNames: readonly string[];
  /** LOG_REQUEST_SAMPLE: the fraction of requests whose redacted body (and full response) the log keeps. */
  private readonly sample: number;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly requests: RequestPreparer,
    private readonly auction: BidAuction,
    private readonly gate: PacingGate,
    private readonly store: CampaignStore,
    private readonly log: LogService,
    private readonly metrics: MetricsService,
    private readonly privacyStats: PrivacyStats,
  ) {
    this.sourceNames = [OPEN_SOURCE, ...(config.exchanges ?? []).map((e) => e.name)];
    this.sample = config.logRequestSample;
  }

  /** Whether this request's body is kept in the log (LOG_REQUEST_SAMPLE: 1 keeps every one, 0 none). */
  private keepBody(): boolean {
    return this.sample >= 1 || (this.sample > 0 && Math.random() < this.sample);
  }

  /**
   * Handles one POST body (already within the body limit and decoded). Never throws: a client's bad
   * input is a 400 with a reason, and a bug past the request record is logged and answered as a no-bid,
   * so that every request with an id has exactly one request and one response record.
   */
  bid(raw: Buffer, startedAt: number, arrivedAt: number = startedAt, source = 0): BidAnswer {
    const exchange = this.sourceNames[source] ?? OPEN_SOURCE;
    const waitedMs = startedAt - arrivedAt;
    this.metrics.bidWait(waitedMs / 1000);
    let prepared: Prepared;
    const keep = this.keepBody();
    try {
      prepared = this.requests.prepare(raw, source, waitedMs, keep);
    } catch (e) {
      if (e instanceof InvalidRequestError) return this.refuse(400, e.reason, startedAt);
      if (!(e instanceof PrepareError)) throw e;
      const privacy = e.privacy;
      this.privacyStats.count(privacy.reason);
      const id = idOf(e.parsed);
      if (!e.invalid) this.logger.error({ msg: 'bid request reader failed', err: e.cause });
      if (id !== '') {
        this.logPair({ type: 'request', id, name: '', exchange }, e.record, untypedRequestFields(raw, true), { type: 'response', id, name: '', exchange, status: e.invalid ? 400 : 204, reason: e.reason, ms: elapsed(startedAt), privacy: privacy.reason });
      }
      if (e.invalid) return this.refuse(400, e.reason, startedAt);
      return this.failed(startedAt);
    }
    if (prepared.req === null) return this.shed(prepared.parsed, prepared.record, untypedRequestFields(raw, keep), startedAt, exchange);
    const { req, privacy, record } = prepared;
    this.privacyStats.count(privacy.reason);
    // A test request (`test` = 1) is marked in both records; it bids but reserves and spends nothing.
    const test = req.test ? true : undefined;
    const request: LogRecord = { type: 'request', id: req.id, name: req.publisher, exchange, test };
    // Bytes in a buffer the next request's fields reuse: logged below, before any other request is prepared.
    const fields = requestFieldBytes(req, raw, keep);
    let outcome: AuctionOutcome;
    try {
      outcome = this.auction.hold(req, privacy.userData);
    } catch (e) {
      // What the auction would have changed is dropped with its bids: none of them is sent.
      this.logger.error({ msg: 'auction failed', id: req.id, err: e });
      this.logPair(request, record, fields, { type: 'response', id: req.id, name: req.publisher, exchange, test, status: 204, reason: 'internal_error', ms: elapsed(startedAt), privacy: privacy.reason });
      return this.failed(startedAt);
    }
    this.apply(outcome.effects);
    const answer = outcome.answer;
    if (answer.status === 200) {
      // The compact bids always; the response as sent only with the request's body (LOG_REQUEST_SAMPLE):
      // the log copies the bytes the route sends. The response is ours: it never holds a raw line break.
      this.log.logPair(
        request,
        keep ? { key: 'req', json: record, singleLine: true } : undefined,
        { type: 'response', id: req.id, name: req.publisher, exchange, test, dropped: answer.dropped, status: 200, ms: elapsed(startedAt), privacy: privacy.reason },
        keep && answer.bytes !== null ? { key: 'res', bytes: answer.bytes, singleLine: true } : undefined,
        fields,
        responseFieldBytes(answer.cur ?? '', markupVersion(this.store.current()), answer.bids ?? NO_BIDS),
      );
      this.metrics.bidRequest('bid', null, (performance.now() - startedAt) / 1000);
    } else {
      this.logPair(request, record, fields, { type: 'response', id: req.id, name: req.publisher, exchange, test, dropped: answer.dropped, status: 204, reason: answer.reason, ms: elapsed(startedAt), privacy: privacy.reason });
      this.metrics.bidRequest('nobid', answer.reason, (performance.now() - startedAt) / 1000);
    }
    return answer;
  }

  /** The bid path's auction's effects, applied: the pacing gate's counts and the budget its bids take, their prices' metric. */
  private apply(fx: AuctionEffects): void {
    this.gate.apply(fx);
    for (let i = 0; i < fx.priceCount; i++) this.metrics.bidPrice(fx.prices[i]);
    fx.priceCount = 0;
  }

  /**
   * A request's two records: the request with its compact `fields` and, when kept, its body
   * (`record`: its text as prepare.ts made it, one valid JSON object whatever was sent, personal
   * data redacted; '' when not kept), and the response without a body.
   */
  private logPair(request: LogRecord, record: string, fields: string | FieldBytes, response: LogRecord): void {
    this.log.logPair(request, record === '' ? undefined : { key: 'req', json: record, singleLine: true }, response, undefined, fields);
  }

  /** A request refused before bidding (HTTP-level body errors included): counted, not logged. */
  refuse(status: 400 | 413, reason: string, startedAt: number): BidAnswer {
    const outcome: BidOutcome = status === 413 ? 'too_large' : 'bad_request';
    this.metrics.bidRequest(outcome, null, (performance.now() - startedAt) / 1000);
    return { status, bytes: Buffer.from(JSON.stringify({ error: reason }), 'utf8'), reason };
  }

  /**
   * Overload: the request waited too long to be answered within the exchange's deadline, so it gets
   * a no-bid at once instead of a bid too late to count (which would only cost CPU and, to the
   * exchange, be a timeout). Its records are logged like any other's (reason `shed`), personal data
   * redacted as for a request without consent; the auction, markup and privacy decoding are skipped.
   */
  private shed(parsed: unknown, record: string, fields: string, startedAt: number, exchange: string): BidAnswer {
    const id = idOf(parsed);
    if (id !== '') this.logPair({ type: 'request', id, name: '', exchange }, record, fields, { type: 'response', id, name: '', exchange, status: 204, reason: SHED, ms: elapsed(startedAt) });
    this.metrics.bidRequest('shed', SHED, (performance.now() - startedAt) / 1000);
    return { status: 204, bytes: null, reason: SHED };
  }

  /** A bug met while bidding: the exchange gets a no-bid, the operator a log line and a count. */
  private failed(startedAt: number): BidAnswer {
    this.metrics.bidRequest('error', null, (performance.now() - startedAt) / 1000);
    return { status: 204, bytes: null, reason: 'internal_error' };
  }

  /**
   * The warm-up's pass over one body (warm-up.ts): the bid path's preparation, request record
   * included, its auction (`rehearse`: no pacing draw, the bids written at their value: no
   * shading) with its effects dropped, the answer's bytes and the log lines' heads. Nothing is
   * logged, counted, reserved or learnt. Throws what `prepare` throws.
   */
  warm(raw: Buffer): number {
    const { req, privacy, record } = this.requests.prepare(raw, 0, 0, true);
    if (req === null) return 0;
    const { answer } = this.auction.rehearse(req, privacy.userData);
    const head = lineHead(Date.now(), '0', '""', { type: 'request', id: req.id, name: req.publisher, exchange: OPEN_SOURCE, test: undefined }, 'req');
    const bytes = answer.bytes === null ? 0 : answer.bytes.length;
    return head.length + record.length + bytes;
  }
}

/** No compact bids. */
const NO_BIDS: FieldBytes = { buf: Buffer.alloc(0), length: 0 };

/** The request id of a body that failed validation, for the log ('' when there is none), cut to the id limit. */
function idOf(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const id = (body as { id?: unknown }).id;
  const s = typeof id === 'string' ? id : typeof id === 'number' ? String(id) : '';
  return s.length > REQUEST_LIMITS.idChars ? s.slice(0, REQUEST_LIMITS.idChars) : s;
}

/** Milliseconds since `startedAt`, to the microsecond. */
function elapsed(startedAt: number): number {
  return Math.round((performance.now() - startedAt) * 1000) / 1000;
}
