import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { probeWritableDir } from '../config/dirs';
import { describeTarget } from '../redis/redis.options';
import { RedisService } from '../redis/redis.service';
import type { HealthProblem } from './health-problem';
import { Health } from './health.service';
import { RedisDurability } from './redis-durability';

/** How often the spill directory is tried (a write and a delete of a small file, off the bid path). */
export const SPILL_PROBE_EVERY_MS = 10_000;

/**
 * The checks of what every bid needs, each making the worker not ready:
 * - Redis usable: else no bid is logged, no budget read (a REDIS_MODE=cluster pointing at a server
 *   that is not a cluster never becomes usable, and says why);
 * - LOG_SPILL_DIR writable, tried every SPILL_PROBE_EVERY_MS (a directory created one level at a
 *   time: a recursive mkdir under /proc never returns); a probe still running when the next is due
 *   is a hung mount. Not a timer race: a busy event loop would make a healthy disk look hung.
 *   Else records that cannot reach Redis, and those queued at a stop, are dropped.
 * And Redis's persistence (redis-durability.ts): production refuses to start on a Redis that loses
 * spend and billing markers. The texts name the setting to look at and never carry a password
 * (REDIS_URL is shown redacted).
 */
@Injectable()
export class WorkerChecks implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('Health');
  private spillProblem: string | null = null;
  private probeTimer: NodeJS.Timeout | null = null;
  private probing = false;

  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly redis: RedisService,
    private readonly health: Health,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { config, redis } = this;
    this.health.register({ name: 'redis', problem: () => redisProblem(config, redis) });
    const durability = new RedisDurability(config, redis, this.logger);
    this.health.register({ name: 'redis durability', problem: () => durability.problem() });
    this.health.register({ name: 'spill directory', problem: () => (this.spillProblem === null ? null : { level: 'not_ready', text: this.spillProblem }) });
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
