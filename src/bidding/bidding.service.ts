import { Inject, Injectable, Logger } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import type { RawJson } from '../log/log-line';
import { LogService } from '../log/log.service';
import { MetricsService, type BidOutcome } from '../metrics/metrics.service';
import { InvalidRequestError } from '../openrtb/parse';
import { REQUEST_LIMITS } from '../openrtb/limits';
import type { BidRequest } from '../openrtb/types';
import { CurrencyService } from '../currency/currency.service';
import { PiiHasher } from '../privacy/pii-hasher';
import { PrivacyPolicy, type PrivacyReason } from '../privacy/policy';
import { PrivacyStats } from '../privacy/privacy.module';
import { requestLogJson } from '../privacy/redact';
import { Auction, CampaignStore, type Explanation } from '../targeting/campaign-store';
import type { NoBidReason } from '../targeting/types';
import { PacingGate } from '../delivery/pacing.gate';
import { Clock } from '../delivery/clock';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { OPEN_SOURCE } from '../exchanges/exchanges';
import { PayloadCodec } from '../tracking/payload';
import { PrepareError, type Prepared, RequestPreparer } from './prepare';
import { BidWriter, ENVELOPE_BYTES } from './response-json';

/** What the controller sends back. `body` is '' for 204. */
export interface BidAnswer {
  status: 200 | 204 | 400 | 413;
  body: string;
  /** `body` in UTF-8, on a bid: encoded once, for the log and for the socket. */
  bytes?: Buffer;
  /** The no-bid or error reason (null on a bid). */
  reason: string | null;
  /** Bids dropped to keep the answer within ANSWER_MAX_BYTES (undefined: none). */
  dropped?: number;
}

/** One imp as `/debug/explain` reports it: the auction's reason (null: it bids) and every candidate's verdict. */
export interface ImpExplained {
  impid: string;
  reason: NoBidReason | null;
  candidates: Explanation[];
}

/** `/debug/explain`'s answer: what the bid path would answer (`status`, `reason`), and why, imp by imp. */
export interface Explained {
  id: string;
  /** The bid currency, null when none of the request's is known. */
  cur: string | null;
  privacy: PrivacyReason;
  status: 200 | 204;
  reason: string | null;
  imps: ImpExplained[];
}

/** The no-bid reason of a request shed under overload. */
export const SHED = 'shed';
/** The no-bid reason when not even the first bid fits in ANSWER_MAX_BYTES. */
export const ANSWER_SIZE = 'answer_size';

/**
 * The bid path: body → request view → auction per imp → markup → response, plus exactly one
 * `request` and one `response` log record for every request that carries an id.
 * Synchronous and free of I/O: logging is an in-memory append (log module).
 */
