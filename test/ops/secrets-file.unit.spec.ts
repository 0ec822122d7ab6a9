// `npm start`'s secrets.json as an operator meets it: a file that lost one of the two worker secrets
// is refused (a new PII_HASH_SECRET would change every hashed user key), what was generated is said
// exactly, and a directory in its place is refused with a message, not a stack trace.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const secrets = require(path.join(ROOT, 'scripts', 'lib', 'secrets.js')) as {
  localSecrets(runDir: string, env: Record<string, string | undefined>, say?: (m: string) => void): Record<string, string>;
  redisPassword(runDir: string, say?: (m: string) => void): string;
  DamagedSecretsError: new (m: string) => Error;
};

describe('npm start: secrets.json, one secret at a time', () => {
  let dir = '';
  let n = 0;
  const run = (content?: string | object): { run: string; file: string } => {
    const r = path.join(dir, `run-${n++}`);
    fs.mkdirSync(r);
    const file = path.join(r, 'secrets.json');
    if (content !== undefined) fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content), { mode: 0o600 });
    return { run: r, file };
  };
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'secrets-file-'));
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a file that kept TRACKING_SECRET but lost PII_HASH_SECRET is refused, and left as it is', () => {
    const { run: r, file } = run({ TRACKING_SECRET: 't'.repeat(48), REDIS_PASSWORD: 'r'.repeat(48) });
    const before = fs.readFileSync(file, 'utf8');
    assert.throws(
      () => secrets.localSecrets(r, {}),
      (e: Error) => e instanceof secrets.DamagedSecretsError && /holds TRACKING_SECRET but not PII_HASH_SECRET/.test(e.message) && e.message.includes(file),
    );
    assert.equal(fs.readFileSync(file, 'utf8'), before);
  });

  it('the same the other way round; the environment may give the missing one', () => {
    const { run: r } = run({ PII_HASH_SECRET: 'p'.repeat(48) });
    assert.throws(() => secrets.localSecrets(r, {}), /holds PII_HASH_SECRET but not TRACKING_SECRET/);
    assert.deepEqual(secrets.localSecrets(r, { TRACKING_SECRET: 'e'.repeat(48) }), { PII_HASH_SECRET: 'p'.repeat(48) });
  });

  it('says which secrets it generated, and only those', () => {
    const { run: r } = run();
    const said: string[] = [];
    secrets.redisPassword(r, (m) => said.push(m));
    assert.match(said.join('\n'), /generated local secrets \(REDIS_PASSWORD\)/);
    said.length = 0;
    // A file holding only the Redis password (npm start makes it first) gets both worker secrets.
    const got = secrets.localSecrets(r, {}, (m) => said.push(m));
    assert.ok(got.TRACKING_SECRET && got.PII_HASH_SECRET);
    assert.match(said.join('\n'), /generated local secrets \(TRACKING_SECRET, PII_HASH_SECRET\)/);
    said.length = 0;
    const { run: r2 } = run();
    secrets.localSecrets(r2, { TRACKING_SECRET: 'e'.repeat(48) }, (m) => said.push(m));
    assert.match(said.join('\n'), /generated local secrets \(PII_HASH_SECRET\)/);
    assert.doesNotMatch(said.join('\n'), /TRACKING_SECRET,/);
  });

  it('a directory in its place is refused with a message', () => {
    const { run: r, file } = run();
    fs.mkdirSync(file);
    assert.throws(() => secrets.localSecrets(r, {}), (e: Error) => e instanceof secrets.DamagedSecretsError && e.message.includes(file) && /not a file|EISDIR/.test(e.message));
    assert.throws(() => secrets.redisPassword(r), secrets.DamagedSecretsError);
  });
});
