import { assertNodeVersion } from './node-version';
assertNodeVersion();

import { createApp, listen } from './app';
import { ConfigError, loadConfig } from './config/config';

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
  const url = await listen(app, config);
  process.stdout.write(`bidder worker ${config.workerId} listening on ${url}\n`);
  // PM2 wait_ready: take traffic only once listening.
  if (typeof process.send === 'function') process.send('ready');
}

main().catch((e: unknown) => {
  process.stderr.write(`bidder: failed to start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
