/**
 * The traffic-shaped pacing curve (`"pacingCurve": "traffic"`): an even campaign's day follows the
 * share of its eligible requests each hour of its previous days, instead of a straight line.
 *
 * Learning: every eligible request the campaign's gate sees is counted (one increment on the bid
 * path); at each budget refresh the count joins the current hour of the campaign's local day, and
 * every PACING_TRAFFIC_SYNC_S the hours are added in Redis (`bidder:traffic:{<campaign>}:<day>`, a
 * hash of hour index → requests, summed over every worker and host). At the first refresh of a day
 * the curve is read from the previous TRAFFIC_DAYS days (only days observed every hour, with the
 * same number of hours: a campaign first seen mid-day, or a day of a clock change, teaches
 * nothing). Without such a day the curve is uniform.
 */

export const HOUR_MS = 3_600_000;
/** Previous days the curve is learned from. */
export const TRAFFIC_DAYS = 7;
/** Share of the day spread uniformly whatever the history says: no hour is ever given nothing. */
export const UNIFORM_MIX = 0.05;
/** Hours of a local day at most (25 on the day a clock goes back). */
export const MAX_HOURS = 25;

/** Hours of a local day (23, 24 or 25). */
export function hoursOf(day: { start: number; end: number }): number {
  return Math.min(MAX_HOURS, Math.max(1, Math.round((day.end - day.start) / HOUR_MS)));
}

/**
 * The cumulative curve of a day of `hours` hours from previous days' hourly counts (each a hash
 * read from Redis: hour index → count): `cum[i]` is the share of the day's traffic before hour i
 * (cum[0] = 0, cum[hours] = 1). Each usable day weighs the same; null when no day is usable.
 */
export function curveFromHistory(history: ReadonlyArray<Record<string, string> | null>, hours: number): Float64Array | null {
  const shares = new Float64Array(hours);
  let used = 0;
  for (const day of history) {
    if (day === null || Object.keys(day).length !== hours) continue;
    const counts = new Float64Array(hours);
    let total = 0;
    let complete = true;
    for (let h = 0; h < hours; h++) {
      const v = Number(day[String(h)]);
      if (!Number.isFinite(v) || v < 0) {
        complete = false;
        break;
      }
      counts[h] = v;
      total += v;
    }
    if (!complete || total <= 0) continue;
    for (let h = 0; h < hours; h++) shares[h] += counts[h] / total;
    used++;
  }
  if (used === 0) return null;
  const cum = new Float64Array(hours + 1);
  for (let h = 0; h < hours; h++) cum[h + 1] = cum[h] + (1 - UNIFORM_MIX) * (shares[h] / used) + UNIFORM_MIX / hours;
  // Rounding: the day ends at exactly 1.
  for (let h = 1; h <= hours; h++) cum[h] /= cum[hours];
  return cum;
}

/** Share of the day's traffic before `t` (a day of cum.length − 1 hours from `dayStart`), linear within each hour. */
export function curveAt(cum: Float64Array, dayStart: number, t: number): number {
  const hours = cum.length - 1;
  const x = (t - dayStart) / HOUR_MS;
  if (x <= 0) return 0;
  if (x >= hours) return 1;
  const i = Math.floor(x);
  return cum[i] + (cum[i + 1] - cum[i]) * (x - i);
}

/** The curve's slope at `t`: share of the day's traffic per ms. */
export function curveDensity(cum: Float64Array, dayStart: number, t: number): number {
  const hours = cum.length - 1;
  const i = Math.min(hours - 1, Math.max(0, Math.floor((t - dayStart) / HOUR_MS)));
  return (cum[i + 1] - cum[i]) / HOUR_MS;
}
