/**
 * A periodic job of a worker (the cluster metrics snapshot, the bid log's backlog reading) that
 * starts at a random point of its period rather than at start-up. Jobs whose timers all start
 * when the app boots fire in the same few milliseconds every period, on every worker started
 * together: under load a worker's trace showed the log flush tick, the cluster metrics snapshot,
 * bid shading's sync and the compressed frames' pushes within ~80 ms of each other every 5-10 s,
 * each holding the event loop for 2-5 ms, so that the bid requests read then waited for several
 * of them. Each job starting at its own random phase keeps them apart (and the workers' from each
 * other's); the period is unchanged, so a job never runs later than it would have.
 */
export interface Periodic {
  stop(): void;
}

/** Runs `fn` every `periodMs`, the first time after a random part of the period (`random()` × periodMs). Timers are unref'd. */
export function staggeredInterval(fn: () => void, periodMs: number, random: () => number = Math.random): Periodic {
  let interval: NodeJS.Timeout | null = null;
  let first: NodeJS.Timeout | null = setTimeout(
    () => {
      first = null;
      interval = setInterval(fn, periodMs);
      interval.unref();
      fn();
    },
    Math.floor(Math.min(Math.max(random(), 0), 1) * periodMs),
  );
  first.unref();
  return {
    stop(): void {
      if (first !== null) clearTimeout(first);
      if (interval !== null) clearInterval(interval);
      first = null;
      interval = null;
    },
  };
}
