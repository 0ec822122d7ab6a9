import { Module } from '@nestjs/common';
import { RedisBatch } from './batch';
import { RedisService } from './redis.service';

/**
 * One Redis connection per worker. Nest instantiates a module once per application, so every
 * importer shares the same RedisService (and connection), and the same RedisBatch on it.
 */
@Module({ providers: [RedisService, RedisBatch], exports: [RedisService, RedisBatch] })
export class RedisModule {}
