/**
 * Does the Redis keep money keys? Campaign spend and billing markers live there: without an
 * append-only file a restart loses them all (bills already counted count again, budgets are spent
 * again), and a maxmemory-policy other than noeviction drops keys when memory is full (billing
 * markers first: they have a TTL). Read with INFO (managed services that refuse CONFIG answer it),
 * from every master of a Redis Cluster.
 *
 * Production (unless REDIS_ALLOW_VOLATILE=1): refused at start when Redis answers within
 * START_WAIT_MS (a ConfigError: exit 2, not restarted by PM2), and checked again at every
 * (re)connection, a volatile Redis then making the worker not ready with the reason. Elsewhere, or
 * with the opt-out: a warning line at start in production, nothing in development and tests.
 */
import type { Logger } from '@nestjs/common';
import { Cluster } from 'ioredis';
import { type Config, ConfigError } from '../config/config';
import { describeTarget, type RedisClient } from '../redis/redis.options';
import type { RedisService } from '../redis/redis.service';
import type { HealthProblem } from './health-problem';

/** How long start-up waits for Redis to answer before it checks it (else at the first connection). */
export const START_WAIT_MS = 2_000;

/** INFO `field:value` lines as a map. */
function infoFields(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0 && !line.startsWith('#')) out.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return out;
}

/** What makes one Redis server lose money keys; empty when it keeps them. */
export async function durabilityProblems(client: RedisClient): Promise<string[]> {
  const nodes = client instanceof Cluster ? client.nodes('master') : [client];
  const out: string[] = [];
  for (const node of nodes) {
    const where = client instanceof Cluster ? `node ${node.options.host}:${node.options.port}: ` : '';
    let f: Map<string, string>;
    try {
      f = infoFields(`${await node.info('persistence')}\r\n${await node.info('memory')}`);
    } catch (e) {
      out.push(`${where}INFO refused (${(e as Error).message}): its persistence cannot be checked`);
      continue;
    }
    if (f.get('aof_enabled') !== '1') out.push(`${where}no append-only file (aof_enabled:${f.get('aof_enabled') ?? '?'}): a restart loses every spend total and billing marker`);
    const policy = f.get('maxmemory_policy') ?? '?';
    if (Number(f.get('maxmemory') ?? 0) > 0 && policy !== 'noeviction') out.push(`${where}maxmemory-policy ${policy} evicts keys (billing markers, spend) when memory is full`);
  }
  return out;
}

export class RedisDurability {
  private text: string | null = null;
  private readonly enforced: boolean;

  constructor(
    private readonly config: Config,
    private readonly redis: RedisService,
    private readonly logger: Logger,
  ) {
    this.enforced = config.nodeEnv === 'production' && !config.redisAllowVolatile;
  }

  /** At start (production only): waits for Redis (bounded), checks it, throws ConfigError when it loses money keys. */
  async atStart(): Promise<void> {
    if (this.config.nodeEnv !== 'production') return;
    if (this.enforced) this.redis.onReady(() => void this.check());
    if (!this.redis.isReady()) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, START_WAIT_MS);
        this.redis.onReady(() => {
          clearTimeout(t);
          resolve();
        });
      });
    }
    if (!this.redis.isReady()) return; // checked at its first connection
    const text = await this.check();
    if (text !== null && this.enforced) throw new ConfigError([text]);
    if (text !== null) this.logger.warn(`${text} (REDIS_ALLOW_VOLATILE=1: starting anyway)`);
  }

  /** Not ready while the Redis last checked loses money keys (production, no opt-out). */
  problem(): HealthProblem | null {
    return this.enforced && this.text !== null ? { level: 'not_ready', text: this.text } : null;
  }

  private async check(): Promise<string | null> {
    let problems: string[];
    try {
      problems = await durabilityProblems(this.redis.connection());
    } catch (e) {
      problems = [`cannot be checked (${(e as Error).message})`];
    }
    const was = this.text;
    this.text =
      problems.length === 0
        ? null
        : `REDIS_URL (${describeTarget(this.config.redis)}): ${problems.join('; ')}; set appendonly yes (appendfsync everysec) and maxmemory-policy noeviction on it (docs/operations.md, Redis), or REDIS_ALLOW_VOLATILE=1 to run on it anyway`;
    if (this.enforced && this.text !== null && this.text !== was) this.logger.error(this.text);
    return this.text;
  }
}
