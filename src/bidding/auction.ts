import type { Config } from '../config/config';
import { CurrencyService } from '../currency/currency.service';
import { Clock } from '../delivery/clock';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { MetricsService } from '../metrics/metrics.service';
import { onTick, type CurrencyRates } from '../currency/rates';
import type { BidRequest, Imp } from '../openrtb/types';
import { Auction, CampaignStore, type Explanation } from '../targeting/campaign-store';
import type { FieldBytes } from '../bidlog/json-bytes';
import type { CandidateGate, Match, NoBidReason } from '../targeting/types';
import { PayloadCodec } from '../tracking/payload';
import { BidWriter } from './response-json';

/** What the bid route sends back. */
export interface BidAnswer {
  status: 200 | 204 | 400 | 413;
  /**
   * The body as UTF-8 bytes, for the socket and the log: the bid response on a 200, the error on a
   * 400 or 413; null for 204 (and for explain, which builds no bid).
   */
  bytes: Buffer | null;
  /** The no-bid or error reason (null on a bid). */
  reason: string | null;
  /** Bids dropped to keep the answer within ANSWER_MAX_BYTES (undefined: none). */
  dropped?: number;
  /**
   * On a bid: the compact bids of the response record (src/bidlog/records.ts, CompactBid), joined by
   * commas, in the auction's reused buffer: valid until its next run.
   */
  bids?: FieldBytes;
  /** On a bid: the bid currency. */
  cur?: string;
}

/** One imp as `/debug/explain` reports it: the auction's reason (null: it bids) and every candidate's verdict. */
export interface ImpExplained {
  impid: string;
  reason: NoBidReason | null;
  candidates: Explanation[];
}

/** The no-bid reason when not even the first bid fits in ANSWER_MAX_BYTES. */
export const ANSWER_SIZE = 'answer_size';

/**
 * The auction of one prepared request (src/bidding/prepare.ts), imp by imp: the currency, the
 * winning candidate of each imp (src/targeting/select.ts, asking the pacing gate about it), its
 * price (first price: shaded), its bid's JSON (response-json.ts) within the answer's size budget,
 * and the budget it commits. Synchronous and free of I/O.
 */
export class BidAuction {
  private readonly selector: Auction;
  private readonly writer: BidWriter;
  private readonly answerMaxBytes: number;

  constructor(
    config: Config,
    private readonly store: CampaignStore,
    private readonly metrics: MetricsService,
    gate: CandidateGate | null,
    private readonly spend: SpendService,
    codec: PayloadCodec,
    private readonly currency: CurrencyService,
    private readonly shading: ShadingService,
    private readonly clock: Clock,
    /**
     * The warm-up's auction (warm-up.ts): bids are written as usual, at their value, and nothing is
     * learnt, committed or counted (no shading, no spend, no price metric).
     */
    private readonly dry = false,
  ) {
    this.selector = new Auction(gate);
    this.writer = new BidWriter(config.trackingBaseUrl, config.dsaDomain, codec);
    this.answerMaxBytes = config.answerMaxBytes;
  }

  /**
   * Runs the auction for every imp; at most one bid per imp. `userData`: whether the request allows
   * user-level data (else user-targeted campaigns do not bid). Prices and floors use the rates in
   * use now (CurrencyService), one table for the whole request. With `explained` (explain), every
   * imp's verdicts are collected there and no bid is priced, built or committed: the answer has the
   * status and reason, and no body.
   */
  run(req: BidRequest, userData: boolean, explained: ImpExplained[] | null = null): BidAnswer {
    const rates = this.currency.current();
    const cur = rates.chooseBidCurrency(req.cur);
    if (cur === null) {
      if (explained !== null) for (const imp of req.imps) explained.push({ impid: imp.id, reason: 'currency', candidates: [] });
      return { status: 204, bytes: null, reason: 'currency' };
    }
    const index = this.store.current();
    const now = this.clock.now();
    const writer = this.writer;
    let bids = 0;
    let reason: NoBidReason | null = null;
    // The answer's size budget (ANSWER_MAX_BYTES), in exact bytes: bids are kept in imp order while
    // they fit; one that does not is taken back (a later, smaller one may still fit).
    let room = -1;
    let dropped = 0;
    for (let i = 0; i < req.imps.length; i++) {
      const imp = req.imps[i];
      const m = this.selector.select(index, imp, req, cur, rates, userData);
      if (explained !== null) {
        explained.push({ impid: imp.id, reason: typeof m === 'string' ? m : null, candidates: this.selector.explain(index, imp, req, cur, rates, userData).candidates });
        if (typeof m !== 'string') bids++;
      }
      if (typeof m === 'string') {
        if (reason === null) reason = m;
        continue;
      }
      if (explained !== null) continue;
      if (room < 0) room = this.answerMaxBytes - writer.begin(req.id, cur);
      // First price: the shaded price, on the 4-decimal grid as every bid price (the value already is); the value otherwise.
      const price = req.at === 1 && !this.dry ? this.shaded(req, imp, m, cur, rates, now) : m.price;
      const size = writer.bid(req, imp, m, cur, now, price, this.shading.noticeParam(req, m));
      if (size > room) {
        writer.drop();
        dropped++;
        continue;
      }
      room -= size;
      bids++;
      if (this.dry) continue;
      if (!req.test) this.spend.commit(m.candidate, req.source);
      this.metrics.bidPrice(price);
    }
    if (bids === 0) return { status: 204, bytes: null, reason: dropped > 0 ? ANSWER_SIZE : (reason ?? 'no_candidates'), dropped: dropped > 0 ? dropped : undefined };
    if (explained !== null) return { status: 200, bytes: null, reason: null };
    return { status: 200, bytes: writer.response(), reason: null, dropped: dropped > 0 ? dropped : undefined, bids: writer.records(), cur };
  }

  /** The shaded first-price bid (src/delivery/shading.service.ts) on the 4-decimal grid, never below the imp's floor. */
  private shaded(req: BidRequest, imp: Imp, m: Match, cur: string, rates: CurrencyRates, now: number): number {
    const price = this.shading.price(req, imp, m, cur, rates, now, this.spend.pressure(m.candidate));
    // The value itself (a deal, shading off, or the value is the best bid) is a 4-decimal price already.
    if (price === m.price) return price;
    const floor = imp.bidfloor > 0 ? (rates.convert(imp.bidfloor, imp.bidfloorcur, cur) ?? 0) : 0;
    return onTick(price, floor);
  }
}
