import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import type { RawJson } from '../log/log-line';
import { LogService } from '../log/log.service';
import { MetricsService, type BidOutcome } from '../metrics/metrics.service';
import { InvalidRequestError, parseBidRequest } from '../openrtb/parse';
import { MType, type BidRequest, type Imp } from '../openrtb/types';
import { Auction, CampaignStore, chooseBidCurrency, staticRates } from '../targeting/campaign-store';
import type { Match, NoBidReason, Rates } from '../targeting/types';
import { PacingGate } from '../tracking/pacing.gate';
import { PayloadCodec } from '../tracking/payload';
import { SpendService } from '../tracking/spend.service';
import { BodyError, decodeBody, parseJson } from './body';
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
}

// Exchange macros (OpenRTB 2.6 §4.4), substituted by the exchange before it calls the URL.
const WIN_QS = '&price=${AUCTION_PRICE}&cur=${AUCTION_CURRENCY}';
const LOSS_QS = '&price=${AUCTION_PRICE}&loss=${AUCTION_LOSS}';

/**
 * The bid path: body → request view → auction per imp → markup → response, plus exactly one
 * `request` and one `response` log record for every request that carries an id.
 * Synchronous and free of I/O: logging is an in-memory append (log module).
 */
@Injectable()
export class BiddingService {
  private readonly codec: PayloadCodec;
  private readonly base: string;
  private readonly secureBase: string;
  /** The tracking base URLs need neither HTML nor JSON escaping (checked once; true for any usual URL). */
  private readonly baseSafe: boolean;
  private readonly rates: Rates = staticRates;
  private readonly selector: Auction;
  private readonly dsa: DsaWriter;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly store: CampaignStore,
    private readonly log: LogService,
    private readonly metrics: MetricsService,
    gate: PacingGate,
    private readonly spend: SpendService,
  ) {
    this.codec = new PayloadCodec(config.trackingSecret);
    this.base = config.trackingBaseUrl;
    // imp.secure = 1 needs https everywhere; TLS is expected to be terminated in front of the bidder.
    this.secureBase = config.trackingBaseUrl.replace(/^http:/, 'https:');
    this.baseSafe = [this.base, this.secureBase].every((b) => isJsonSafe(b) && escapeHtml(b) === b);
    this.selector = new Auction(this.rates, gate);
    this.dsa = new DsaWriter(new URL(config.trackingBaseUrl).hostname);
  }

  /** Handles one POST body. Never throws for anything a client can send. */
  bid(body: unknown, contentEncoding: string | undefined, startedAt: number): BidAnswer {
    let logged: RawJson;
    let parsed: unknown;
    try {
      const raw = decodeBody(body, contentEncoding, this.config.bodyLimitBytes);
      // For the log: a scan of the bytes (memchr) is cheaper than of the string.
      const singleLine = raw.indexOf(10) === -1 && raw.indexOf(13) === -1;
      const text = raw.toString('utf8');
      // The log copies the request's bytes as they came (no second encoding of the text), unless
      // they are not valid UTF-8: then the decoded text (with U+FFFD), so the log stays UTF-8.
      logged = isUtf8(raw) ? { key: 'req', bytes: raw, singleLine } : { key: 'req', json: text, singleLine };
      parsed = parseJson(text);
    } catch (e) {
      if (e instanceof BodyError) return this.refuse(e.status, e.reason, startedAt);
      throw e;
    }
    let req: BidRequest;
    try {
      req = parseBidRequest(parsed);
    } catch (e) {
      if (!(e instanceof InvalidRequestError)) throw e;
      const id = idOf(parsed);
      if (id !== '') {
        this.log.log({ type: 'request', id, name: '' }, logged);
        this.log.log({ type: 'response', id, name: '', status: 400, reason: e.reason });
      }
      return this.refuse(400, e.reason, startedAt);
    }
    this.log.log({ type: 'request', id: req.id, name: req.publisher }, logged);
    const answer = this.auction(req);
    if (answer.status === 200) {
      // Encoded once: the log copies these bytes and the route sends them. The response text is
      // ours: the serializer never writes a raw line break.
      answer.bytes = Buffer.from(answer.body, 'utf8');
      this.log.log({ type: 'response', id: req.id, name: req.publisher, status: 200 }, { key: 'res', bytes: answer.bytes, singleLine: true });
      this.metrics.bidRequest('bid', null, (performance.now() - startedAt) / 1000);
    } else {
      this.log.log({ type: 'response', id: req.id, name: req.publisher, status: 204, reason: answer.reason });
      this.metrics.bidRequest('nobid', answer.reason, (performance.now() - startedAt) / 1000);
    }
    return answer;
  }

  /** A request refused before bidding (HTTP-level body errors included): counted, not logged. */
  refuse(status: 400 | 413, reason: string, startedAt: number): BidAnswer {
    const outcome: BidOutcome = status === 413 ? 'too_large' : 'bad_request';
    this.metrics.bidRequest(outcome, null, (performance.now() - startedAt) / 1000);
    return { status, body: JSON.stringify({ error: reason }), reason };
  }

  /** Runs the auction for every imp; at most one bid per imp. */
  auction(req: BidRequest): BidAnswer {
    const cur = chooseBidCurrency(req.cur, this.rates);
    if (cur === null) return { status: 204, body: '', reason: 'currency' };
    const index = this.store.current();
    const now = Date.now();
    let bids: string | null = null;
    let reason: NoBidReason | null = null;
    for (let i = 0; i < req.imps.length; i++) {
      const imp = req.imps[i];
      // User-level data: not on child-directed inventory (the privacy decision refines this).
      const m = this.selector.select(index, imp, req, cur, !req.coppa);
      if (typeof m === 'string') {
        if (reason === null) reason = m;
        continue;
      }
      this.spend.commit(m.candidate);
      const bid = this.buildBid(req, imp, m, cur, now);
      bids = bids === null ? bid : `${bids},${bid}`;
      this.metrics.bidPrice(m.price);
    }
    if (bids === null) return { status: 204, body: '', reason: reason ?? 'no_candidates' };
    const body = `{"id":${JSON.stringify(req.id)},"cur":${JSON.stringify(cur)},"seatbid":[{"bid":[${bids}]}]}`;
    return { status: 200, body, reason: null };
  }

  /** One bid's JSON text (OpenRTB 2.6 §4.3.3): id, impid, price, adm, adomain, crid, cid, cat, attr, mtype, nurl, burl, lurl, w, h, dealid. */
  private buildBid(req: BidRequest, imp: Imp, m: Match, cur: string, now: number): string {
    const c = m.candidate;
    const bidId = randomUUID();
    const base = imp.secure ? this.secureBase : this.base;
    const q = this.codec.encode({
      requestId: req.id,
      bidId,
      impId: imp.id,
      crid: c.id,
      cid: c.campaignId,
      price: m.price,
      cur,
      ts: now,
      dealId: m.dealId ?? '',
      publisher: req.publisher,
      userId: req.userId,
    });
    // The payload query is base64url plus `&s=`: only `&` needs HTML escaping, and nothing JSON.
    const clickBase = `${base}/t/click?`;
    const impBase = `${base}/t/imp?`;
    const qHtml = q.replace('&', '&amp;');
    const urls: TrackingUrls = this.baseSafe
      ? { click: clickBase + q, imp: impBase + q, clickHtml: clickBase + qHtml, impHtml: impBase + qHtml }
      : trackingUrls(clickBase + q, impBase + q);
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
    let bid =
      `{"id":"${bidId}","impid":${JSON.stringify(imp.id)},"price":${JSON.stringify(m.price)},` +
      `"adm":${adm}${cj.fields},"mtype":${m.mtype},` +
      `"nurl":${quoted(`${base}/t/win?${q}${WIN_QS}`, this.baseSafe)},` +
      `"burl":${quoted(`${base}/t/bill?${q}${WIN_QS}`, this.baseSafe)},` +
      `"lurl":${quoted(`${base}/t/loss?${q}${LOSS_QS}`, this.baseSafe)}`;
    if (m.size !== null) bid += `,"w":${m.size.w},"h":${m.size.h}`;
    else if (m.mtype === MType.Video && c.video !== null) bid += `,"w":${c.video.w},"h":${c.video.h}`;
    if (m.dealId !== null) bid += `,"dealid":${JSON.stringify(m.dealId)}`;
    return `${bid}${this.dsa.fragment(m, req.dsa)}}`;
  }
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

/** The request id of a body that failed validation, for the log; '' when there is none. */
function idOf(body: unknown): string {
  if (typeof body !== 'object' || body === null) return '';
  const id = (body as { id?: unknown }).id;
  return typeof id === 'string' ? id : typeof id === 'number' ? String(id) : '';
}
