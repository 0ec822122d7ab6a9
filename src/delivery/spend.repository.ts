import { Injectable } from '@nestjs/common';
import { RedisService } from '../redis/redis.service';
import { DeliveryRedis } from './delivery-redis';
import { paceKey, WORKERS_KEY } from './keys';

/** A budget's tail as TAIL read it (delivery-redis.ts): spend in micro-USD, the live workers that published, the others' windows. */
export interface TailView {
  total: number;
  daily: number;
  fresh: number;
  others: number;
  owner: boolean;
}

/**
 * The store of spend and leases (src/delivery/keys.ts names its keys): billing markers and spend
 * totals, the live workers' heartbeats, the budgets' tails, the workers' pacing shares and the
 * campaigns' hourly traffic. SpendService is its only user and does no I/O besides; its unit tests
 * give it an in-memory one (test/support/fake-stores.ts), the others run on Redis (RedisSpendRepository).
 */
export abstract class SpendRepository {
  /** Whether the store answers now. */
  abstract isReady(): boolean;
  /** Calls `listener` each time the store becomes ready (again). */
  abstract onReady(listener: () => void): void;
  /** Counts a bill once: 1 counted (its micro-USD added to the total and daily spend), 0 counted before. */
  abstract bill(keys: { marker: string; total: string; daily: string }, micros: number, markerTtlS: number, dailyTtlS: number): Promise<number>;
  /** This worker's heartbeat in the live set; the number of live members (heartbeats within `windowMs`). */
  abstract heartbeat(member: string, windowMs: number, ttlMs: number): Promise<number>;
  /** Takes this worker out of the live set. */
  abstract leave(member: string): Promise<void>;
  /** A budget's tail: publishes this worker's window of unbilled bids and reads the spend and every other live worker's window. */
  abstract tail(keys: { tail: string; total: string; daily: string }, member: string, windowMicros: number, staleMs: number, ttlMs: number): Promise<TailView>;
  /** The values of many string keys (null: no such key); `undefined` for a key that could not be read. Rejects when none could. */
  abstract readMany(keys: readonly string[], slots: readonly number[]): Promise<Array<string | null | undefined>>;
  /** A string key's value (null when unset). */
  abstract get(key: string): Promise<string | null>;
  /** Sets `key` to `value` unless it exists. */
  abstract setIfAbsent(key: string, value: string): Promise<void>;
  /**
   * Replaces this worker's pacing shares (campaign → share text; none: removed), which expire after
   * `ttlMs`, and reads every other live worker's.
   */
  abstract sharePaces(member: string, mine: Readonly<Record<string, string>>, ttlMs: number): Promise<Array<Record<string, string>>>;
  /** Adds counts to hours of a traffic hash (`hours`: [hour, count] pairs) and sets its time to live; rejects when a write was refused. */
  abstract addTraffic(key: string, hours: ReadonlyArray<readonly [number, number]>, ttlS: number): Promise<void>;
  /** Traffic hashes (null for one that could not be read). */
  abstract readTraffic(keys: readonly string[]): Promise<Array<Record<string, string> | null>>;
}

/** The spend store on the worker's Redis: delivery's scripts (DeliveryRedis) and plain commands. */
@Injectable()
export class RedisSpendRepository extends SpendRepository {
  constructor(
    private readonly redis: RedisService,
    private readonly db: DeliveryRedis,
  ) {
    super();
  }

  isReady(): boolean {
    return this.redis.isReady();
  }

  onReady(listener: () => void): void {
    this.redis.onReady(listener);
  }

  bill(keys: { marker: string; total: string; daily: string }, micros: number, markerTtlS: number, dailyTtlS: number): Promise<number> {
    return this.db.bill(keys, micros, markerTtlS, dailyTtlS);
  }

  heartbeat(member: string, windowMs: number, ttlMs: number): Promise<number> {
    return this.db.heartbeat(WORKERS_KEY, member, windowMs, ttlMs);
  }

  async leave(member: string): Promise<void> {
    await this.db.client.zrem(WORKERS_KEY, member);
  }

  tail(keys: { tail: string; total: string; daily: string }, member: string, windowMicros: number, staleMs: number, ttlMs: number): Promise<TailView> {
    return this.db.tail(keys, member, windowMicros, staleMs, ttlMs);
  }

  readMany(keys: readonly string[], slots: readonly number[]): Promise<Array<string | null | undefined>> {
    return this.db.readMany(keys, slots);
  }

  get(key: string): Promise<string | null> {
    return this.db.client.get(key);
  }

  async setIfAbsent(key: string, value: string): Promise<void> {
    await this.db.client.set(key, value, 'NX');
  }

  async sharePaces(member: string, mine: Readonly<Record<string, string>>, ttlMs: number): Promise<Array<Record<string, string>>> {
    const c = this.db.client;
    const key = paceKey(member);
    if (Object.keys(mine).length > 0) await c.multi().del(key).hset(key, mine).pexpire(key, ttlMs).exec();
    else await c.del(key);
    const members = (await c.zrange(WORKERS_KEY, 0, -1)).filter((m) => m !== member);
    return Promise.all(members.map((m) => c.hgetall(paceKey(m))));
  }

  async addTraffic(key: string, hours: ReadonlyArray<readonly [number, number]>, ttlS: number): Promise<void> {
    const p = this.db.client.pipeline();
    for (const [h, n] of hours) p.hincrby(key, String(h), n);
    p.expire(key, ttlS);
    const replies = (await p.exec()) ?? [];
    if (replies.some(([e]) => e !== null)) throw new Error('a write was refused');
  }

  async readTraffic(keys: readonly string[]): Promise<Array<Record<string, string> | null>> {
    const p = this.db.client.pipeline();
    for (const k of keys) p.hgetall(k);
    const replies = (await p.exec()) ?? [];
    return replies.map(([e, v]) => (e === null ? (v as Record<string, string>) : null));
  }
}
