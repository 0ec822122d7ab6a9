'use strict';
// Log completeness for the load test: counts the bid-log records of one run in Redis and, once the
// bid log shipper runs beside the bidder, in the Parquet files it wrote (docs/log-pipeline.md).
// The log pipeline RPUSHes zstd frames of NDJSON to its lists (docs/log-pipeline.md; one list on one
// Redis, `<key>:{0}` … on a Redis Cluster: src/bidlog/keys.ts); every request id of a run starts
// with `<runId>-`, so the run's records are told apart from anything else in the lists.
const fs = require('node:fs');
const zlib = require('node:zlib');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..');
const Redis = require(path.join(ROOT, 'node_modules', 'ioredis'));

/** A client of the bid log's Redis: the server at `redisUrl`, or the cluster of `nodes` (`host:port,…`). */
function client({ redisUrl, nodes }) {
  if (!nodes) return new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
  const seeds = nodes.split(',').map((hp) => ({ host: hp.slice(0, hp.lastIndexOf(':')), port: Number(hp.slice(hp.lastIndexOf(':') + 1)) }));
  return new Redis.Cluster(seeds, { lazyConnect: true, redisOptions: { maxRetriesPerRequest: 1 } });
}

/** The lists of the log with LOG_REDIS_KEY `key` (the bidder's own function, from dist/: the load test runs after a build). */
function listKeys(key, nodes) {
  const { logListKeys } = require(path.join(ROOT, 'dist', 'bidlog', 'keys.js'));
  const shards = Number(process.env.LOG_REDIS_SHARDS) || (nodes ? 16 : 1);
  return logListKeys({ logRedisKey: key, logRedisShards: shards, redis: { mode: nodes ? 'cluster' : 'single' } });
}

class LogCounter {
  /**
   * `from`: each list's length before the run (listLength()); frames before it are not read.
   * `shipDir`: the shipper's partitions; then every scan reads everything again (the shipper takes
   * frames from the head of the lists, so indexes move): the lists, the shippers' processing lists,
   * and the Parquet files. `nodes`: the Redis Cluster's nodes, when the log is on one.
   */
  constructor({ redisUrl, nodes = null, key, runId, from = {}, shipDir = null }) {
    this.target = { redisUrl, nodes };
    this.key = key;
    this.keys = listKeys(key, nodes);
    this.prefix = `${runId}-`;
    this.shipDir = shipDir;
    this.from = from;
    this.next = new Map(this.keys.map((k) => [k, shipDir ? 0 : from[k] || 0]));
    this.reset();
  }

  reset() {
    this.requests = new Set();
    this.responses = new Set();
    this.duplicates = 0;
    this.frames = 0;
    this.badFrames = 0;
    this.badLines = 0;
    this.compressedBytes = 0;
    this.rawBytes = 0;
    this.shippedRecords = 0;
  }

  /** Each list's length now: `{ list: length }`. */
  static async listLength(target, key) {
    const r = client(target);
    try {
      await r.connect();
      const out = {};
      for (const k of listKeys(key, target.nodes)) out[k] = await r.llen(k);
      return out;
    } finally {
      r.disconnect();
    }
  }

  /** Deletes the log's lists (a run's own key). */
  static async remove(target, key) {
    const r = client(target);
    try {
      await r.connect();
      for (const k of listKeys(key, target.nodes)) await r.del(k);
    } finally {
      r.disconnect();
    }
  }

