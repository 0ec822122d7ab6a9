import { Inject, Injectable, Logger } from '@nestjs/common';
import { v4 as uuidv4 } from 'uuid';
import { CONFIG, type Config } from '../config/config';
import type { RawJson } from '../log/log-line';
import { LogService } from '../log/log.service';
import { MetricsService, type BidOutcome } from '../metrics/metrics.service';
import { readJson } from '../openrtb/json';
import { REQUEST_LIMITS } from '../openrtb/limits';
import { InvalidRequestError, NativeRequestCache, parseBidRequest } from '../openrtb/parse';
import { MType, type BidRequest, type Imp } from '../openrtb/types';
import { CurrencyService } from '../currency/currency.service';
import { STATIC_RATES } from '../currency/rates';
import { PiiHasher } from '../privacy/pii-hasher';
import { PrivacyPolicy } from '../privacy/policy';
import { PrivacyStats } from '../privacy/privacy.module';
import { requestLogJson } from '../privacy/redact';
import { readPrivacySignals } from '../privacy/signals';
import { Auction, CampaignStore } from '../targeting/campaign-store';
import type { Match, NoBidReason } from '../targeting/types';
import { PacingGate } from '../delivery/pacing.gate';
import { Clock } from '../delivery/clock';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { OPEN_SOURCE } from '../exchanges/exchanges';
import { PayloadCodec } from '../tracking/payload';
import { bannerAdm, escapeHtml, trackingUrls, vastAdm, type TrackingUrls } from './markup';
import { DsaWriter, isJsonSafe, nativeAdmLiteral } from './response-json';

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

/** The no-bid reason of a request shed under overload. */
export const SHED = 'shed';
/** The no-bid reason when not even the first bid fits in ANSWER_MAX_BYTES. */
export const ANSWER_SIZE = 'answer_size';
/** `{"id":…,"cur":"…","seatbid":[{"bid":[…]}]}` around the bids, besides the id and the currency. */
const ENVELOPE_BYTES = 40;

// Exchange macros (OpenRTB 2.6 §4.4), substituted by the exchange before it calls the URL. The
// price to win (where the exchange tells it) is what bid shading learns best from.
const WIN_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&mtw=${AUCTION_MIN_TO_WIN}';
const LOSS_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}&loss=${AUCTION_LOSS}&mtw=${AUCTION_MIN_TO_WIN}';

/**
 * The bid path: body → request view → auction per imp → markup → response, plus exactly one
 * `request` and one `response` log record for every request that carries an id.
 * Synchronous and free of I/O: logging is an in-memory append (log module).
 */
