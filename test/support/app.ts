/** Boots the real app in-process on a free loopback port, against a real test Redis. */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { adminUrl, createApp, listen } from '../../src/app';
import { loadConfig, type Config } from '../../src/config/config';
import { startTestRedis, type TestRedis } from './redis';

export interface TestApp {
  app: NestFastifyApplication;
  config: Config;
  url: string;
  /** The admin port (metrics, debug routes). */
  adminUrl: string;
  redis: TestRedis;
  close(): Promise<void>;
}

export async function startTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const redis = await startTestRedis();
  const spill = fs.mkdtempSync(path.join(os.tmpdir(), 'bidder-spill-'));
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    ADMIN_PORT: '0',
    REDIS_URL: redis.url,
    LOG_SPILL_DIR: spill,
    TRACKING_SECRET: 'test-secret',
    TRACKING_BASE_URL: 'http://127.0.0.1:9',
    // Test files run side by side on a shared machine: a request that waited for a busy core must
    // get its bid, not a shed no-bid. The tests of shedding set SHED_MAX_WAIT_MS themselves.
    SHED_MAX_WAIT_MS: '0',
    ...env,
  });
  const app = await createApp(config);
  const url = await listen(app, config);
  return {
    app,
    config,
    url: url.replace('[::1]', '127.0.0.1'),
    adminUrl: adminUrl(app),
    redis,
    async close() {
      // Tolerates an app the test already closed itself (to flush the log before reading it).
      await app.close().catch(() => undefined);
      await redis.stop();
      fs.rmSync(spill, { recursive: true, force: true });
    },
  };
}

export interface HttpAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 16 });

/** A raw HTTP request (no automatic decompression, so tests see exactly what was sent). */
export function request(
  url: string,
  opts: { method?: string; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const r = http.request(url, { method: opts.method ?? 'POST', headers: opts.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    r.on('error', reject);
    r.end(opts.body);
  });
}