  /**
   * Reads the frames pushed since the last scan (with a shipper: everything, again). While a
   * shipper is moving frames, a frame read in the list may be read again in a processing list or a
   * Parquet file and count as a duplicate; the load test counts after stopping the bidder and the
   * shipper, when nothing moves.
   */
  async scan() {
    if (this.shipDir) {
      this.reset();
      for (const k of this.keys) this.next.set(k, 0);
    }
    const r = client(this.target);
    try {
      await r.connect();
      for (const key of this.keys) {
        for (;;) {
          const at = this.next.get(key);
          const frames = await r.lrangeBuffer(key, at, at + 49);
          if (frames.length === 0) break;
          this.next.set(key, at + frames.length);
          for (const f of frames) this.addFrame(f);
        }
      }
      if (this.shipDir) {
        // KEYS answers for one node only: on a cluster, ask every master.
        const nodes = this.target.nodes ? r.nodes('master') : [r];
        for (const key of this.keys) {
          for (const node of nodes) {
            for (const proc of await node.keys(`${key}:proc:*`)) {
              for (const f of await r.lrangeBuffer(proc, 0, -1)) this.addFrame(f);
            }
          }
        }
      }
    } finally {
      r.disconnect();
    }
    if (this.shipDir) await this.scanShipped();
    return this.result();
  }

  /** The run's request and response records in the shipper's Parquet partitions. */
  async scanShipped() {
    const files = [];
    let dates = [];
    try {
      dates = fs.readdirSync(this.shipDir).filter((d) => /^date=\d{4}-\d{2}-\d{2}$/.test(d));
    } catch {
      return;
    }
    for (const d of dates) {
      for (const h of fs.readdirSync(path.join(this.shipDir, d)).filter((x) => /^hour=\d{2}$/.test(x))) {
        for (const f of fs.readdirSync(path.join(this.shipDir, d, h))) if (f.endsWith('.parquet')) files.push(path.join(this.shipDir, d, h, f));
      }
    }
    if (files.length === 0) return;
    const { DuckDBInstance } = require(path.resolve(__dirname, '..', '..', 'node_modules', '@duckdb', 'node-api'));
    const db = await DuckDBInstance.create(':memory:', { threads: '1' });
    const c = await db.connect();
    try {
      const q = (s) => `'${s.replace(/'/g, "''")}'`;
      const rows = (
        await c.runAndReadAll(
          `SELECT type, id FROM read_parquet([${files.map(q).join(', ')}]) WHERE type IN ('request', 'response') AND starts_with(id, ${q(this.prefix)})`,
        )
      ).getRowsJS();
      for (const [type, id] of rows) {
        this.shippedRecords++;
        const set = type === 'request' ? this.requests : this.responses;
        if (set.has(id)) this.duplicates++;
        else set.add(id);
      }
    } finally {
      c.closeSync();
      db.closeSync();
    }
  }

  addFrame(frame) {
    this.frames++;
    this.compressedBytes += frame.length;
    let text;
    try {
      text = zlib.zstdDecompressSync(frame).toString('utf8');
    } catch {
      this.badFrames++;
      return;
    }
    this.rawBytes += text.length;
    // Only lines mentioning the run are parsed.
    let from = 0;
    for (;;) {
      const hit = text.indexOf(this.prefix, from);
      if (hit < 0) break;
      const start = text.lastIndexOf('\n', hit) + 1;
      let end = text.indexOf('\n', hit);
      if (end < 0) end = text.length;
      this.addLine(text.slice(start, end));
      from = end + 1;
    }
  }

  addLine(line) {
    let rec;
    try {
      rec = JSON.parse(line);
    } catch {
      this.badLines++;
      return;
    }
    if (typeof rec.id !== 'string' || !rec.id.startsWith(this.prefix)) return;
    const set = rec.type === 'request' ? this.requests : rec.type === 'response' ? this.responses : null;
    if (!set) return;
    if (set.has(rec.id)) this.duplicates++;
    else set.add(rec.id);
  }

  result() {
    return {
      key: this.key,
      lists: this.keys.length,
      frames: this.frames,
      badFrames: this.badFrames,
      badLines: this.badLines,
      compressedMB: this.compressedBytes / 1e6,
      rawMB: this.rawBytes / 1e6,
      requestRecords: this.requests.size,
      responseRecords: this.responses.size,
      duplicates: this.duplicates,
      shippedRecords: this.shippedRecords,
    };
  }
}

module.exports = { LogCounter };
