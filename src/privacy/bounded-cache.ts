/**
 * A small string-keyed cache with a bound on entries and on key length, least recently used out.
 * Used for decisions that cost tens of µs to compute (TC and GPP decoding) and repeat across
 * requests. Keys longer than `maxKeyChars` are never stored, so a client cannot fill the memory
 * with long strings: the worst case is `maxEntries × maxKeyChars` characters.
 */
export class BoundedCache<V> {
  private readonly map = new Map<string, V>();
  hits = 0;
  misses = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxKeyChars: number,
  ) {
    if (!(maxEntries >= 1) || !(maxKeyChars >= 1)) throw new RangeError('BoundedCache needs at least one entry of one character');
  }

  get size(): number {
    return this.map.size;
  }

  /** The cached value of `key`, or `compute(key)` (stored when the key is short enough). */
  get(key: string, compute: (key: string) => V): V {
    const map = this.map;
    const v = map.get(key);
    if (v !== undefined) {
      this.hits++;
      // Re-inserted so that Map's insertion order is the recency order: the first key is the oldest.
      map.delete(key);
      map.set(key, v);
      return v;
    }
    this.misses++;
    const computed = compute(key);
    if (key.length <= this.maxKeyChars) {
      if (map.size >= this.maxEntries) map.delete(map.keys().next().value!);
      map.set(key, computed);
    }
    return computed;
  }
}
