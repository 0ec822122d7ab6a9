/** The bidder needs Node 24 (zstd in node:zlib, the runtime it is measured on). */
export const REQUIRED_NODE_MAJOR = 24;

export function assertNodeVersion(version: string = process.versions.node): void {
  const major = Number(version.split('.')[0]);
  if (!(major >= REQUIRED_NODE_MAJOR)) {
    process.stderr.write(
      `bidder: Node.js ${REQUIRED_NODE_MAJOR} or newer is required, this is ${version} (${process.execPath}).\n` +
        `Run it through npm (npm start, npm test), which uses the project's own Node from node_modules/.bin.\n`,
    );
    process.exit(1);
  }
}
