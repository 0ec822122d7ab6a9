import type Redis from 'ioredis';
import type { RedisClient } from './redis.options';

/**
 * A Lua script as a command of the client. Each domain owns its scripts (src/delivery/scripts.ts,
 * src/bidlog/scripts.ts) and defines them on the connection it is given; this module knows none.
 */
export interface ScriptDef {
  readonly numberOfKeys: number;
  readonly lua: string;
}

export type ScriptSet = Readonly<Record<string, ScriptDef>>;

/**
 * Defines each script of `set` as a command of `client` under its name (EVALSHA; the text is sent
 * only when Redis lacks it). A name already defined is left as it is, so that calling it again (a
 * cluster node met for the first time, a second holder on the same client) costs nothing.
 */
export function defineScripts(client: RedisClient | Redis, set: ScriptSet): void {
  const c = client as unknown as Record<string, unknown>;
  for (const [name, def] of Object.entries(set)) if (typeof c[name] !== 'function') client.defineCommand(name, def);
}
