import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown, Optional } from '@nestjs/common';
import { Clock } from '../delivery/clock';
import { Health } from '../health/health.service';
import { RedisService } from '../redis/redis.service';

/** How often a worker reads Redis's clock. */
export const CLOCK_CHECK_MS = 10_000;
/** A reading whose round trip took longer says too little about the offset: skipped. */
const MAX_ROUND_TRIP_MS = 200;
/**
 * The skew between this host's clock and Redis's that a worker reports (`degraded` in readiness,
 * alert BidderClockSkew): NTP keeps hosts within milliseconds, so a second is a host without it.
 */
export const CLOCK_SKEW_WARN_MS = 1_000;

/**
 * This worker's clock against Redis's (the clock budget heartbeats already use): on every connect
 * and every CLOCK_CHECK_MS, `TIME` on Redis, the offset taken at the middle of the round trip and
 * set on the Clock, so that bid timestamps, notice ages, budget days and caps of every host follow
 * one clock. A notice is then refused as "from the future" only when its bid's time is ahead of
 * Redis's clock by more than the notices' stated skew (src/tracking/notice.ts), whatever this host's
 * clock says. An offset past CLOCK_SKEW_WARN_MS makes the worker `degraded` (still 200) and is
 * exported as `bidder_clock_offset_seconds`: fix the host's time (NTP).
 */
@Injectable()
export class RedisClock implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Clock');
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  /** Whether an offset was measured since start. */
  measured = false;
  readonly stats = { checks: 0, errors: 0 };

  constructor(
    private readonly clock: Clock,
    private readonly redis: RedisService,
    // The union type emits no usable metadata: the token is named.
    @Optional() @Inject(Health) private readonly health: Health | null = null,
  ) {}

  onApplicationBootstrap(): void {
    this.health?.register({ name: 'clock', problem: () => this.problem() });
    this.redis.onReady(() => void this.check());
    void this.check();
    this.timer = setInterval(() => void this.check(), CLOCK_CHECK_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Redis's clock minus this host's, ms (0 until measured). */
  offsetMs(): number {
    return this.clock.offsetMs;
  }

  /** One reading of Redis's clock; sets the Clock's offset. */
  async check(): Promise<void> {
    if (this.checking || !this.redis.isReady()) return;
    this.checking = true;
    try {
      const sent = Date.now();
      const t0 = performance.now();
      const [s, us] = await this.redis.connection().time();
      const trip = performance.now() - t0;
      if (trip > MAX_ROUND_TRIP_MS) return;
      const redisMs = Number(s) * 1000 + Number(us) / 1000;
      const offset = Math.round(redisMs - (sent + trip / 2));
      const was = this.clock.offsetMs;
      this.clock.offsetMs = offset;
      this.measured = true;
      this.stats.checks++;
      if (Math.abs(offset) > CLOCK_SKEW_WARN_MS && (Math.abs(was) <= CLOCK_SKEW_WARN_MS || this.stats.checks === 1)) {
        this.logger.warn(`this host's clock is ${describe(offset)} Redis's: bids, notices, budgets and caps follow Redis's clock; fix the host's time (NTP)`);
      }
    } catch (e) {
      this.stats.errors++;
      if (this.stats.errors % 100 === 1) this.logger.warn(`Redis's clock not read: ${(e as Error).message}`);
    } finally {
      this.checking = false;
    }
  }

  private problem(): { level: 'degraded'; text: string } | null {
    const offset = this.clock.offsetMs;
    if (Math.abs(offset) <= CLOCK_SKEW_WARN_MS) return null;
    return { level: 'degraded', text: `this host's clock is ${describe(offset)} Redis's (more than ${CLOCK_SKEW_WARN_MS / 1000} s): the worker follows Redis's clock; fix the host's time (NTP)` };
  }
}

function describe(offsetMs: number): string {
  const s = Math.abs(offsetMs) / 1000;
  return `${s >= 10 ? Math.round(s) : s.toFixed(1)} s ${offsetMs > 0 ? 'behind' : 'ahead of'}`;
}
