import { Injectable } from '@nestjs/common';
import { Cluster } from 'ioredis';
import type Redis from 'ioredis';
import { untilUsable, type RedisClient } from '../redis/redis.options';
import { RedisService } from '../redis/redis.service';
import { defineScripts } from '../redis/scripts';
import { DELIVERY_SCRIPTS, type DeliveryCommands } from './scripts';

/**
 * Delivery's Redis: the worker's connection (RedisService) with delivery's scripts
 * (src/delivery/scripts.ts) defined on it, each behind a typed method, and the connection itself
 * for delivery's plain commands (spend, caps, shading). Commands fail fast while Redis is away.
 */
@Injectable()
export class DeliveryRedis {
  /** The connection, for plain commands of the keys in src/delivery/keys.ts. */
  readonly client: RedisClient;
  private readonly scripts: DeliveryCommands;

  constructor(redis: RedisService) {
    this.client = redis.connection(DELIVERY_SCRIPTS);
    this.scripts = this.client as unknown as DeliveryCommands;
  }

  /** Counts a bill once (BILL): 1 counted, 0 counted before. */
  bill(keys: { marker: string; total: string; daily: string }, micros: number, markerTtlS: number, dailyTtlS: number): Promise<number> {
    return this.scripts.bidderBill(keys.marker, keys.total, keys.daily, String(micros), String(markerTtlS), String(dailyTtlS));
  }

  /** This worker's heartbeat on Redis's clock; the number of live members (HEARTBEAT). */
  heartbeat(key: string, member: string, windowMs: number, ttlMs: number): Promise<number> {
    return this.scripts.bidderHeartbeat(key, member, String(windowMs), String(ttlMs));
  }

  /**
   * A budget's tail (TAIL): publishes this worker's window of unbilled bids and reads the spend and
   * every other live worker's window in one snapshot. Spend in micro-USD (0 when unset).
   */
  async tail(keys: { tail: string; total: string; daily: string }, member: string, windowMicros: number, staleMs: number, ttlMs: number): Promise<{ total: number; daily: number; fresh: number; others: number; owner: boolean }> {
    const [total, daily, fresh, others, owner] = await this.scripts.bidderTail(keys.tail, keys.total, keys.daily, member, String(Math.round(windowMicros)), String(staleMs), String(ttlMs));
    return { total: Number(total || 0), daily: Number(daily || 0), fresh, others, owner: owner === 1 };
  }

  /** Counts an impression once per bid (IMPRESSION): the day's count, or -1 for a repeat. */
  impression(marker: string, counts: string, campaign: string, markerTtlS: number, countsTtlS: number): Promise<number> {
    return this.scripts.bidderImpression(marker, counts, campaign, String(markerTtlS), String(countsTtlS));
  }

  /**
   * The values of many string keys (null: no such key), whatever their slots. One server: one
   * MGET (rejects when it fails). A cluster: one READ_MANY per master, on that master's own
   * connection, with the keys its slots hold by the client's slot map (`slots`: each key's slot,
   * computed once by the caller); a node whose script fails (a slot moved, an old Redis) has its keys
   * read by slot instead, once the slot map has been asked for again: one MGET per slot through the
   * cluster client. A key that could not be read at all is `undefined`: the caller decides per key.
   */
  async readMany(keys: readonly string[], slots: readonly number[]): Promise<Array<string | null | undefined>> {
    const c = this.client;
    if (!(c instanceof Cluster)) return c.mget(keys as string[]);
    const out = new Array<string | null | undefined>(keys.length);
    const byNode = new Map<string, number[]>();
    for (let i = 0; i < keys.length; i++) {
      const nodeKey = c.slots[slots[i]]?.[0] ?? '';
      const group = byNode.get(nodeKey);
      if (group === undefined) byNode.set(nodeKey, [i]);
      else group.push(i);
    }
    const masters = new Map<string, Redis>();
    for (const n of c.nodes('master')) masters.set(`${n.options.host}:${n.options.port}`, n);
    await Promise.all(
      [...byNode].map(async ([nodeKey, idx]) => {
        const node = masters.get(nodeKey);
        try {
          if (node === undefined || node.status !== 'ready') throw new Error(`no connection to ${nodeKey || 'the node of these slots'}`);
          defineScripts(node, DELIVERY_SCRIPTS);
          const values = await (node as unknown as DeliveryCommands).bidderReadMany(...idx.map((i) => keys[i]));
          for (let j = 0; j < idx.length; j++) out[idx[j]] = values[j];
        } catch {
          // The slot map first (a connection to the slot's new master, if it moved), so that the
          // reads below do not meet a node still connecting, which fails them at once.
          await new Promise<void>((resolve) => c.refreshSlotsCache(() => resolve()));
          await untilUsable(c, 1_000);
          const bySlot = new Map<number, number[]>();
          for (const i of idx) {
            const g = bySlot.get(slots[i]);
            if (g === undefined) bySlot.set(slots[i], [i]);
            else g.push(i);
          }
          await Promise.allSettled(
            [...bySlot.values()].map(async (ii) => {
              const values = await c.mget(ii.map((i) => keys[i]));
              for (let j = 0; j < ii.length; j++) out[ii[j]] = values[j];
            }),
          );
        }
      }),
    );
    return out;
  }
}
