import { Injectable } from '@nestjs/common';
import type { RefusalCode } from './notice';

const BILL_REFUSALS: readonly RefusalCode[] = ['payload_bad_signature', 'payload_unknown_key', 'expired', 'future', 'price_invalid', 'price_currency', 'price_above_bid'];

/** Notice and tracker counts by type and outcome, read by the metrics at scrape time. */
@Injectable()
export class NoticeStats {
  /** `${event}\u0000${outcome}` → count; a handful of keys. */
  readonly counts = new Map<string, number>();

  count(event: string, outcome: string): void {
    const k = `${event}\u0000${outcome}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }

  /**
   * `${event}\u0000${reason}` → notices refused (4xx), by reason code (RefusalCode); a handful of
   * keys. A bill's are there from the start, at 0, so that an alert on their increase sees the first one.
   */
  readonly refusals = new Map<string, number>(BILL_REFUSALS.map((r) => [`bill\u0000${r}`, 0]));

  refused(event: string, reason: string): void {
    const k = `${event}\u0000${reason}`;
    this.refusals.set(k, (this.refusals.get(k) ?? 0) + 1);
  }

  get(event: string, outcome: string): number {
    return this.counts.get(`${event}\u0000${outcome}`) ?? 0;
  }
}
