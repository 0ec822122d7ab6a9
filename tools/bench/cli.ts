/** The command line of a benchmark (scripts/lib/cli.js): strict, `--help`, exit 2 with the usage on a mistake. */
import * as path from 'node:path';

type Option = { type: 'string' | 'boolean'; short?: string; default?: string | boolean };
interface Cli {
  readCommandLine(o: { name: string; usage: string; options?: Record<string, Option>; allowPositionals?: boolean; maxPositionals?: number }): {
    values: Record<string, string | boolean | undefined>;
    positionals: string[];
  };
  usageError(name: string, usage: string, message: string): never;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const cli = require(path.join(__dirname, '..', '..', '..', 'scripts', 'lib', 'cli.js')) as Cli;

export const readCommandLine = cli.readCommandLine;
export const usageError = cli.usageError;

/** A whole number option ≥ 1, or the default when not given. */
export function count(name: string, usage: string, value: string | boolean | undefined, dflt: number): number {
  if (value === undefined) return dflt;
  const n = Number(value);
  if (typeof value !== 'string' || !/^\d+$/.test(value) || n < 1) cli.usageError(name, usage, `expected a whole number of at least 1, not ${JSON.stringify(value)}`);
  return n;
}
