import { Global, Module } from '@nestjs/common';
import { LogModule } from '../log/log.module';
import { HealthController } from './health.controller';
import { Lifecycle } from './lifecycle';

@Global()
@Module({ imports: [LogModule], controllers: [HealthController], providers: [Lifecycle], exports: [Lifecycle] })
export class HealthModule {}
