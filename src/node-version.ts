/** The bidder needs Node 24 (zstd in node:zlib, the runtime it is measured on). */
export const REQUIRED_NODE_MAJOR = 24;

/**
 * Exits with 2 on an older Node: the code of a configuration error (src/config/config.ts,
 * EXIT_CONFIG_ERROR), which PM2 does not restart (ecosystem.config.js): every restart would run on
 * the same Node. Not imported from the config, so that this check runs before anything else loads.
 */
export function assertNodeVersion(version: string = process.versions.node): void {
  const major = Number(version.split('.')[0]);
  if (!(major >= REQUIRED_NODE_MAJOR)) {
    process.stderr.write(
      `bidder: Node.js ${REQUIRED_NODE_MAJOR} or newer is required, this is ${version} (${process.execPath}).\n` +
        `Run it through npm (npm start, npm test), which uses the project's own Node from node_modules/.bin.\n`,
    );
    process.exit(2);
  }
}
