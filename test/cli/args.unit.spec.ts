import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readArgs, UsageError } from '../../src/cli-args';

const SPEC = { start: { type: 'string' }, from: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;

describe('readArgs (node:util.parseArgs, checked)', () => {
  it('gives the options in order and the positionals apart', () => {
    assert.deepEqual(readArgs(['list', '--start', '3', '--json', '--start=4', '-h'], SPEC), {
      options: [{ name: 'start', value: '3' }, { name: 'json', value: '' }, { name: 'start', value: '4' }, { name: 'help', value: '' }],
      positionals: ['list'],
    });
  });

  it('takes a value that starts with a dash, as the hand-written parsers did (`--start -10`, `--from -6h`)', () => {
    assert.deepEqual(readArgs(['--start', '-10', '--from', '-6h'], SPEC).options, [{ name: 'start', value: '-10' }, { name: 'from', value: '-6h' }]);
  });

  it('refuses an unknown option, a missing value and a value given to a flag, saying which', () => {
    const refused = (argv: string[], message: RegExp): void => {
      assert.throws(() => readArgs(argv, SPEC), (e: unknown) => e instanceof UsageError && message.test(e.message), argv.join(' '));
    };
    refused(['--strat', '3'], /^unknown option --strat$/);
    refused(['-x'], /^unknown option -x$/);
    refused(['list', '--start'], /^--start needs a value$/);
    refused(['--json=yes'], /^--json takes no value$/);
    refused(['--constructor'], /^unknown option --constructor$/);
  });

  it('reads everything after -- as positionals', () => {
    assert.deepEqual(readArgs(['--', '--json'], SPEC), { options: [], positionals: ['--json'] });
  });
});
