import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import { CONFIG, type Config } from '../config/config';
import { probeWritableDir } from '../config/dirs';
import { describeTarget } from '../redis/redis.options';
import { RedisService } from '../redis/redis.service';
import type { HealthProblem } from './health-problem';
import { RedisDurability } from './redis-durability';

/** What a module reports about itself: nothing when fine, else how bad and why (health-problem.ts). */
export type { HealthProblem } from './health-problem';

export interface HealthCheck {
  readonly name: string;
  /** Called on every readiness probe and metrics scrape: cheap, no I/O. */
  problem(): HealthProblem | null;
}

export interface HealthState {
  readonly status: 'ready' | 'degraded' | 'not ready';
  /** What makes it not ready (503). */
  readonly problems: string[];
  /** What degrades it (still 200). */
  readonly warnings: string[];
}

/** How often the spill directory is tried (a write and a delete of a small file, off the bid path). */
export const SPILL_PROBE_EVERY_MS = 10_000;

/**
 * The worker's health: every module registers its checks here; `/health/ready` and `bidder_ready`
 * read them. Besides, in the bidder (where RedisService exists), the checks of what every bid
 * needs, each making the worker not ready (issue 23, finding 7; delivery registers its own, the
 * budgets' age, in src/delivery/delivery.module.ts):
 * - Redis usable: else no bid is logged, no budget read (a REDIS_MODE=cluster pointing at a server
 *   that is not a cluster never becomes usable, and says why);
 * - LOG_SPILL_DIR writable, tried every SPILL_PROBE_EVERY_MS (a directory created one level at a
 *   time: a recursive mkdir under /proc never returns); a probe still running when the next is due
 *   is a hung mount. Not a timer race: a busy event loop would make a healthy disk look hung.
 *   Else records that cannot reach Redis, and those queued at a stop, are dropped.
 * The texts name the setting to look at and never carry a password (REDIS_URL is shown redacted).
 */
@Injectable()
export class Health implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly checks: HealthCheck[] = [];
  private readonly logger = new Logger('Health');
  private spillProblem: string | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(private readonly moduleRef: ModuleRef) {}

  register(check: HealthCheck): void {
    this.checks.push(check);
  }

  state(): HealthState {
    const problems: string[] = [];
    const warnings: string[] = [];
    for (const c of this.checks) {
      const p = c.problem();
      if (p === null) continue;
      (p.level === 'not_ready' ? problems : warnings).push(p.text);
    }
    return { status: problems.length > 0 ? 'not ready' : warnings.length > 0 ? 'degraded' : 'ready', problems, warnings };
  }

  async onApplicationBootstrap(): Promise<void> {
    const config = this.find<Config>(CONFIG);
    const redis = this.find(RedisService);
    if (config === null || redis === null) return;
    this.register({ name: 'redis', problem: () => redisProblem(config, redis) });
    const durability = new RedisDurability(config, redis, this.logger);
    this.register({ name: 'redis durability', problem: () => durability.problem() });
    this.register({ name: 'spill directory', problem: () => (this.spillProblem === null ? null : { level: 'not_ready', text: this.spillProblem }) });
    void this.probeSpill(config.logSpillDir);
    this.probeTimer = setInterval(() => void this.probeSpill(config.logSpillDir), SPILL_PROBE_EVERY_MS);
    this.probeTimer.unref();
    // Production refuses a Redis that loses spend and billing markers (a ConfigError: exit 2).
    await durability.atStart();
  }

  onApplicationShutdown(): void {
    if (this.probeTimer !== null) clearInterval(this.probeTimer);
    this.probeTimer = null;
  }

  private find<T>(token: symbol | (abstract new (...args: never[]) => T)): T | null {
    try {
      return this.moduleRef.get<T>(token, { strict: false });
    } catch {
      return null; // not in this application (the shipper, a test module)
    }
  }

  /** Creates the spill directory if need be, writes and deletes a small file. */
  private async probeSpill(dir: string): Promise<void> {
    if (this.probing) {
      // The last probe, SPILL_PROBE_EVERY_MS ago, has not returned: that is the answer.
      this.spillProblem = `LOG_SPILL_DIR ${dir} is not writable (not answering for ${SPILL_PROBE_EVERY_MS / 1000} s): records that cannot reach Redis, and those queued at a stop, would be lost`;
      return;
    }
    this.probing = true;
    try {
      // One probe at a time: a hung one keeps its libuv thread, and a new one every period would take them all.
      await probeWritableDir(dir, 0, () => (this.probing = false));
      if (this.spillProblem !== null) this.logger.log(`LOG_SPILL_DIR ${dir} is writable again`);
      this.spillProblem = null;
    } catch (e) {
      const was = this.spillProblem;
      this.spillProblem = `LOG_SPILL_DIR ${dir} is not writable (${(e as Error).message}): records that cannot reach Redis, and those queued at a stop, would be lost`;
      if (was === null) this.logger.error(this.spillProblem);
    }
  }
}

function redisProblem(config: Config, redis: RedisService): HealthProblem | null {
  if (redis.isReady() && redis.isLogReady()) return null;
  const where = describeTarget(config.redis);
  const why = redis.lastError();
  if (config.redis.mode === 'cluster' && why !== null && /cluster support disabled/i.test(why)) {
    return { level: 'not_ready', text: `REDIS_MODE=cluster (or REDIS_CLUSTER_NODES), but ${where} is not a Redis Cluster (${why}): no bid can be logged, no budget read; set REDIS_MODE=single or point at the cluster` };
  }
  return { level: 'not_ready', text: `Redis at ${where} not usable${why !== null ? ` (${why})` : ''}: no bid can be logged to Redis, no budget read` };
}
