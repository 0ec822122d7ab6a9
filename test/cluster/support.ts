// Helpers for the Redis Cluster tests: an admin client of the test cluster, reading every list of the
// bid log back from it, and the environment that points the bidder at it.
import assert from 'node:assert/strict';
import * as zlib from 'node:zlib';
import { Cluster } from 'ioredis';
import { logListKeys } from '../../src/bidlog/keys';
import { runCli, sleep, type LogLine, type RunResult } from '../log/support';
import type { TestRedisCluster } from '../support/redis-cluster';

/** A plain cluster client for the test's own reads and writes (not the project's factory). */
export async function adminClient(c: TestRedisCluster): Promise<Cluster> {
  const client = new Cluster(
    c.nodes.map(({ host, port }) => ({ host, port })),
    { lazyConnect: true, redisOptions: { connectTimeout: 2_000, commandTimeout: 5_000 }, retryDelayOnFailover: 200, slotsRefreshInterval: 1_000 },
  );
  client.on('error', () => undefined);
  client.on('node error', () => undefined);
  await client.connect();
  return client;
}

/** The environment of a bidder (or shipper, or reader) on the test cluster. */
export function clusterEnv(c: TestRedisCluster, extra: Record<string, string> = {}): Record<string, string> {
  return { REDIS_MODE: 'cluster', REDIS_CLUSTER_NODES: c.nodesEnv, ...extra };
}

/** The lists of the bid log with LOG_REDIS_KEY `key` on a cluster (default shards). */
export function clusterLogKeys(key: string, shards = 16): string[] {
  return logListKeys({ logRedisKey: key, logRedisShards: shards, redis: { mode: 'cluster' } });
}

/** Every record in every list of the log, and the frames per list. */
export async function readClusterLog(client: Cluster, keys: readonly string[]): Promise<{ perList: number[]; records: LogLine[] }> {
  const perList: number[] = [];
  const records: LogLine[] = [];
  for (const key of keys) {
    const frames = await client.lrangeBuffer(key, 0, -1);
    perList.push(frames.length);
    for (const f of frames) {
      const text = zlib.zstdDecompressSync(f).toString('utf8');
      assert.ok(text.endsWith('\n'), 'a batch is whole NDJSON lines');
      for (const line of text.split('\n')) if (line !== '') records.push(JSON.parse(line) as LogLine);
    }
  }
  return { perList, records };
}

/** The port of the master that serves `key`'s slot now. */
export async function masterPortOf(client: Cluster, key: string): Promise<number> {
  const slot = Number(await client.cluster('KEYSLOT', key));
  for (const [from, to, master] of await client.cluster('SLOTS')) if (slot >= from && slot <= to) return Number(master[1]);
  throw new Error(`no master serves slot ${slot}`);
}

/**
 * Runs the bid-log CLI against a cluster that has just failed over or restarted a node: while the
 * CLI says it cannot reach the cluster (it then reads the spill directory alone, or fails with
 * `--source redis`), it runs again, for up to 10 s. The result of the last run.
 */
export async function runCliOnCluster(args: string[], env: Record<string, string>): Promise<RunResult> {
  let r = await runCli(args, env);
  for (let tries = 1; r.stderr.includes('cannot reach') && tries < 20; tries++) {
    await sleep(500);
    r = await runCli(args, env);
  }
  return r;
}
