/**
 * In-memory stores for unit tests of the services above them: the same contracts as the Redis
 * repositories (src/delivery/spend.repository.ts, caps.repository.ts, shading.repository.ts, src/tracking/notice-markers.ts,
 * src/targeting/campaign-file.ts, src/currency/rates-source.ts),
 * kept in maps, with a switch that makes every call fail as a Redis that is away does.
 */
import { RatesSource, RatesSourceError } from '../../src/currency/rates-source';
import { CapsRepository, type CapNews, type CappedPair } from '../../src/delivery/caps.repository';
import { ShadingRepository, type SharePage } from '../../src/delivery/shading.repository';
import { SpendRepository, type TailView } from '../../src/delivery/spend.repository';
import type { SubscriberHandlers } from '../../src/redis/subscriber';
import { CampaignSource } from '../../src/targeting/campaign-file';
import { NoticeMarkers } from '../../src/tracking/notice-markers';

/** Fails every call while `down` is true (a store that is away). */
class Outage {
  down = false;

  check(): void {
    if (this.down) throw new Error('store unavailable');
  }
}

/** Spend and leases in maps: string keys, the live workers (member → last heartbeat), pacing shares and traffic hashes. */
export class MemorySpendRepository extends SpendRepository {
  readonly outage = new Outage();
  readonly strings = new Map<string, string>();
  readonly workers = new Map<string, number>();
  readonly paces = new Map<string, Record<string, string>>();
  readonly hashes = new Map<string, Record<string, string>>();
  private readonly readyListeners: Array<() => void> = [];
  /** Workers besides the ones that beat here (another host's, say). */
  otherWorkers = 0;

  isReady(): boolean {
    return !this.outage.down;
  }

  onReady(listener: () => void): void {
    this.readyListeners.push(listener);
  }

  /** Brings the store back and tells the listeners. */
  up(): void {
    this.outage.down = false;
    for (const l of this.readyListeners) l();
  }

  async bill(keys: { marker: string; total: string; daily: string }, micros: number): Promise<number> {
    await Promise.resolve();
    this.outage.check();
    if (this.strings.has(keys.marker)) return 0;
    this.strings.set(keys.marker, '1');
    for (const k of [keys.total, keys.daily]) this.strings.set(k, String(Number(this.strings.get(k) ?? 0) + micros));
    return 1;
  }

  async heartbeat(member: string): Promise<number> {
    await Promise.resolve();
    this.outage.check();
    this.workers.set(member, Date.now());
    return this.workers.size + this.otherWorkers;
  }

  async leave(member: string): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    this.workers.delete(member);
  }

  async tail(keys: { tail: string; total: string; daily: string }): Promise<TailView> {
    await Promise.resolve();
    this.outage.check();
    return { total: Number(this.strings.get(keys.total) ?? 0), daily: Number(this.strings.get(keys.daily) ?? 0), fresh: this.workers.size + this.otherWorkers, others: 0, owner: true };
  }

  async readMany(keys: readonly string[]): Promise<Array<string | null | undefined>> {
    await Promise.resolve();
    this.outage.check();
    return keys.map((k) => this.strings.get(k) ?? null);
  }

  async get(key: string): Promise<string | null> {
    await Promise.resolve();
    this.outage.check();
    return this.strings.get(key) ?? null;
  }

  async setIfAbsent(key: string, value: string): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    if (!this.strings.has(key)) this.strings.set(key, value);
  }

  async sharePaces(member: string, mine: Readonly<Record<string, string>>): Promise<Array<Record<string, string>>> {
    await Promise.resolve();
    this.outage.check();
    if (Object.keys(mine).length > 0) this.paces.set(member, { ...mine });
    else this.paces.delete(member);
    return [...this.paces].filter(([m]) => m !== member).map(([, h]) => h);
  }

  async addTraffic(key: string, hours: ReadonlyArray<readonly [number, number]>): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    const h = this.hashes.get(key) ?? {};
    for (const [hour, n] of hours) h[String(hour)] = String(Number(h[String(hour)] ?? 0) + n);
    this.hashes.set(key, h);
  }

  async readTraffic(keys: readonly string[]): Promise<Array<Record<string, string> | null>> {
    await Promise.resolve();
    this.outage.check();
    return keys.map((k) => this.hashes.get(k) ?? {});
  }
}

/**
 * Frequency caps in maps, shared by the services of several workers (each subscribes): impression
 * markers, per user and day the counts per campaign, the day's capped sets; published news reaches
 * every subscriber at once.
 */
export class MemoryCapsRepository extends CapsRepository {
  readonly outage = new Outage();
  readonly markers = new Set<string>();
  readonly counts = new Map<string, number>();
  readonly capped = new Map<string, Set<string>>();
  readonly published: string[] = [];
  private readonly subscribers = new Set<SubscriberHandlers>();

  isReady(): boolean {
    return !this.outage.down;
  }

  onReady(): void {}