@Injectable()
export class BiddingService {
  private readonly logger = new Logger('Bidding');
  private readonly requests: RequestPreparer;
  private readonly writer: BidWriter;
  private readonly selector: Auction;
  private readonly logRawPii: boolean;
  /** Source names by index (src/exchanges/exchanges.ts), for the log records. */
  private readonly sourceNames: readonly string[];
  private readonly answerMaxBytes: number;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly store: CampaignStore,
    private readonly log: LogService,
    private readonly metrics: MetricsService,
    gate: PacingGate,
    private readonly spend: SpendService,
    codec: PayloadCodec,
    policy: PrivacyPolicy,
    private readonly hasher: PiiHasher,
    private readonly privacyStats: PrivacyStats,
    private readonly currency: CurrencyService,
    private readonly shading: ShadingService,
    private readonly clock: Clock,
  ) {
    this.requests = new RequestPreparer(policy, hasher, config);
    this.writer = new BidWriter(config.trackingBaseUrl, config.dsaDomain, codec);
    this.selector = new Auction(gate);
    this.logRawPii = config.logRawPii;
    this.sourceNames = [OPEN_SOURCE, ...(config.exchanges ?? []).map((e) => e.name)];
    this.answerMaxBytes = config.answerMaxBytes;
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
    try {
      prepared = this.requests.prepare(raw, source, waitedMs);
    } catch (e) {
      if (e instanceof InvalidRequestError) return this.refuse(400, e.reason, startedAt);
      if (!(e instanceof PrepareError)) throw e;
      const privacy = e.privacy;
      this.privacyStats.count(privacy.reason);
      const id = idOf(e.parsed);
      if (!e.invalid) this.logger.error({ msg: 'bid request reader failed', err: e.cause });
      if (id !== '') {
        this.log.log({ type: 'request', id, name: '', exchange }, this.requestText(e.parsed, false));
        this.log.log({ type: 'response', id, name: '', exchange, status: e.invalid ? 400 : 204, reason: e.reason, ms: elapsed(startedAt), privacy: privacy.reason });
      }
      if (e.invalid) return this.refuse(400, e.reason, startedAt);
      return this.failed(startedAt);
    }
    if (prepared.req === null) return this.shed(prepared.parsed, startedAt, exchange);
    const { parsed, req, privacy } = prepared;
    this.privacyStats.count(privacy.reason);
    // A test request (`test` = 1) is marked in both records; it bids but reserves and spends nothing.
    const test = req.test ? true : undefined;
    // The log keeps what its allowlist names, IPs truncated and ids hashed, unless the request
    // consented and LOG_RAW_PII is on.
    this.log.log({ type: 'request', id: req.id, name: req.publisher, exchange, test }, this.requestText(parsed, privacy.consent && this.logRawPii));
    let answer: BidAnswer;
    try {
      answer = this.auction(req, privacy.userData);
    } catch (e) {
      this.logger.error({ msg: 'auction failed', id: req.id, err: e });
      this.log.log({ type: 'response', id: req.id, name: req.publisher, exchange, test, status: 204, reason: 'internal_error', ms: elapsed(startedAt), privacy: privacy.reason });
      return this.failed(startedAt);
    }
    if (answer.status === 200) {
      // Encoded once: the log copies these bytes and the route sends them. The response text is
      // ours: the serializer never writes a raw line break.
      answer.bytes = Buffer.from(answer.body, 'utf8');
      this.log.log(
        { type: 'response', id: req.id, name: req.publisher, exchange, test, dropped: answer.dropped, status: 200, ms: elapsed(startedAt), privacy: privacy.reason },
        { key: 'res', bytes: answer.bytes, singleLine: true },
      );
      this.metrics.bidRequest('bid', null, (performance.now() - startedAt) / 1000);
    } else {
      this.log.log({ type: 'response', id: req.id, name: req.publisher, exchange, test, dropped: answer.dropped, status: 204, reason: answer.reason, ms: elapsed(startedAt), privacy: privacy.reason });
      this.metrics.bidRequest('nobid', answer.reason, (performance.now() - startedAt) / 1000);
    }
    return answer;
  }

  /**
   * The request as the log keeps it (src/privacy/redact.ts): one valid JSON object whatever was sent
   * (duplicate keys resolved as JSON.parse does, nesting within the limit, no raw line breaks,
   * valid UTF-8), built in one pass from the parsed body.
   */
  private requestText(parsed: unknown, keepRawPii: boolean): RawJson {
    return { key: 'req', json: requestLogJson(parsed, this.hasher, { keepRawPii }), singleLine: true };
  }

  /** A request refused before bidding (HTTP-level body errors included): counted, not logged. */
  refuse(status: 400 | 413, reason: string, startedAt: number): BidAnswer {
    const outcome: BidOutcome = status === 413 ? 'too_large' : 'bad_request';
    this.metrics.bidRequest(outcome, null, (performance.now() - startedAt) / 1000);
    return { status, body: JSON.stringify({ error: reason }), reason };
  }

  /**
   * Overload: the request waited too long to be answered within the exchange's deadline, so it gets
   * a no-bid at once instead of a bid too late to count (which would only cost CPU and, to the
   * exchange, be a timeout). Its records are logged like any other's (reason `shed`), personal data
   * redacted as for a request without consent; the auction, markup and privacy decoding are skipped.
   */
  private shed(parsed: unknown, startedAt: number, exchange: string): BidAnswer {
    const id = idOf(parsed);
    if (id !== '') {
      this.log.log({ type: 'request', id, name: '', exchange }, this.requestText(parsed, false));
      this.log.log({ type: 'response', id, name: '', exchange, status: 204, reason: SHED, ms: elapsed(startedAt) });
    }
    this.metrics.bidRequest('shed', SHED, (performance.now() - startedAt) / 1000);
    return { status: 204, body: '', reason: SHED };
  }

  /** A bug met while bidding: the exchange gets a no-bid, the operator a log line and a count. */
  private failed(startedAt: number): BidAnswer {
    this.metrics.bidRequest('error', null, (performance.now() - startedAt) / 1000);
    return { status: 204, body: '', reason: 'internal_error' };
  }

  /**
   * `/debug/explain`: the bid path's answer to this body and why, without its effects (no log
   * record, no budget taken, no bid built: shading learns nothing). Prepared as a bid from the open
   * endpoint is. Throws InvalidRequestError or PrepareError for what the bid path answers 400 (or,
   * for a reader bug, 204 internal_error).
   */
  explain(raw: Buffer): Explained {
    const { req, privacy } = this.requests.prepare(raw, 0);
    if (req === null) throw new Error('unreachable: a request that did not wait is never shed');
    const imps: ImpExplained[] = [];
    const answer = this.auction(req, privacy.userData, imps);
    return {
      id: req.id,
      cur: this.currency.current().chooseBidCurrency(req.cur),
      privacy: privacy.reason,
      status: answer.status === 200 ? 200 : 204,
      reason: answer.reason,
      imps,
    };
  }

  /**
   * Runs the auction for every imp; at most one bid per imp. `userData`: whether the request allows
   * user-level data (else user-targeted campaigns do not bid). Prices and floors use the rates in
   * use now (CurrencyService), one table for the whole request. With `explained` (explain), every
   * imp's verdicts are collected there and no bid is priced, built or committed: the answer has the
   * status and reason, and no body.
   */
  auction(req: BidRequest, userData: boolean, explained: ImpExplained[] | null = null): BidAnswer {
    const rates = this.currency.current();
    const cur = rates.chooseBidCurrency(req.cur);
    if (cur === null) {
      if (explained !== null) for (const imp of req.imps) explained.push({ impid: imp.id, reason: 'currency', candidates: [] });
      return { status: 204, body: '', reason: 'currency' };
    }
    const index = this.store.current();
    const now = this.clock.now();
    let bids: string | null = null;
    let reason: NoBidReason | null = null;
    const idJson = JSON.stringify(req.id);
    // The answer's size budget (ANSWER_MAX_BYTES): bids are kept in imp order while they fit, one
    // that does not is dropped (a later, smaller one may still fit). Measured as 3 bytes per UTF-16
    // unit, an upper bound of UTF-8, until that bound nears the budget; exactly from then on.
    let room = this.answerMaxBytes - ENVELOPE_BYTES - 3 * (idJson.length + cur.length);
    let exact = false;
    let dropped = 0;
    for (let i = 0; i < req.imps.length; i++) {
      const imp = req.imps[i];
      const m = this.selector.select(index, imp, req, cur, rates, userData);
      if (explained !== null) {
        explained.push({ impid: imp.id, reason: typeof m === 'string' ? m : null, candidates: this.selector.explain(index, imp, req, cur, rates, userData).candidates });
        if (typeof m !== 'string') bids = '';
      }
      if (typeof m === 'string') {
        if (reason === null) reason = m;
        continue;
      }
      if (explained !== null) continue;
      // First price: the shaded price; the value otherwise.
      const price = req.at === 1 ? this.shading.price(req, imp, m, cur, rates, now, this.spend.pressure(m.candidate)) : m.price;
      const bid = this.writer.bid(req, imp, m, cur, now, price, this.shading.noticeParam(req, m));
      let size = 3 * bid.length + 1;
      if (size > room && !exact) {
        exact = true;
        room = this.answerMaxBytes - ENVELOPE_BYTES - Buffer.byteLength(idJson) - Buffer.byteLength(cur) - (bids === null ? 0 : Buffer.byteLength(bids));
      }
      if (exact) size = Buffer.byteLength(bid) + 1;
      if (size > room) {
        dropped++;
        continue;
      }
      room -= size;
      if (!req.test) this.spend.commit(m.candidate, req.source);
      bids = bids === null ? bid : `${bids},${bid}`;
      this.metrics.bidPrice(price);
    }
    if (bids === null) return { status: 204, body: '', reason: dropped > 0 ? ANSWER_SIZE : (reason ?? 'no_candidates'), dropped: dropped > 0 ? dropped : undefined };
    return { status: 200, body: explained !== null ? '' : this.writer.envelope(idJson, cur, bids), reason: null, dropped: dropped > 0 ? dropped : undefined };
  }
}

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
