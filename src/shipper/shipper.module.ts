import { randomUUID } from 'node:crypto';
import { DynamicModule, Module } from '@nestjs/common';
import { ParquetStore } from './parquet-store';
import { SHIPPER_CONFIG, type ShipperConfig } from './shipper.config';
import { ShipperMetrics } from './shipper.metrics';
import { ShipperRedis } from './shipper-redis';
import { ShipperService } from './shipper.service';

/** The shipper's application context (no HTTP framework: its admin server is plain node:http). */
@Module({})
export class ShipperModule {
  static forRoot(config: ShipperConfig): DynamicModule {
    return {
      module: ShipperModule,
      providers: [
        { provide: SHIPPER_CONFIG, useValue: config },
        ShipperMetrics,
        { provide: ShipperRedis, useFactory: () => new ShipperRedis(config.redis, config.shipperId, randomUUID()) },
        {
          provide: ParquetStore,
          useFactory: () => new ParquetStore({ dir: config.dir, shipperId: config.shipperId, threads: config.duckdbThreads, memoryMb: config.duckdbMemoryMb }),
        },
        ShipperService,
      ],
      exports: [ShipperService, ShipperMetrics],
    };
  }
}
