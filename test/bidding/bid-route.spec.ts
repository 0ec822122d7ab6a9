/** BidRoute.handleRaw on a bare HTTP server: what a bug in the bidding does to the answer and the worker. */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Logger } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { BidRoute } from '../../src/bidding/bid-route';
import type { BiddingService } from '../../src/bidding/bidding.service';
import type { Config } from '../../src/config/config';
import { request } from '../support/app';

describe('BidRoute.handleRaw', () => {
  let server: http.Server;
  let url: string;
  let calls = 0;
  before(async () => {
    Logger.overrideLogger(false);
    // Isolates the route: a bidding service with a bug in it.
    const bidding = {
      bid: () => {
        calls++;
        throw new TypeError('a bug');
      },
      refuse: (status: number, reason: string) => ({ status, body: JSON.stringify({ error: reason }), reason }),
    } as unknown as BiddingService;
    const route = new BidRoute({ httpAdapter: null } as unknown as HttpAdapterHost, bidding, { bodyLimitBytes: 1024 } as Config);
    server = http.createServer(route.handleRaw);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/openrtb2/bid`;
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers 500 when the bidding throws, and the process goes on serving', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await request(url, { body: '{"id":"x"}' });
      assert.equal(r.status, 500);
      assert.deepEqual(JSON.parse(r.body.toString()), { error: 'internal error' });
      assert.equal(r.headers['content-length'], String(r.body.length));
    }
    assert.equal(calls, 3);
  });
  it('refuses a body over the limit with 413 without calling the bidding', async () => {
    const before = calls;
    const r = await request(url, { body: Buffer.alloc(2048, 0x20) });
    assert.equal(r.status, 413);
    assert.deepEqual(JSON.parse(r.body.toString()), { error: 'body over 1024 bytes' });
    assert.equal(calls, before);
  });
});
