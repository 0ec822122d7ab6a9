/** The PM2 home: PM2's own default, so that PM2's documented commands reach the cluster npm start runs. */
import assert from 'node:assert/strict';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';

const ROOT = path.resolve(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const pm2lib = require(path.join(ROOT, 'scripts', 'pm2.js')) as { pm2Home(env: Record<string, string>): string };

describe('PM2_HOME', () => {
  it("is PM2's own default (~/.pm2) unless set", () => {
    assert.equal(pm2lib.pm2Home({}), path.join(os.homedir(), '.pm2'));
    assert.equal(pm2lib.pm2Home({ PM2_HOME: '/srv/pm2' }), '/srv/pm2');
  });
  it('follows BIDDER_RUN_DIR when that is set (tests and load tests keep their own daemon)', () => {
    assert.equal(pm2lib.pm2Home({ BIDDER_RUN_DIR: '/tmp/run-x' }), '/tmp/run-x/pm2');
    assert.equal(pm2lib.pm2Home({ BIDDER_RUN_DIR: '/tmp/run-x', PM2_HOME: '/srv/pm2' }), '/srv/pm2');
  });
});
