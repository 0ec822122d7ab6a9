import { Injectable } from '@nestjs/common';
import { CurrencyService } from '../currency/currency.service';
import { ShadingService } from '../delivery/shading.service';
import type { Notice } from './notice';

/** Bid shading's lessons from notices: a shaded bid's win, bill and loss, in USD. */
@Injectable()
export class ShadingFeedback {
  constructor(
    private readonly shading: ShadingService,
    private readonly currency: CurrencyService,
  ) {}

  /** Bid shading learns from a shaded bid's win, bill and loss notices (`sd`: its segment's device type; none: not shaded). */
  learn(n: Notice, sd: string | string[] | undefined): void {
    const raw = Array.isArray(sd) ? sd[0] : sd;
    if (raw === undefined || raw === '') return;
    const deviceType = Number(raw);
    if (!Number.isInteger(deviceType) || deviceType < 0 || deviceType > 1000) return;
    const p = n.payload;
    if (p.test === true) return;
    const rates = this.currency.current();
    const toUsd = (v: number) => (p.cur === 'USD' ? v : rates.convert(v, p.cur, 'USD'));
    const bid = toUsd(p.price);
    if (bid === null) return;
    // A loss's clearing price is the winner's: the price to beat when the exchange sent no ${AUCTION_MIN_TO_WIN}.
    const minToWin = n.minToWin ?? (n.event === 'loss' ? n.price : null);
    this.shading.learn(n.event as 'win' | 'bill' | 'loss', p, bid, minToWin === null ? null : toUsd(minToWin), deviceType, n.loss);
  }
}
