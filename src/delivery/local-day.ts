/**
 * A campaign's day in its time zone: the unit of its daily budget and of its pacing curve. Days are
 * 23 or 25 hours long where the zone changes its offset; `start` and `end` are the instants of the
 * local midnights. UTC is computed directly; other zones through Intl, once per zone and day (kept
 * until the day ends), so asking on the refresh path is a lookup.
 */
import { utcDay } from './utc-day';

export interface LocalDay {
  /** yyyymmdd in the zone: the daily spend key's suffix. */
  readonly day: string;
  /** Epoch ms of the local midnight that starts the day. */
  readonly start: number;
  /** Epoch ms of the next local midnight. */
  readonly end: number;
}

const DAY_MS = 86_400_000;
const formats = new Map<string, Intl.DateTimeFormat>();

function format(tz: string): Intl.DateTimeFormat {
  let f = formats.get(tz);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    formats.set(tz, f);
  }
  return f;
}

/** The zone's wall clock at `ms`, read as if it were UTC (epoch ms), and its date parts. */
function wall(ms: number, tz: string): { asUtc: number; y: number; m: number; d: number } {
  const parts = format(tz).formatToParts(ms);
  let y = 0, m = 0, d = 0, h = 0, mi = 0, s = 0;
  for (const p of parts) {
    if (p.type === 'year') y = Number(p.value);
    else if (p.type === 'month') m = Number(p.value);
    else if (p.type === 'day') d = Number(p.value);
    else if (p.type === 'hour') h = Number(p.value);
    else if (p.type === 'minute') mi = Number(p.value);
    else if (p.type === 'second') s = Number(p.value);
  }
  return { asUtc: Date.UTC(y, m - 1, d, h, mi, s) + (((ms % 1000) + 1000) % 1000), y, m, d };
}

/** The instant the zone's wall clock shows midnight starting date (y, m, d). */
function midnight(y: number, m: number, d: number, tz: string): number {
  const local = Date.UTC(y, m - 1, d);
  // Offset at a first guess, then at the corrected instant (a change of offset near midnight).
  let t = local - (wall(local, tz).asUtc - local);
  t = local - (wall(t, tz).asUtc - t);
  return t;
}

/** The day of `ms` in zone `tz` (an IANA name the loader checked). */
export function localDay(ms: number, tz: string): LocalDay {
  if (tz === 'UTC') {
    const start = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
    return { day: utcDay(ms), start, end: start + DAY_MS };
  }
  const w = wall(ms, tz);
  const start = midnight(w.y, w.m, w.d, tz);
  const next = new Date(Date.UTC(w.y, w.m - 1, w.d + 1));
  const end = midnight(next.getUTCFullYear(), next.getUTCMonth() + 1, next.getUTCDate(), tz);
  return { day: `${w.y}${String(w.m).padStart(2, '0')}${String(w.d).padStart(2, '0')}`, start, end };
}

/** localDay with the current day of each zone kept: a lookup until the day ends. */
export class LocalDays {
  private readonly days = new Map<string, LocalDay>();

  of(ms: number, tz: string): LocalDay {
    const d = this.days.get(tz);
    if (d !== undefined && ms >= d.start && ms < d.end) return d;
    const fresh = localDay(ms, tz);
    this.days.set(tz, fresh);
    return fresh;
  }
}
