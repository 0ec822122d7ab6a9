import type * as querystring from 'node:querystring';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { CurrencyService } from '../currency/currency.service';
import { Clock } from '../delivery/clock';
import { type Notice, type NoticeEvent, readNotice } from './notice';
import { PayloadCodec } from './payload';

/**
 * Reads a notice or tracker call (notice.ts) with this worker's codec, the rates in use and the
 * clock: the payload verified, its age within BILL_DEDUPE_TTL_SECONDS. No I/O.
 */
@Injectable()
export class NoticeReader {
  private readonly maxAgeMs: number;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly codec: PayloadCodec,
    private readonly currency: CurrencyService,
    private readonly clock: Clock,
  ) {
    this.maxAgeMs = config.billDedupeTtlSeconds * 1000;
  }

  /** The notice of this call; throws NoticeError (its status and reason) for one that is refused. */
  read(event: NoticeEvent, query: querystring.ParsedUrlQuery): Notice {
    return readNotice(event, query, this.codec, this.maxAgeMs, this.currency.current(), this.clock.now());
  }
}