@Injectable()
export class BiddingService {
  private readonly logger = new Logger('Bidding');
  /** The tracking URLs' fixed parts for plain and secure imps, built once (buildBid appends the payload). */
  private readonly routes: TrackingRoutes;
  private readonly secureRoutes: TrackingRoutes;
  /** The tracking base URLs need neither HTML nor JSON escaping (checked once; true for any usual URL). */
  private readonly baseSafe: boolean;
  private readonly selector: Auction;
  private readonly dsa: DsaWriter;
  private readonly logRawPii: boolean;
  private readonly shedMaxWaitMs: number;
  /** Native requests sent as strings, read once (the reader's cache, owned here). */
  private readonly natives = new NativeRequestCache();
  private readonly shedMarginMs: number;
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
    private readonly codec: PayloadCodec,
    private readonly policy: PrivacyPolicy,
    private readonly hasher: PiiHasher,
    private readonly privacyStats: PrivacyStats,
    private readonly currency: CurrencyService,
    private readonly shading: ShadingService,
    private readonly clock: Clock,
  ) {
    const base = config.trackingBaseUrl;
    // imp.secure = 1 needs https everywhere; TLS is expected to be terminated in front of the bidder.
    const secureBase = base.replace(/^http:/, 'https:');
    this.baseSafe = [base, secureBase].every((b) => isJsonSafe(b) && escapeHtml(b) === b);
    this.routes = trackingRoutes(base);
    this.secureRoutes = trackingRoutes(secureBase);
    this.selector = new Auction(STATIC_RATES, gate);
    this.dsa = new DsaWriter(config.dsaDomain);
    this.logRawPii = config.logRawPii;
    this.shedMaxWaitMs = config.shedMaxWaitMs;
    this.shedMarginMs = config.shedMarginMs;
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
    let parsed: unknown;
    try {
      parsed = readJson(raw);
    } catch (e) {
      if (e instanceof InvalidRequestError) return this.refuse(400, e.reason, startedAt);
      throw e;
    }
    const waitedMs = startedAt - arrivedAt;
    this.metrics.bidWait(waitedMs / 1000);
    if (this.shedMaxWaitMs > 0 && waitedMs > this.shedBudget(parsed)) return this.shed(parsed, startedAt, exchange);
    // What the request may be used for (regs, consent, GPP, COPPA, lmt/dnt), decided once.
    const privacy = this.policy.decide(readPrivacySignals(parsed));
    this.privacyStats.count(privacy.reason);
    let req: BidRequest;
    try {
      req = parseBidRequest(parsed, this.natives);
    } catch (e) {
      const id = idOf(parsed);
      const invalid = e instanceof InvalidRequestError;
      if (!invalid) this.logger.error({ msg: 'bid request reader failed', err: e });
      if (id !== '') {
        this.log.log({ type: 'request', id, name: '', exchange }, this.requestText(parsed, false));
        const reason = invalid ? e.reason : 'internal_error';
        this.log.log({ type: 'response', id, name: '', exchange, status: invalid ? 400 : 204, reason, ms: elapsed(startedAt), privacy: privacy.reason });
      }
      if (invalid) return this.refuse(400, e.reason, startedAt);
      return this.failed(startedAt);
    }
    // Caps and tracking payloads know the user by a keyed hash, and only when user data may be used.
    req.userKey = privacy.userData && req.userId !== '' ? this.hasher.hash(req.userId) : '';
    req.source = source;
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
   * How long a request may have waited before it is shed: min(SHED_MAX_WAIT_MS, tmax −
   * SHED_MARGIN_MS), at least 10 ms (a tmax shorter than the margin is the exchange's choice: what
   * arrives in time is still answered).
   */
  private shedBudget(parsed: unknown): number {
    const tmax = Number((parsed as { tmax?: unknown } | null)?.tmax);
    if (!(tmax > 0)) return this.shedMaxWaitMs;
    return Math.min(this.shedMaxWaitMs, Math.max(10, tmax - this.shedMarginMs));
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
   * Runs the auction for every imp; at most one bid per imp. `userData`: whether the request allows
   * user-level data (else user-targeted campaigns do not bid). Prices and floors use the rates in
   * use now (CurrencyService), one table for the whole request.
   */
  auction(req: BidRequest, userData: boolean): BidAnswer {
    const rates = this.currency.current();
    this.selector.rates = rates;
    const cur = rates.chooseBidCurrency(req.cur);
    if (cur === null) return { status: 204, body: '', reason: 'currency' };
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
      const m = this.selector.select(index, imp, req, cur, userData);
      if (typeof m === 'string') {
        if (reason === null) reason = m;
        continue;
      }
      // First price: the shaded price; the value otherwise.
      const price = req.at === 1 ? this.shading.price(req, imp, m, cur, rates, now, this.spend.pressure(m.candidate)) : m.price;
      const bid = this.buildBid(req, imp, m, cur, now, price);
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
    const body = `{"id":${idJson},"cur":${JSON.stringify(cur)},"seatbid":[{"bid":[${bids}]}]}`;
    return { status: 200, body, reason: null, dropped: dropped > 0 ? dropped : undefined };
  }

  /** One bid's JSON text (OpenRTB 2.6 §4.3.3): id, impid, price, adm, adomain, crid, cid, cat, attr, mtype, nurl, burl, lurl, w, h, dealid. */
  private buildBid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number, price: number): string {
    const c = m.candidate;
    // uuid's v4 hands the work to node:crypto's randomUUID (0.1-0.2 µs either way, measured).
    const bidId = uuidv4();
    const r = imp.secure ? this.secureRoutes : this.routes;
    const q = this.codec.encode({
      requestId: req.id,
      bidId,
      impId: imp.id,
      crid: c.id,
      cid: c.campaignId,
      price,
      cur,
      ts: now,
      dealId: m.dealId ?? '',
      publisher: req.publisher,
      userKey: req.userKey,
      test: req.test,
      source: req.source,
    });
    // Browser URLs carry the browser signature, notices from the exchange's servers the other one.
    // The payload query is base64url plus `&s=`: only `&` needs HTML escaping, and nothing JSON.
    const qb = q.browser;
    const qHtml = qb.replace('&', '&amp;');
    const urls: TrackingUrls = this.baseSafe
      ? { click: r.click + qb, imp: r.imp + qb, clickHtml: r.click + qHtml, impHtml: r.imp + qHtml }
      : trackingUrls(r.click + qb, r.imp + qb);
    const cj = m.json;
    let adm: string;
    switch (m.mtype) {
      case MType.Native:
        adm = nativeAdmLiteral(imp.native!, m.native ?? [], urls, this.baseSafe);
        break;
      case MType.Video:
        adm = quoted(vastAdm(c, urls, bidId, videoMime(c.video?.mimes ?? [], imp.video?.mimes ?? [])), cj.vastSafe && this.baseSafe);
        break;
      default:
        adm = quoted(bannerAdm(c, urls), cj.bannerSafe && this.baseSafe);
    }
    const sd = this.shading.noticeParam(req, m);
    let bid =
      `{"id":"${bidId}","impid":${JSON.stringify(imp.id)},"price":${JSON.stringify(price)},` +
      `"adm":${adm}${cj.fields},"mtype":${m.mtype},` +
      `"nurl":${quoted(r.win + q.s2s + sd + WIN_QS, this.baseSafe)},` +
      `"burl":${quoted(r.bill + q.s2s + sd + WIN_QS, this.baseSafe)},` +
      `"lurl":${quoted(r.loss + q.s2s + sd + LOSS_QS, this.baseSafe)}`;
    if (m.size !== null) bid += `,"w":${m.size.w},"h":${m.size.h}`;
    else if (m.mtype === MType.Video && c.video !== null) bid += `,"w":${c.video.w},"h":${c.video.h}`;
    if (m.dealId !== null) bid += `,"dealid":${JSON.stringify(m.dealId)}`;
    return `${bid}${this.dsa.fragment(m, req.dsa)}}`;
  }
}

/** The tracking routes of one base URL, up to their query: `<base>/t/<event>?`. */
interface TrackingRoutes {
  readonly click: string;
  readonly imp: string;
  readonly win: string;
  readonly bill: string;
  readonly loss: string;
}

function trackingRoutes(base: string): TrackingRoutes {
  return { click: `${base}/t/click?`, imp: `${base}/t/imp?`, win: `${base}/t/win?`, bill: `${base}/t/bill?`, loss: `${base}/t/loss?` };
}

/** A JSON string literal; `safe` says `s` is known to need no escaping. */
function quoted(s: string, safe: boolean): string {
  return safe ? `"${s}"` : JSON.stringify(s);
}

/** The first of the candidate's mimes the imp accepts (any, when the imp lists none). */
function videoMime(candidate: readonly string[], allowed: readonly string[]): string {
  for (let i = 0; i < candidate.length; i++) {
    if (allowed.length === 0 || allowed.includes(candidate[i])) return candidate[i];
  }
  return candidate[0] ?? 'video/mp4';
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
