import { assertNodeVersion } from '../node-version';
assertNodeVersion();

import 'reflect-metadata';
import { ConsoleLogger, Logger, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ConfigError, EXIT_CONFIG_ERROR } from '../config/config';
import { AdminServer } from './admin-server';
import { lowerPriority } from './priority';
import { loadShipperConfig, type ShipperConfig } from './shipper.config';
import { ShipperMetrics } from './shipper.metrics';
import { ShipperModule } from './shipper.module';
import { ShipperService, type ShipperStatus } from './shipper.service';
import { StorageProbe } from './storage-probe';

const LEVELS: Record<ShipperConfig['logLevel'], LogLevel[]> = {
  fatal: ['fatal'],
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  info: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  trace: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
  silent: [],
};

/**
 * `node dist/shipper/main.js`: the bid log shipper (docs/log-pipeline.md). One JSON line per
 * event on stdout. SIGINT/SIGTERM: the batch under way is finished (bounded by
 * SHIP_STOP_TIMEOUT_MS), then the process exits.
 */
async function main(): Promise<void> {
  let config: ShipperConfig;
  try {
    config = loadShipperConfig(process.env);
  } catch (e) {
    if (e instanceof ConfigError) {
      // Exit once the message is written (under PM2 it goes to the error log asynchronously).
      const exit = (): never => process.exit(EXIT_CONFIG_ERROR);
      const write = () => process.stderr.write(`shipper: ${e.message}\n`, exit);
      setTimeout(exit, 2_000);
      // As src/main.ts: `ready` first, or PM2 shows the exited process "online" after listen_timeout.
      if (typeof process.send === 'function') process.send('ready', undefined, undefined, write);
      else write();
      return;
    }
    throw e;
  }
  // Before DuckDB and libuv's pool create their threads: they inherit the priority.
  const priority = config.nice > 0 ? lowerPriority(config.nice) : null;
  const logger = new ConsoleLogger({ json: true, logLevels: LEVELS[config.logLevel] });
  const app = await NestFactory.createApplicationContext(ShipperModule.forRoot(config), { logger });
  const log = new Logger('main');
  if (priority !== null) log.log({ msg: 'lowered its CPU and I/O priority', ...priority });
  process.on('uncaughtException', (e) => {
    log.fatal({ msg: 'uncaught exception', err: e.stack ?? e.message });
    process.exit(1);
  });
  process.on('unhandledRejection', (e) => {
    log.fatal({ msg: 'unhandled rejection', err: e instanceof Error ? (e.stack ?? e.message) : String(e) });
    process.exit(1);
  });
  const shipper = app.get(ShipperService);
  // SHIP_DIR is tried at start and every 10 s: not ready while it cannot be written. While it
  // fails, each readiness check tries again first (a directory made meanwhile counts at once).
  const storage = new StorageProbe(config.dir);
  await storage.start();
  const status = async (): Promise<ShipperStatus> => {
    if (storage.status() !== null) await storage.probe();
    const s = shipper.status();
    const problem = storage.status();
    return problem === null ? s : { ready: false, problems: [...s.problems, problem] };
  };
  const admin = new AdminServer(app.get(ShipperMetrics), status, config.shipperId);
  try {
    const url = await admin.listen(config.adminPort, config.adminHost);
    log.log({ msg: 'admin server listening', url, node: process.version });
  } catch (e) {
    // Draining Redis matters more than being scraped: ship on, and say so loudly.
    log.error({ msg: 'admin server not started; shipping without /metrics and /health', host: config.adminHost, port: config.adminPort, err: e instanceof Error ? e.message : String(e) });
  }

  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    log.log({ msg: 'stopping', signal });
    // Past the batch deadline and the closing of connections, exit regardless.
    setTimeout(() => {
      log.error({ msg: 'stop overran its deadline; exiting' });
      process.exit(1);
    }, config.stopTimeoutMs + 5_000).unref();
    void app
      .close()
      .then(() => admin.close())
      .then(() => storage.stop())
      .then(
        () => process.exit(0),
        (e: unknown) => {
          log.error({ msg: 'stop failed', err: e instanceof Error ? e.message : String(e) });
          process.exit(1);
        },
      );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // PM2 wait_ready.
  if (typeof process.send === 'function') process.send('ready');
}

main().catch((e: unknown) => {
  process.stderr.write(`shipper: failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
