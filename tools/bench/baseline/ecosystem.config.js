'use strict';
// PM2 file of the load test's baseline (server.js): cluster mode, WORKERS workers (default 2),
// PORT (default 8090). `npm run loadtest` starts it with its own PM2_HOME and kills that daemon.
const path = require('node:path');

/** The bidder's Node flags (e.g. GC tuning), so the comparison is about the work, not the flags. */
function bidderNodeArgs() {
  try {
    const eco = require(path.join(__dirname, '..', '..', '..', 'ecosystem.config.js'));
    const app = eco.apps.find((a) => a.name === 'bidder');
    return app && app.node_args ? app.node_args : undefined;
  } catch {
    return undefined;
  }
}

const nodeArgs = bidderNodeArgs();

module.exports = {
  apps: [
    {
      name: 'baseline',
      script: path.join(__dirname, 'server.js'),
      exec_mode: 'cluster',
      instances: Number(process.env.WORKERS || 2),
      ...(nodeArgs ? { node_args: nodeArgs } : {}),
      // As the bidder's: without PM2's agent, which wraps http.Server.prototype.emit.
      pmx: false,
      wait_ready: true,
      listen_timeout: 10_000,
      kill_timeout: 5_000,
      autorestart: false,
      env: {
        PORT: process.env.PORT || '8090',
        HOST: process.env.HOST || '127.0.0.1',
        NODE_ENV: 'production',
      },
    },
  ],
};
