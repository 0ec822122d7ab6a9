import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { CurrencyService } from '../currency/currency.service';
import { Clock } from '../delivery/clock';
import { GateEffects, PacingGate } from '../delivery/pacing.gate';
import { ShadingService } from '../delivery/shading.service';
import { SpendService } from '../delivery/spend.service';
import { onTick, type CurrencyRates } from '../currency/rates';
import type { BidRequest, Imp } from '../openrtb/types';
import { Auction, CampaignStore, type Explanation } from '../targeting/campaign-store';
import type { FieldBytes } from '../bidlog/json-bytes';
import type { Match, NoBidReason } from '../targeting/types';
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
 * What one auction changes, as a value: the pacing gate's checks (GateEffects: the traffic curves'
 * counts, blocked, throttled and capped counts), the budget its bids commit, and their prices (the
 * bid price metric). The bid path applies it (BiddingService); `/debug/explain` and the warm-up
 * drop it, and so change nothing. One object per auction, reset per request.
 */
export class AuctionEffects extends GateEffects {
  /** The prices of the bids made (the bid currency), `priceCount` of them this request's. */
  readonly prices: number[] = [];
  priceCount = 0;

  override reset(draws: boolean, source: number): void {
    super.reset(draws, source);
    this.priceCount = 0;
  }
}

/**
 * An auction's answer and what it changes: the auction's own object, its fields replaced at each
 * call (a new object per call measured ~30 B more JS heap per request of the sample mix), so read
 * it before the auction's next call.
 */
export interface AuctionOutcome {
  readonly answer: BidAnswer;
  readonly effects: AuctionEffects;
}

/**
 * The auction of one prepared request (src/bidding/prepare.ts), imp by imp: the currency, the
 * winning candidate of each imp (src/targeting/select.ts, asking the pacing gate about it), its
 * price (first price: shaded), its bid's JSON (response-json.ts) within the answer's size budget,
 * and the budget it commits. Synchronous and free of I/O, and it changes no state of the pacing
 * gate, spend, caps or metrics: what it would change comes back with the answer (AuctionEffects),
 * for the caller to apply or drop. One per worker, serving the bid path (`hold`), the warm-up
 * (`rehearse`) and `/debug/explain` (`explain`) one call after the other.
 *
 * A bid's commit is pending until the effects are applied; the gate's budget check takes this
 * request's pending commits off the lease (SpendEffects), so a later imp sees an earlier imp's bid
 * as if it were committed at once.
 *
 * Two things are not effects to drop, so the bid path's auction differs from the others there: the
 * pacing draw is randomness (the bid path draws; explain and the warm-up judge an even campaign as
 * entering the request, drawing nothing: the simulator's seeded draws stay as they were), and a
 * first-price bid's shaded price teaches ShadingService (the warm-up bids at the value).
 */
@Injectable()
export class BidAuction {
  private readonly selector: Auction;
  private readonly writer: BidWriter;
  private readonly answerMaxBytes: number;
  private readonly effects = new AuctionEffects();
  private readonly outcome: { answer: BidAnswer; readonly effects: AuctionEffects } = { answer: { status: 204, bytes: null, reason: null }, effects: this.effects };

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly store: CampaignStore,
    gate: PacingGate,
    private readonly spend: SpendService,
    codec: PayloadCodec,
    private readonly currency: CurrencyService,
    private readonly shading: ShadingService,
    private readonly clock: Clock,
  ) {
    this.selector = new Auction(gate.into(this.effects));
    this.writer = new BidWriter(config.trackingBaseUrl, config.dsaDomain, codec);
    this.answerMaxBytes = config.answerMaxBytes;
  }

  /**
   * The bid path's auction: every imp, at most one bid per imp, pacing draws taken and first-price
   * bids shaded. `userData`: whether the request allows user-level data (else user-targeted
   * campaigns do not bid). Prices and floors use the rates in use now (CurrencyService), one table
   * for the whole request.
   */
  hold(req: BidRequest, userData: boolean): AuctionOutcome {
    return this.run(req, userData, true, null);
  }

  /** The warm-up's (warm-up.ts): the bid path's auction without a draw, its bids at their value (no shading). */
  rehearse(req: BidRequest, userData: boolean): AuctionOutcome {
    return this.run(req, userData, false, null);
  }

  /**
   * `/debug/explain`'s: every imp's verdicts collected in `explained`, without a draw, and no bid
   * priced or built: the answer has the status and reason, and no body.
   */
  explain(req: BidRequest, userData: boolean, explained: ImpExplained[]): AuctionOutcome {
    return this.run(req, userData, false, explained);
  }

  private run(req: BidRequest, userData: boolean, live: boolean, explained: ImpExplained[] | null): AuctionOutcome {
    const fx = this.effects;
    fx.reset(live, req.source);
    const rates = this.currency.current();
    const cur = rates.chooseBidCurrency(req.cur);
    if (cur === null) {
      if (explained !== null) for (const imp of req.imps) explained.push({ impid: imp.id, reason: 'currency', candidates: [] });
      return this.answered({ status: 204, bytes: null, reason: 'currency' });
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
      if (explained !== null) {
        // Pending, as the bid path's commit: a later imp's verdicts see it.
        if (!req.test) fx.commit(m.candidate);
        continue;
      }
      if (room < 0) room = this.answerMaxBytes - writer.begin(req.id, cur);
      // First price: the shaded price, on the 4-decimal grid as every bid price (the value already is); the value otherwise.
      const price = req.at === 1 && live ? this.shaded(req, imp, m, cur, rates, now) : m.price;
      const size = writer.bid(req, imp, m, cur, now, price, this.shading.noticeParam(req, m));
      if (size > room) {
        writer.drop();
        dropped++;
        continue;
      }
      room -= size;
      bids++;
      // A test request (`test` = 1) reserves nothing.
      if (!req.test) fx.commit(m.candidate);
      fx.prices[fx.priceCount++] = price;
    }
    if (bids === 0) return this.answered({ status: 204, bytes: null, reason: dropped > 0 ? ANSWER_SIZE : (reason ?? 'no_candidates'), dropped: dropped > 0 ? dropped : undefined });
    if (explained !== null) return this.answered({ status: 200, bytes: null, reason: null });
    return this.answered({ status: 200, bytes: writer.response(), reason: null, dropped: dropped > 0 ? dropped : undefined, bids: writer.records(), cur });
  }

  private answered(answer: BidAnswer): AuctionOutcome {
    this.outcome.answer = answer;
    return this.outcome;
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
