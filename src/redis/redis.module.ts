import { Module } from '@nestjs/common';
import { RedisService } from './redis.service';

/**
 * One Redis connection per worker. Nest instantiates a module once per application, so every
 * importer shares the same RedisService (and connection).
 */
@Module({ providers: [RedisService], exports: [RedisService] })
export class RedisModule {}
