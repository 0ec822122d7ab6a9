import { Injectable } from '@nestjs/common';
import type { BidRequest } from '../openrtb/types';
import type { Candidate, CandidateGate } from '../targeting/types';
import { type CapCounts, CapsService } from './caps.service';
import { NO_SPEND_EFFECTS, SpendService } from './spend.service';

/**
 * The auction's last check on a would-be winner: budget lease, then the user's frequency cap. Local
 * state only. `check` is the bid path's: it applies the check's effects (the traffic curve's count
 * of eligible requests, the pacing draw, the blocked and throttled counters). `readOnly` gives the
 * same verdicts with none of them, for `/debug/explain`: explaining a request changes no pacing.
 */
@Injectable()
export class PacingGate implements CandidateGate {
  /** The checks without effects: nothing counted, no pacing draw (an even campaign is judged as entering the request). */
  readonly readOnly: CandidateGate;

  constructor(
    private readonly spend: SpendService,
    private readonly caps: CapsService,
  ) {
    const dropped: CapCounts = { blockedBids: 0 };
    this.readOnly = {
      check: (c, req) => {
        if (!spend.allows(c, req.source, NO_SPEND_EFFECTS)) return 'budget';
        if (!caps.allows(req.userKey, c, dropped)) return 'frequency_cap';
        return null;
      },
    };
  }

  check(c: Candidate, req: BidRequest): 'budget' | 'frequency_cap' | null {
    // Budget lease (and the source's share of it), then the pacing draw (an even campaign sits out a share of requests): all "budget".
    if (!this.spend.allows(c, req.source)) return 'budget';
    if (!this.caps.allows(req.userKey, c)) return 'frequency_cap';
    return null;
  }
}
