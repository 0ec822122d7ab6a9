/** The UTC day of an epoch-ms time as yyyymmdd: the unit of daily budgets and frequency caps. */
export function utcDay(ms: number): string {
  const start = ms - (((ms % 86_400_000) + 86_400_000) % 86_400_000);
  return new Date(start).toISOString().slice(0, 10).replace(/-/g, '');
}
