import { Module } from '@nestjs/common';
import { RedisModule } from '../redis/redis.module';
import { LogService } from './log.service';

@Module({ imports: [RedisModule], providers: [LogService], exports: [LogService] })
export class LogModule {}
