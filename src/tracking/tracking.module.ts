import { Module } from '@nestjs/common';
import { DeliveryModule } from '../delivery/delivery.module';
import { LogModule } from '../log/log.module';
import { RedisModule } from '../redis/redis.module';
import { TargetingModule } from '../targeting/targeting.module';
import { CONFIG, type Config } from '../config/config';
import { NoticeLog } from './notice-log';
import { NoticeMarkers, RedisNoticeMarkers } from './notice-markers';
import { NoticeReader } from './notice-reader';
import { NoticeRoute } from './notice.route';
import { NoticeStats } from './notice-stats';
import { PayloadCodec, trackingKeys } from './payload';
import { RedisClock } from './redis-clock';
import { ShadingFeedback } from './shading-feedback';
import { TrackingMetrics } from './tracking.metrics';

/** One codec per worker, built from the config's tracking keys (the bid path signs with it, the notice route verifies). */
const codec = { provide: PayloadCodec, useFactory: (c: Config) => new PayloadCodec(trackingKeys(c)), inject: [CONFIG] };

/**
 * Notices and trackers: the signed tracking payload (one codec for the worker) and the routes that
 * read it back; their store of first-notice markers (NoticeMarkers, on Redis).
 */
@Module({
  imports: [LogModule, TargetingModule, DeliveryModule, RedisModule],
  providers: [NoticeRoute, NoticeReader, NoticeLog, ShadingFeedback, { provide: NoticeMarkers, useClass: RedisNoticeMarkers }, NoticeStats, TrackingMetrics, RedisClock, codec],
  exports: [NoticeStats, PayloadCodec, RedisClock],
})
export class TrackingModule {}
