'use strict';
// The exchanges file `npm start` gives its workers when EXCHANGES_FILE is not set: production refuses
// to start without one (an open bid endpoint lets anyone spend budgets), and a developer's
// `npm start` must still work. It admits callers on this machine only (loopback), under the name
// `local`; real exchanges need an EXCHANGES_FILE of their own (docs/operations.md, Exchanges).
const fs = require('node:fs');
const path = require('node:path');

/** The addresses the generated file admits: IPv4 and IPv6 loopback (IPv4-mapped addresses match too). */
const LOOPBACK = ['127.0.0.0/8', '::1'];

/** True for the values the bidder reads as true (src/config/config.ts, Reader.bool). */
function truthy(v) {
  return ['1', 'true', 'yes', 'on'].includes(String(v ?? '').trim().toLowerCase());
}

/**
 * The variables to add to the workers' environment: {EXCHANGES_FILE} of a file written in `runDir`
 * that admits loopback only, or {} when the environment decides already (EXCHANGES_FILE, or
 * EXCHANGES_OPEN=1), or when the workers do not run as production (NODE_ENV set to something
 * else: the endpoint stays open, as the bidder says at start). `say` tells what was done.
 */
function localExchanges(runDir, env, say = () => undefined) {
  if ((env.EXCHANGES_FILE ?? '').trim() !== '' || truthy(env.EXCHANGES_OPEN)) return {};
  if ((env.NODE_ENV ?? '').trim() !== '' && env.NODE_ENV.trim() !== 'production') return {};
  const file = path.join(runDir, 'exchanges.json');
  fs.mkdirSync(runDir, { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify({ exchanges: [{ name: 'local', addresses: LOOPBACK }] }, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, file);
  say(
    `bidder: EXCHANGES_FILE not set: the bid endpoint admits callers on this machine only (${LOOPBACK.join(', ')}; generated ${file}); ` +
      'set EXCHANGES_FILE to the exchanges that may call it (docs/operations.md), or EXCHANGES_OPEN=1 for an endpoint open to anyone',
  );
  return { EXCHANGES_FILE: file };
}

module.exports = { localExchanges, LOOPBACK };
