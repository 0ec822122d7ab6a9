// STUB (to be replaced by the operations work): the calls the bid path makes; keep them O(1).
import { Injectable } from '@nestjs/common';

export type BidOutcome = 'bid' | 'nobid' | 'bad_request' | 'too_large';

@Injectable()
export class MetricsService {
  /** One call per bid request: its outcome, the no-bid reason (null otherwise) and its duration in seconds. */
  bidRequest(_outcome: BidOutcome, _reason: string | null, _seconds: number): void {}
  /** One call per bid returned: its price (CPM, response currency). */
  bidPrice(_price: number): void {}
}
