import { Injectable } from '@nestjs/common';

/** Notice and tracker counts by type and outcome, read by the metrics at scrape time. */
@Injectable()
export class NoticeStats {
  /** `${event}\u0000${outcome}` → count; a handful of keys. */
  readonly counts = new Map<string, number>();

  count(event: string, outcome: string): void {
    const k = `${event}\u0000${outcome}`;
    this.counts.set(k, (this.counts.get(k) ?? 0) + 1);
  }

  get(event: string, outcome: string): number {
    return this.counts.get(`${event}\u0000${outcome}`) ?? 0;
  }
}
