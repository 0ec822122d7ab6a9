import { assertNodeVersion } from './node-version';
assertNodeVersion();

import { readFileSync } from 'node:fs';
import { Logger } from '@nestjs/common';
import { adminUrl, createApp, listen } from './app';
import type { WarmUpResult } from './bidding/warm-up';
import { ConfigError, configWarnings, EXIT_CONFIG_ERROR, loadConfig, type Config } from './config/config';
import { DRAIN_MAX_MS } from './health/lifecycle';
import { LogService } from './log/log.service';

/**
 * Whatever happens during a graceful stop (drain, final log flush bounded by SHUTDOWN_TIMEOUT_MS),
 * the process exits before PM2's kill_timeout (ecosystem.config.js) would SIGKILL it.
 */
function shutdownWatchdog(config: Config, logger: Logger): void {
  const deadline = DRAIN_MAX_MS + config.shutdownTimeoutMs + 1_000;
  const arm = (signal: NodeJS.Signals) => {
    logger.log({ msg: 'shutting down', signal, deadlineMs: deadline });
    setTimeout(() => {
      logger.error({ msg: 'graceful shutdown overran its deadline; exiting', deadlineMs: deadline });
      process.exit(1);
    }, deadline).unref();
  };
  process.once('SIGINT', arm);
  process.once('SIGTERM', arm);
}

/**
 * Exits with EXIT_CONFIG_ERROR once the message is written: under PM2 process.stderr.write goes to
 * PM2's error log file asynchronously, and an immediate exit lost it (bidder.err.log stayed empty).
 * ecosystem.config.js lists the code in stop_exit_codes: PM2 does not restart a configuration error.
 */
function exitOnConfigError(message: string): void {
  const exit = (): never => process.exit(EXIT_CONFIG_ERROR);
  const write = () => process.stderr.write(message, exit);
  setTimeout(exit, 2_000);
  // PM2 (wait_ready) marks a worker "online" when its listen_timeout passes, even one that exited
  // long before: `ready` first, so that the exit is what it shows (stopped).
  if (typeof process.send === 'function') process.send('ready', undefined, undefined, write);
  else write();
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const app = await createApp(config);
  const logger = new Logger('main');
  const log = app.get(LogService);
  // A bug no handler caught: the process state can no longer be trusted, so it exits, but the bid
  // log records still only in memory are written to the spill directory first (synchronously: no
  // callback will run again), and the next start pushes them.
  const fatal = (what: string, e: unknown): void => {
    let saved = '';
    try {
      const r = log.emergencySpill();
      saved = `wrote ${r.written} records to the spill directory${r.lost > 0 ? `, ${r.lost} lost (spill directory full or not writable)` : ''}`;
    } catch (x) {
      saved = `could not write the queued records: ${x instanceof Error ? x.message : String(x)}`;
    }
    logger.fatal({ msg: `${what}; ${saved}`, err: e });
    process.exit(1);
  };
  process.on('uncaughtException', (e) => fatal('uncaught exception', e));
  process.on('unhandledRejection', (e) => fatal('unhandled rejection', e));
  shutdownWatchdog(config, logger);
  for (const w of configWarnings(config)) logger.warn(w);
  let warmUp: WarmUpResult | null = null;
  const url = await listen(app, config, (r) => (warmUp = r));
  // execArgv: the Node options the worker runs with (ecosystem.config.js's node_args; PM2 sets the
  // process title, so /proc/<pid>/cmdline does not show them).
  logger.log({ msg: 'listening', url, admin: adminUrl(app), node: process.version, execArgv: process.execArgv, allocator: allocator(), accessLog: config.accessLog, warmUp });
  // PM2 wait_ready: take traffic only once listening.
  if (typeof process.send === 'function') process.send('ready');
}

main().catch((e: unknown) => {
  // A configuration error, found by loadConfig or while starting (a campaign or rates file that
  // cannot be read, a port in use): one line per problem, the code PM2 does not restart.
  if (e instanceof ConfigError) return exitOnConfigError(`bidder: ${e.message}\n`);
  process.stderr.write(`bidder: failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});

/** The memory allocator this process runs with: jemalloc when preloaded (scripts/pm2.js), else the C library's. */
function allocator(): string {
  try {
    return readFileSync('/proc/self/maps', 'utf8').includes('libjemalloc') ? 'jemalloc' : 'libc';
  } catch {
    return 'unknown';
  }
}
