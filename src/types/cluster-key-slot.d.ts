// cluster-key-slot (the hash slot function ioredis itself uses) ships no types.
declare module 'cluster-key-slot' {
  /** The Redis Cluster hash slot (0-16383) of a key: CRC16 of its hash tag (`{…}`) if it has one, else of the whole key. */
  function calculateSlot(key: string | Buffer): number;
  namespace calculateSlot {
    /** The slot of keys that share one, else -1. */
    function generateMulti(keys: ReadonlyArray<string | Buffer>): number;
  }
  export = calculateSlot;
}
