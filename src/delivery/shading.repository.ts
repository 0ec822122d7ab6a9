import { Injectable } from '@nestjs/common';
import { RedisService } from '../redis/redis.service';
import { DeliveryRedis } from './delivery-redis';
import { WORKERS_KEY } from './keys';

/** A worker's shared shading state (a hash: segment key → `<ms>:<compact counts>`). Workers of every version since read and write this one. */
export const shadingShareKey = (member: string): string => `bidder:shade:v2:${member}`;

/** One page of a worker's shared state: the cursor of the next page ('0': none) and its fields and values, alternating. */
export type SharePage = [cursor: string, fieldsAndValues: string[]];

/**
 * The store of what shading's workers share (src/delivery/shading.service.ts, `sync`): each worker's
 * counts per segment (fields of its own hash, expiring unless written again), and the live workers
 * (the budgets' heartbeat set, written by SpendRepository). ShadingService is its only user and does
 * no I/O besides; its unit tests give it an in-memory one (test/support/fake-stores.ts), the others
 * run on Redis (RedisShadingRepository).
 */
export abstract class ShadingRepository {
  /** Whether the store answers now. */
  abstract isReady(): boolean;
  /** Sets fields of this worker's shared state (none: only its time to live) and makes it expire after `ttlMs` unless written again. */
  abstract publish(member: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void>;
  /** The live workers other than `member`. */
  abstract others(member: string): Promise<string[]>;
  /** A page of about `count` fields of a worker's shared state, from `cursor` ('0': the first page). */
  abstract scan(member: string, cursor: string, count: number): Promise<SharePage>;
}

/** The shading store on the worker's Redis: HSET, PEXPIRE and HSCAN of a hash per worker, ZRANGE of the live set. */
@Injectable()
export class RedisShadingRepository extends ShadingRepository {
  constructor(
    private readonly redis: RedisService,
    private readonly db: DeliveryRedis,
  ) {
    super();
  }

  isReady(): boolean {
    return this.redis.isReady();
  }

  async publish(member: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    const key = shadingShareKey(member);
    if (Object.keys(fields).length > 0) await this.db.client.hset(key, fields);
    await this.db.client.pexpire(key, ttlMs);
  }

  async others(member: string): Promise<string[]> {
    return (await this.db.client.zrange(WORKERS_KEY, 0, -1)).filter((m) => m !== member);
  }

  scan(member: string, cursor: string, count: number): Promise<SharePage> {
    return this.db.client.hscan(shadingShareKey(member), cursor, 'COUNT', count);
  }
}
