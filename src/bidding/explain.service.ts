import { Injectable } from '@nestjs/common';
import { CurrencyService } from '../currency/currency.service';
import type { PrivacyReason } from '../privacy/policy';
import { BidAuction, type ImpExplained } from './auction';
import { RequestPreparer } from './prepare';

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

/**
 * `/debug/explain`: the bid path's answer to a body and why, without its effects (no log record, no
 * bid built: shading learns nothing; the auction's effects dropped: no budget taken, no pacing
 * count or counter; no pacing draw). The bid path's preparation, as a bid from the open endpoint
 * is, and its auction (BidAuction.explain).
 */
@Injectable()
export class ExplainService {
  constructor(
    private readonly requests: RequestPreparer,
    private readonly auction: BidAuction,
    private readonly currency: CurrencyService,
  ) {}

  /** Throws InvalidRequestError or PrepareError for what the bid path answers 400 (or, for a reader bug, 204 internal_error). */
  explain(raw: Buffer): Explained {
    const { req, privacy } = this.requests.prepare(raw, 0, 0, false);
    if (req === null) throw new Error('unreachable: a request that did not wait is never shed');
    const imps: ImpExplained[] = [];
    // The effects (what a bid would have changed) are dropped.
    const { answer } = this.auction.explain(req, privacy.userData, imps);
    return {
      id: req.id,
      cur: this.currency.current().chooseBidCurrency(req.cur),
      privacy: privacy.reason,
      status: answer.status === 200 ? 200 : 204,
      reason: answer.reason,
      imps,
    };
  }
}
