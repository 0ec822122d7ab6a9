// STUB (to be replaced by the targeting work): loads nothing, bids nothing.
import { Injectable } from '@nestjs/common';
import type { BidRequest, Imp } from '../openrtb/types';
import type { Candidate, Match, NoBidReason } from './types';

export class CandidateIndex {
  constructor(readonly candidates: readonly Candidate[]) {}
}

@Injectable()
export class CampaignStore {
  private idx = new CandidateIndex([]);
  current(): CandidateIndex {
    return this.idx;
  }
  get count(): number {
    return this.idx.candidates.length;
  }
}

export function selectForImp(_index: CandidateIndex, _imp: Imp, _req: BidRequest, _bidCur: string): Match | NoBidReason {
  return 'no_candidates';
}
