import { assertNodeVersion } from './node-version';
assertNodeVersion();

import { Logger } from '@nestjs/common';
import { createApp, listen } from './app';
import { ConfigError, loadConfig, type Config } from './config/config';
import { DRAIN_MAX_MS } from './health/lifecycle';

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

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`bidder: ${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const app = await createApp(config);
  const logger = new Logger('main');
  process.on('uncaughtException', (e) => {
    logger.fatal({ msg: 'uncaught exception', err: e });
    process.exit(1);
  });
  process.on('unhandledRejection', (e) => {
    logger.fatal({ msg: 'unhandled rejection', err: e });
    process.exit(1);
  });
  shutdownWatchdog(config, logger);
  const url = await listen(app, config);
  logger.log({ msg: 'listening', url, node: process.version, accessLog: config.accessLog });
  // PM2 wait_ready: take traffic only once listening.
  if (typeof process.send === 'function') process.send('ready');
}

main().catch((e: unknown) => {
  process.stderr.write(`bidder: failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
