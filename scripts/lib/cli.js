'use strict';
// The command line of the project's scripts and tools: node:util.parseArgs in strict mode, with
// `-h`/`--help` printing the usage on stdout (exit 0), and an unknown option, a missing value or a
// stray argument printing one line with the reason, then the usage, on stderr (exit 2).
const { parseArgs } = require('node:util');

/**
 * @param {{ name: string, usage: string, options?: object, allowPositionals?: boolean, maxPositionals?: number, args?: string[] }} o
 * @returns {{ values: Record<string, any>, positionals: string[] }}
 */
function readCommandLine({ name, usage, options = {}, allowPositionals = false, maxPositionals = Infinity, args = process.argv.slice(2) }) {
  let parsed;
  try {
    parsed = parseArgs({ args, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals, strict: true });
  } catch (e) {
    // parseArgs's own text for an unknown option goes on about positionals after '--': the first sentence is the reason.
    const message = e instanceof Error ? e.message : String(e);
    usageError(name, usage, e?.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? message.split('. ')[0] : message);
  }
  if (parsed.values.help) {
    process.stdout.write(`${usage.trimEnd()}\n`);
    process.exit(0);
  }
  if (parsed.positionals.length > maxPositionals) usageError(name, usage, `unexpected argument '${parsed.positionals[maxPositionals]}'`);
  return parsed;
}

/** Exits 2 with `name: message` and the usage on stderr. */
function usageError(name, usage, message) {
  process.stderr.write(`${name}: ${message}\n${usage.trimEnd()}\n`);
  process.exit(2);
}

module.exports = { readCommandLine, usageError };
