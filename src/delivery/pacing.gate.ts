import { Injectable } from '@nestjs/common';
import type { BidRequest } from '../openrtb/types';
import type { Candidate, CandidateGate } from '../targeting/types';
import { CapsService } from './caps.service';
import { SpendService } from './spend.service';

/** The auction's last check on a would-be winner: budget lease, then the user's frequency cap. Local state only. */
@Injectable()
export class PacingGate implements CandidateGate {
  constructor(
    private readonly spend: SpendService,
    private readonly caps: CapsService,
  ) {}

  check(c: Candidate, req: BidRequest): 'budget' | 'frequency_cap' | null {
    // Budget lease (and the source's share of it), then the pacing draw (an even campaign sits out a share of requests): all "budget".
    if (!this.spend.allows(c, req.source)) return 'budget';
    if (!this.caps.allows(req.userKey, c)) return 'frequency_cap';
    return null;
  }
}
