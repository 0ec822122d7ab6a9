import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { AppModule } from './app.module';
import type { Config } from './config/config';
import { Lifecycle } from './health/lifecycle';

/**
 * Builds the Nest application on Fastify. Bodies are read as raw buffers by one catch-all parser
 * so that the bid route decides itself about gzip, size (413) and malformed JSON (400):
 * exchanges send JSON with or without Content-Type (OpenRTB 2.6 §2.3).
 */
export async function createApp(config: Config): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    bodyLimit: config.bodyLimitBytes,
    // Exchanges keep connections alive (OpenRTB 2.6 §2.1): don't close idle ones early.
    keepAliveTimeout: 65_000,
    // On close, finish what arrives on open keep-alive connections instead of answering 503,
    // so that `pm2 reload` fails no request; idle connections are closed at once.
    return503OnClosing: false,
    forceCloseConnections: 'idle',
    logger: false,
  });
  const app = await NestFactory.create<NestFastifyApplication>(AppModule.forRoot(config), adapter, {
    bodyParser: false,
    logger: ['error', 'warn'],
  });
  const fastify = app.getHttpAdapter().getInstance();
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: config.bodyLimitBytes }, (_req, body, done) => {
    done(null, body);
  });
  app.enableShutdownHooks();
  return app;
}

/** Starts listening and marks the worker ready. */
export async function listen(app: NestFastifyApplication, config: Config): Promise<string> {
  await app.listen(config.port, config.host);
  app.get(Lifecycle).started = true;
  return app.getUrl();
}
