import { LRUCache } from 'lru-cache';

/**
 * A string-keyed cache of decisions that cost tens of µs to compute (TC and GPP decoding) and
 * repeat across requests: `lru-cache` bounded to `maxEntries`, least recently used out, with hit
 * and miss counts for the metrics. Keys longer than `maxKeyChars` are never stored, so a client
 * cannot fill the memory with long strings: the worst case is `maxEntries × maxKeyChars` characters.
 */
export class BoundedCache<V extends object | number | string | boolean> {
  private readonly lru: LRUCache<string, V>;
  hits = 0;
  misses = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxKeyChars: number,
  ) {
    if (!(maxEntries >= 1) || !(maxKeyChars >= 1)) throw new RangeError('BoundedCache needs at least one entry of one character');
    this.lru = new LRUCache<string, V>({ max: maxEntries });
  }

  get size(): number {
    return this.lru.size;
  }

  /** The cached value of `key`, or `compute(key)` (stored when the key is short enough). */
  get(key: string, compute: (key: string) => V): V {
    const v = this.lru.get(key);
    if (v !== undefined) {
      this.hits++;
      return v;
    }
    this.misses++;
    const computed = compute(key);
    if (key.length <= this.maxKeyChars) this.lru.set(key, computed);
    return computed;
  }
}
