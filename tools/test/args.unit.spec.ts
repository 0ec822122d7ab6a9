// The command line of `npm run loadtest` (tools/lib/loadtest-args.js): defaults, each way of
// giving a value, and the message of each mistake.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script of scripts/lib, outside the TypeScript build
const args = require(path.join(ROOT, 'tools', 'lib', 'loadtest-args.js')) as {
  HELP: string;
  parseArgs(argv: string[]): Record<string, unknown>;
};

const DEFAULTS = {
  scenario: 'reference',
  duration: null,
  rate: null,
  warmup: null,
  warmupRate: null,
  workers: 2,
  p99: null,
  avg: null,
  rampStart: null,
  rampStep: null,
  rampMax: null,
  rampP99: null,
  notices: null,
  target: 'both',
  out: null,
  resultsMd: null,
  keepLogs: false,
  redisCluster: false,
  logWait: 40,
  cpuRounds: null,
  cpuRoundDuration: '20s',
  generatorRounds: null,
  generatorRoundDuration: '20s',
  overload: 2,
  overloadDuration: '20s',
  validate: false,
  pin: true,
  remote: null,
  sampleInterval: '10s',
  help: false,
};

function errorOf(argv: string[]): string {
  try {
    args.parseArgs(argv);
  } catch (e) {
    return (e as Error).message;
  }
  return assert.fail(`${argv.join(' ')}: accepted`);
}

describe('loadtest command line', () => {
  it('no option: the defaults', () => {
    assert.deepEqual(args.parseArgs([]), DEFAULTS);
  });

  it('every option, as "--name value" and "--name=value"; numbers read as numbers', () => {
    const o = args.parseArgs([
      '--scenario=ramp',
      '--duration',
      '15s',
      '--rate',
      '900',
      '--warmup=2s',
      '--warmup-rate',
      '50',
      '--workers=3',
      '--p99',
      '4',
      '--avg',
      '1.5',
      '--ramp-start',
      '100',
      '--ramp-step=200',
      '--ramp-max',
      '3000',
      '--ramp-p99',
      '12',
      '--notices',
      '0.25',
      '--target',
      'bidder',
      '--out',
      '/tmp/x',
      '--log-wait',
      '5',
      '--cpu-round-duration',
      '7s',
      '--generator-rounds',
      '0',
      '--generator-round-duration=9s',
      '--overload',
      '1.5',
      '--overload-duration',
      '11s',
      '--sample-interval=3s',
      '--keep-logs',
      '--redis-cluster',
      '--validate',
      '--no-pin',
      '--results-md',
    ]);
    assert.deepEqual(o, {
      ...DEFAULTS,
      scenario: 'ramp',
      duration: '15s',
      rate: 900,
      warmup: '2s',
      warmupRate: 50,
      workers: 3,
      p99: 4,
      avg: 1.5,
      rampStart: 100,
      rampStep: 200,
      rampMax: 3000,
      rampP99: 12,
      notices: 0.25,
      target: 'bidder',
      out: '/tmp/x',
      logWait: 5,
      cpuRoundDuration: '7s',
      generatorRounds: 0,
      generatorRoundDuration: '9s',
      overload: 1.5,
      overloadDuration: '11s',
      sampleInterval: '3s',
      keepLogs: true,
      redisCluster: true,
      validate: true,
      pin: false,
      resultsMd: true,
    });
  });

  it('a later option overrides an earlier one', () => {
    assert.equal(args.parseArgs(['--results-md', '--no-results-md']).resultsMd, false);
    assert.equal(args.parseArgs(['--no-results-md', '--results-md']).resultsMd, true);
    assert.equal(args.parseArgs(['--rate', '10', '--rate=20']).rate, 20);
  });

  it('--cpu-rounds with the reference scenario and both targets', () => {
    assert.equal(args.parseArgs(['--cpu-rounds', '3']).cpuRounds, 3);
  });

  it('soak: the default target both becomes the bidder; bidder stays', () => {
    assert.equal(args.parseArgs(['--scenario', 'soak']).target, 'bidder');
    assert.equal(args.parseArgs(['--scenario=soak', '--target', 'bidder']).target, 'bidder');
  });

  it('a URL target: the bid endpoint, or the path given', () => {
    assert.equal(args.parseArgs(['--target', 'http://10.0.0.5:8080']).remote, 'http://10.0.0.5:8080/openrtb2/bid');
    assert.equal(args.parseArgs(['--target=https://bidder.example/rtb']).remote, 'https://bidder.example/rtb');
  });

  it('-h and --help ask for the usage', () => {
    assert.equal(args.parseArgs(['-h']).help, true);
    assert.equal(args.parseArgs(['--rate', '5', '--help']).help, true);
    assert.match(args.HELP, /^usage: npm run loadtest -- \[options\]/);
    assert.match(args.HELP, /--redis-cluster/);
  });

  const mistakes: [string[], string][] = [
    [['--bogus'], 'unknown option --bogus (see --help)'],
    [['--bogus=1'], 'unknown option --bogus=1 (see --help)'],
    [['extra'], 'unknown option extra (see --help)'],
    [['--rate'], '--rate needs a value'],
    [['--scenario', 'fast'], '--scenario must be reference, ramp, overload or soak'],
    [['--scenario', 'soak', '--target', 'baseline'], '--scenario soak runs against the bidder only (its memory and Redis are sampled here): --target bidder'],
    [['--scenario', 'soak', '--target', 'http://10.0.0.5:8080'], '--scenario soak runs against the bidder only (its memory and Redis are sampled here): --target bidder'],
    [['--target', 'everything'], '--target must be both, bidder, baseline or a URL (http://host:port)'],
    [['--target', 'http://'], '--target http://: not a URL'],
    [['--workers', '0'], 'bad value for --workers: 0'],
    [['--workers', '1.5'], 'bad value for --workers: 1.5'],
    [['--rate', '-5'], 'bad value for --rate: -5'],
    [['--rate', 'fast'], 'bad value for --rate: fast'],
    [['--cpu-rounds', '2.5'], 'bad value for --cpu-rounds: 2.5'],
    [['--generator-rounds=-1'], 'bad value for --generator-rounds: -1'],
    [['--validate=1'], '--validate takes no value'],
    [['-x'], 'unknown option -x (see --help)'],
    [['--notices', '2'], '--notices is a share between 0 and 1, not 2'],
    [['--cpu-rounds', '2', '--scenario', 'ramp'], '--cpu-rounds needs the reference scenario and both targets'],
    [['--cpu-rounds', '2', '--target', 'bidder'], '--cpu-rounds needs the reference scenario and both targets'],
  ];
  for (const [argv, message] of mistakes) {
    it(`${argv.join(' ')}: "${message}"`, () => {
      assert.equal(errorOf(argv), message);
    });
  }

  it('the script prints the usage on --help and a mistake with status 2, before starting anything', () => {
    const node = path.join(ROOT, 'node_modules', '.bin', 'node');
    const help = spawnSync(node, [path.join(ROOT, 'tools', 'loadtest.js'), '--help'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(help.status, 0, help.stderr);
    assert.equal(help.stdout.trimEnd(), args.HELP);
    const bad = spawnSync(node, [path.join(ROOT, 'tools', 'loadtest.js'), '--rate'], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr + bad.stdout, /loadtest: --rate needs a value/);
  });
});
