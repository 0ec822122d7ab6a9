import { parseArgs } from 'node:util';

/** A wrong command line: the tools print its message and their usage, and exit with status 2. */
export class UsageError extends Error {}

export interface ArgSpec {
  readonly type: 'string' | 'boolean';
  readonly short?: string;
}

/** One option as given, in command-line order; `value` is '' for a boolean option. */
export interface GivenOption {
  readonly name: string;
  readonly value: string;
}

/**
 * The command line read by node:util.parseArgs, checked against `spec`: an unknown option, a
 * string option without its value or a boolean option given one is a UsageError. parseArgs runs
 * unstrict and the checks are done here because its strict mode refuses a value that starts with
 * '-' (`--start -10`, `--from -6h`), which these tools take. The options come back in order, so a
 * later one overrides an earlier one as the tool decides.
 */
export function readArgs(argv: readonly string[], spec: Readonly<Record<string, ArgSpec>>): { options: GivenOption[]; positionals: string[] } {
  const { tokens } = parseArgs({ args: [...argv], options: spec, strict: false, allowPositionals: true, tokens: true });
  const options: GivenOption[] = [];
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') positionals.push(t.value);
    if (t.kind !== 'option') continue;
    const s = Object.hasOwn(spec, t.name) ? spec[t.name] : undefined;
    if (s === undefined) throw new UsageError(`unknown option ${t.rawName}`);
    if (s.type === 'string' && t.value === undefined) throw new UsageError(`${t.rawName} needs a value`);
    if (s.type === 'boolean' && t.value !== undefined) throw new UsageError(`${t.rawName} takes no value`);
    options.push({ name: t.name, value: t.value ?? '' });
  }
  return { options, positionals };
}
