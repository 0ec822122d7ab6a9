import { Injectable } from '@nestjs/common';
import type { BidRequest } from '../openrtb/types';
import type { Candidate, CandidateGate } from '../targeting/types';
import { CapsService } from './caps.service';
import { SpendEffects, SpendService } from './spend.service';

/** What the pacing gate's checks of one auction change: the budget checks' (SpendEffects) and the users held back by their cap. */
export class GateEffects extends SpendEffects {
  capBlocked = 0;

  override reset(draws: boolean, source: number): void {
    super.reset(draws, source);
    this.capBlocked = 0;
  }
}

/**
 * The auction's last check on a would-be winner: budget lease, then the user's frequency cap. Local
 * state only, and it changes none: what a check counts (the traffic curve's count of eligible
 * requests, the blocked and throttled counters, a capped user) goes into the auction's effects,
 * which the bid path applies (`apply`) and `/debug/explain` and the warm-up drop. So explaining a
 * request is the same check with its effects dropped, and changes no pacing.
 */
@Injectable()
export class PacingGate {
  constructor(
    private readonly spend: SpendService,
    private readonly caps: CapsService,
  ) {}

  check(c: Candidate, req: BidRequest, fx: GateEffects): 'budget' | 'frequency_cap' | null {
    // Budget lease (and the source's share of it), then the pacing draw (an even campaign sits out a share of requests): all "budget".
    if (!this.spend.check(c, req.source, fx)) return 'budget';
    if (!this.caps.check(req.userKey, c)) {
      fx.capBlocked++;
      return 'frequency_cap';
    }
    return null;
  }

  /** Applies one auction's effects (the bid path): the budget checks' counts and commits, the capped users' count. */
  apply(fx: GateEffects): void {
    this.caps.stats.blockedBids += fx.capBlocked;
    fx.capBlocked = 0;
    this.spend.apply(fx);
  }

  /** The gate as the auction's selection asks it (src/targeting/select.ts), its effects going into `fx`: one object per auction, made once. */
  into(fx: GateEffects): CandidateGate {
    return new BoundGate(this, fx);
  }
}

/** A CandidateGate writing into one effects object. */
class BoundGate implements CandidateGate {
  constructor(
    private readonly gate: PacingGate,
    private readonly fx: GateEffects,
  ) {}

  check(c: Candidate, req: BidRequest): 'budget' | 'frequency_cap' | null {
    return this.gate.check(c, req, this.fx);
  }
}
