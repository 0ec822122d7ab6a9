import type { RedisOptions } from 'ioredis';

/** Longest a command may wait for its reply before it fails (the caller decides about retrying). */
export const REDIS_COMMAND_TIMEOUT_MS = 3_000;

/**
 * Client options for a worker's connection. Commands never wait in a queue while Redis is away:
 * with no offline queue and no retries, a command fails at once when the connection is down and
 * within REDIS_COMMAND_TIMEOUT_MS when Redis is slow, so the caller (e.g. the log flusher) keeps its
 * data and decides itself about retrying or spilling. The connection itself is re-established
 * forever with a capped backoff.
 */
export function redisClientOptions(connectionName: string): RedisOptions {
  return {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    connectTimeout: 2_000,
    keepAlive: 10_000,
    enableReadyCheck: true,
    disableClientInfo: true,
    connectionName: connectionName.replace(/[^A-Za-z0-9_.:-]/g, '_'),
    retryStrategy: reconnectDelay,
  };
}

/** Reconnect after 100, 200, 400 … ms, at most 1 s apart, forever. */
export function reconnectDelay(attempt: number): number {
  return Math.min(100 * 2 ** Math.min(attempt - 1, 10), 1_000);
}
