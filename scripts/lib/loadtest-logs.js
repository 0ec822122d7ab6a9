'use strict';
// Log completeness for the load test: counts the bid-log records of one run in Redis.
// The log pipeline RPUSHes zstd frames of NDJSON to a list (INTERFACE.md); every request id of a
// run starts with `<runId>-`, so the run's records are told apart from anything else in the list.
const zlib = require('node:zlib');
const path = require('node:path');

const Redis = require(path.resolve(__dirname, '..', '..', 'node_modules', 'ioredis'));

class LogCounter {
  /** `from`: the list length before the run; frames before it are not read. */
  constructor({ redisUrl, key, runId, from = 0 }) {
    this.redisUrl = redisUrl;
    this.key = key;
    this.prefix = `${runId}-`;
    this.next = from;
    this.requests = new Set();
    this.responses = new Set();
    this.duplicates = 0;
    this.frames = 0;
    this.badFrames = 0;
    this.badLines = 0;
    this.compressedBytes = 0;
    this.rawBytes = 0;
  }

  static async listLength(redisUrl, key) {
    const r = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    try {
      await r.connect();
      return await r.llen(key);
    } finally {
      r.disconnect();
    }
  }

  /** Reads the frames pushed since the last scan. */
  async scan() {
    const r = new Redis(this.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, enableOfflineQueue: false });
    try {
      await r.connect();
      for (;;) {
        const frames = await r.lrangeBuffer(this.key, this.next, this.next + 49);
        if (frames.length === 0) break;
        this.next += frames.length;
        for (const f of frames) this.addFrame(f);
      }
    } finally {
      r.disconnect();
    }
    return this.result();
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
      frames: this.frames,
      badFrames: this.badFrames,
      badLines: this.badLines,
      compressedMB: this.compressedBytes / 1e6,
      rawMB: this.rawBytes / 1e6,
      requestRecords: this.requests.size,
      responseRecords: this.responses.size,
      duplicates: this.duplicates,
    };
  }
}

module.exports = { LogCounter };
