// A real Redis for tests: a private redis-server on a free loopback port, stopped by its PID.
import * as path from 'node:path';

interface StartedRedis {
  url: string;
  port: number;
  pid: number;
  dir: string;
  stop(): Promise<void>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const lib = require(path.resolve(__dirname, '..', '..', '..', 'scripts', 'lib', 'redis.js')) as {
  startRedis(opts: { port?: number; dir?: string; persist?: boolean; maxmemory?: string }): Promise<StartedRedis>;
  freePort(): Promise<number>;
};

export type TestRedis = StartedRedis;

export function startTestRedis(opts: { port?: number; dir?: string; persist?: boolean; maxmemory?: string } = {}): Promise<TestRedis> {
  return lib.startRedis(opts);
}

export const freePort = lib.freePort;
