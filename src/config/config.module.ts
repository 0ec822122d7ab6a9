import { DynamicModule, Global, Module } from '@nestjs/common';
import { CONFIG, Config } from './config';

/** Provides the config that main.ts (or a test) loaded and validated before Nest starts. */
@Global()
@Module({})
export class ConfigModule {
  static forRoot(config: Config): DynamicModule {
    return { module: ConfigModule, providers: [{ provide: CONFIG, useValue: config }], exports: [CONFIG] };
  }
}