  subscribe(handlers: SubscriberHandlers): CapNews {
    this.subscribers.add(handlers);
    queueMicrotask(() => handlers.subscribed());
    return { firstSubscription: Promise.resolve(), stop: () => this.subscribers.delete(handlers) };
  }

  async scanCapped(day: string, each: (pairs: string[]) => void): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    each([...(this.capped.get(day) ?? [])]);
  }

  async countImpression(day: string, bidId: string, userKey: string, campaignId: string): Promise<number> {
    await Promise.resolve();
    this.outage.check();
    const marker = `${userKey}\u0000${bidId}`;
    if (this.markers.has(marker)) return -1;
    this.markers.add(marker);
    if (userKey === '') return 0;
    const k = `${day}\u0000${userKey}\u0000${campaignId}`;
    const n = (this.counts.get(k) ?? 0) + 1;
    this.counts.set(k, n);
    return n;
  }

  async publishCapped(news: readonly CappedPair[]): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    for (const n of news) {
      let set = this.capped.get(n.day);
      if (set === undefined) this.capped.set(n.day, (set = new Set()));
      set.add(n.pair);
    }
    for (const n of news) {
      const text = `${n.day}|${n.pair}`;
      this.published.push(text);
      for (const s of this.subscribers) s.message(text);
    }
  }
}

/**
 * What shading's workers share, in maps, shared by the services of several workers: each worker's
 * fields (member → segment key → text) and its time to live, and the live set (`live`: the test
 * adds the members, as the budgets' heartbeats do). A page of `scan` is `count` fields in the order
 * they were first set, the cursor the index of the next one.
 */
export class MemoryShadingRepository extends ShadingRepository {
  readonly outage = new Outage();
  readonly states = new Map<string, Map<string, string>>();
  readonly ttls = new Map<string, number>();
  readonly live = new Set<string>();
  /** Fields set by each publish, in order. */
  readonly published: number[] = [];
  /** Scans a state's fields last set first (Redis's HSCAN order differs between Redis processes: it hashes with a seed drawn at start). */
  reversed = false;

  isReady(): boolean {
    return !this.outage.down;
  }

  async publish(member: string, fields: Readonly<Record<string, string>>, ttlMs: number): Promise<void> {
    await Promise.resolve();
    this.outage.check();
    let state = this.states.get(member);
    if (state === undefined) this.states.set(member, (state = new Map()));
    const keys = Object.keys(fields);
    for (const k of keys) state.set(k, fields[k]);
    this.ttls.set(member, ttlMs);
    this.published.push(keys.length);
  }

  async others(member: string): Promise<string[]> {
    await Promise.resolve();
    this.outage.check();
    return [...this.live].filter((m) => m !== member);
  }

  async scan(member: string, cursor: string, count: number): Promise<SharePage> {
    await Promise.resolve();
    this.outage.check();
    const entries = [...(this.states.get(member) ?? [])];
    if (this.reversed) entries.reverse();
    const from = Number(cursor);
    const page = entries.slice(from, from + count).flat();
    return [from + count >= entries.length ? '0' : String(from + count), page];
  }
}

/** First-notice markers in a set. */
export class MemoryNoticeMarkers extends NoticeMarkers {
  readonly outage = new Outage();
  readonly marked = new Set<string>();

  async first(event: string, bidId: string): Promise<boolean> {
    await Promise.resolve();
    this.outage.check();
    const k = `${event}\u0000${bidId}`;
    if (this.marked.has(k)) return false;
    this.marked.add(k);
    return true;
  }
}

/** A campaign file in memory: `text` is what a read returns (`unreadable`: reads fail), `change()` tells the watcher. */
export class MemoryCampaignSource extends CampaignSource {
  readonly name = 'memory.json';
  unreadable = false;
  private changed: (() => void) | null = null;

  constructor(public text: string) {
    super();
  }

  read(): string {
    if (this.unreadable) throw new Error(`campaigns file ${this.name}: cannot read: gone`);
    return this.text;
  }

  watch(changed: () => void): void {
    this.changed = changed;
  }

  unwatch(): void {
    this.changed = null;
  }

  /** Replaces the text and tells the watcher, as a poll that saw the file change would. */
  change(text: string): void {
    this.text = text;
    this.changed?.();
  }
}

/** Currency rates in memory: `text` is what a read returns (`failing`: reads reject as a source that is away), `change()` tells the watcher. */
export class MemoryRatesSource extends RatesSource {
  readonly shown = 'memory-rates.json';
  failing: string | null = null;
  reads = 0;
  private changed: (() => void) | null = null;

  constructor(public text: string) {
    super();
  }

  read(): Promise<string> {
    this.reads++;
    return this.failing === null ? Promise.resolve(this.text) : Promise.reject(new RatesSourceError(this.failing));
  }

  watch(changed: () => void): void {
    this.changed = changed;
  }

  unwatch(): void {
    this.changed = null;
  }

  /** Replaces the text and tells the watcher, as a poll that saw the file change would. */
  change(text: string): void {
    this.text = text;
    this.changed?.();
  }
}
