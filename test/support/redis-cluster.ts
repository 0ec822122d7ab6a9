// A real Redis Cluster for tests: redis-server nodes on free loopback ports (scripts/lib/redis-cluster.js),
// stopped by their PIDs.
import * as path from 'node:path';

export interface ClusterNode {
  host: string;
  port: number;
  pid: number;
  /** 'master' | 'replica', 'down' after kill(); kept current by refresh(), failover() and waitUntilOk(). */
  role: string;
}

export interface TestRedisCluster {
  nodes: ClusterNode[];
  /** `host:port,host:port,…` of every node, as REDIS_CLUSTER_NODES takes it. */
  nodesEnv: string;
  dir: string;
  /** CLUSTER FAILOVER on a replica of the master on `masterPort`; resolves to the new master's port once the roles swapped. */
  failover(masterPort: number): Promise<number>;
  /** SIGKILLs one node; its replica takes over after the node timeout (waitUntilOk() waits for that). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again; it rejoins as a replica of whoever took its slots (waitUntilOk() waits for its sync). */
  restart(port: number): Promise<void>;
  waitUntilOk(timeoutMs?: number): Promise<void>;
  refresh(): Promise<unknown>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  masters?: number;
  replicas?: number;
  dir?: string;
  /** cluster-node-timeout: how long a master may be unreachable before its replica takes over. */
  nodeTimeoutMs?: number;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const lib = require(path.resolve(__dirname, '..', '..', '..', 'scripts', 'lib', 'redis-cluster.js')) as {
  startRedisCluster(opts: ClusterOptions): Promise<TestRedisCluster>;
};

export function startTestRedisCluster(opts: ClusterOptions = {}): Promise<TestRedisCluster> {
  return lib.startRedisCluster(opts);
}
