import { Injectable } from '@nestjs/common';
import { utcDay } from './utc-day';

/**
 * The wall clock of bids, budgets, caps and notices, behind one injectable class so that a test can set a
 * host's clock apart. It follows Redis's clock: `offsetMs` (Redis's time minus this host's) is
 * measured by src/tracking/redis-clock.ts, so that the hosts of one Redis agree on a bid's time
 * whatever their own clocks say. `today()` is asked on the bid path: the day's text is kept until the day ends.
 */
@Injectable()
export class Clock {
  /** Redis's clock minus this host's, ms; 0 until measured. */
  offsetMs = 0;
  private day = '';
  private dayFrom = 0;
  private dayUntil = -1;

  now(): number {
    return Date.now() + this.offsetMs;
  }

  /** UTC day (yyyymmdd) of `ms`, default now; cached for the current day. */
  today(ms = this.now()): string {
    if (ms >= this.dayFrom && ms < this.dayUntil) return this.day;
    this.day = utcDay(ms);
    this.dayFrom = ms - (((ms % 86_400_000) + 86_400_000) % 86_400_000);
    this.dayUntil = this.dayFrom + 86_400_000;
    return this.day;
  }
}
