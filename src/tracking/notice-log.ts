import { Inject, Injectable } from '@nestjs/common';
import type { NoticeRecord } from '../bidlog/records';
import { CONFIG, type Config } from '../config/config';
import { OPEN_SOURCE } from '../exchanges/exchanges';
import { LogService } from '../log/log.service';
import type { Notice, NoticeError } from './notice';
import { NoticeStats } from './notice-stats';

/** What the notice routes log and count: one record per accepted notice (with `counted`), a count per outcome and per refusal. */
@Injectable()
export class NoticeLog {
  /** Source names by index (src/exchanges/exchanges.ts), for the records. */
  private readonly sourceNames: readonly string[];

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly log: LogService,
    private readonly stats: NoticeStats,
  ) {
    this.sourceNames = [OPEN_SOURCE, ...(config.exchanges ?? []).map((e) => e.name)];
  }

  /** The record of a notice, without its `counted`. */
  record(n: Notice): NoticeRecord {
    const p = n.payload;
    return {
      type: n.event,
      id: p.requestId,
      name: p.publisher,
      bid: p.bidId,
      imp: p.impId,
      crid: p.crid,
      cid: p.cid,
      price: n.price,
      bidPrice: p.price,
      cur: p.cur,
      deal: p.dealId === '' ? null : p.dealId,
      bidTs: p.ts,
      exchange: this.sourceNames[p.source ?? 0] ?? 'unknown',
      // A bid to a test request: spends nothing, counts no caps.
      test: p.test === true ? true : undefined,
    };
  }

  /** A notice refused (4xx): counted as expired or rejected, and by its reason code; not logged. */
  refused(event: string, e: NoticeError): void {
    this.stats.count(event, e.status === 410 ? 'expired' : 'rejected');
    this.stats.refused(event, e.code);
  }

  /** Logs `record` with `counted` (true the first time, false for a repeat, null when the store failed) and counts `outcome`. */
  logged(record: NoticeRecord, outcome: string, counted: boolean | null): void {
    this.stats.count(record.type, outcome);
    this.log.log({ ...record, counted });
  }
}
