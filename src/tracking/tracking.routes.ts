import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { LogService } from '../log/log.service';
import { CampaignStore, type CandidateIndex } from '../targeting/campaign-store';
import type { Candidate } from '../targeting/types';
import { CapsService } from './caps.service';
import { isNoticeEvent, NoticeError, readNotice, type Notice } from './notice';
import { NoticeStats } from './notice-stats';
import { PayloadCodec } from './payload';
import { SpendService } from './spend.service';

/** The smallest transparent GIF, the impression pixel's answer. */
const PIXEL = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

/** Creative id → candidate, built once per candidate index (clicks are rare next to bids). */
const byCrid = new WeakMap<CandidateIndex, Map<string, Candidate>>();
function findCreative(index: CandidateIndex, crid: string): Candidate | undefined {
  let m = byCrid.get(index);
  if (m === undefined) {
    m = new Map();
    for (const c of index.candidates) m.set(c.id, c);
    byCrid.set(index, m);
  }
  return m.get(crid);
}

/**
 * Notice and tracker endpoints, the targets of every bid's nurl/burl/lurl, impression tracker and
 * click URL: `GET /t/{win,bill,loss,imp,click}?p=<payload>&s=<signature>&<macros>`.
 * Each logs one record of its type through the log pipeline. Forged or tampered payloads: 403.
 * Registered on the Fastify instance itself, like the bid route (src/bidding/bid-route.ts): notices
 * are hot too (one win notice and one impression per won bid) and skip Nest's router.
 */
@Injectable()
export class TrackingRoutes implements OnModuleInit {
  private readonly codec: PayloadCodec;

  constructor(
    private readonly host: HttpAdapterHost,
    @Inject(CONFIG) config: Config,
    private readonly log: LogService,
    private readonly store: CampaignStore,
    private readonly spend: SpendService,
    private readonly caps: CapsService,
    private readonly stats: NoticeStats,
  ) {
    this.codec = new PayloadCodec(config.trackingSecret);
  }

  onModuleInit(): void {
    // An application context without HTTP (the micro-benchmark, some tests) has no adapter.
    const adapter = this.host.httpAdapter as HttpAdapterHost['httpAdapter'] | null;
    if (adapter === null) return;
    // The handler sends the reply itself.
    adapter.getInstance<FastifyInstance>().get<{ Params: { event: string } }>('/t/:event', async (req, reply) => {
      await this.notice(req.params.event, req, reply);
    });
  }

  async notice(event: string, req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!isNoticeEvent(event)) {
      void reply.code(404).send({ error: 'unknown notice type' });
      return;
    }
    let n: Notice;
    try {
      n = readNotice(event, req.query as Record<string, string | string[] | undefined>, this.codec);
    } catch (e) {
      if (!(e instanceof NoticeError)) throw e;
      this.stats.count(event, 'rejected');
      void reply.code(e.status).send({ error: e.reason });
      return;
    }
    const p = n.payload;
    const record = {
      type: n.event,
      id: p.requestId,
      name: p.publisher,
      bid: p.bidId,
      imp: p.impId,
      crid: p.crid,
      cid: p.cid,
      price: n.price,
      bidPrice: p.price,
      cur: p.cur,
      deal: p.dealId === '' ? null : p.dealId,
      bidTs: p.ts,
    };
    switch (n.event) {
      case 'win':
        this.stats.count('win', 'ok');
        this.log.log(record);
        void reply.code(204).send();
        return;
      case 'loss':
        this.stats.count('loss', 'ok');
        this.log.log({ ...record, loss: n.loss });
        void reply.code(204).send();
        return;
      case 'bill': {
        let counted: boolean | null;
        try {
          counted = (await this.spend.bill(p, n.price)) === 'counted';
        } catch {
          // Spend could not be recorded: ask the exchange to retry (billing is idempotent).
          this.stats.count('bill', 'error');
          this.log.log({ ...record, counted: null });
          void reply.code(503).header('retry-after', '1').send({ error: 'billing store unavailable, retry' });
          return;
        }
        this.stats.count('bill', counted ? 'ok' : 'duplicate');
        this.log.log({ ...record, counted });
        void reply.code(204).send();
        return;
      }
      case 'imp':
        this.stats.count('imp', 'ok');
        this.log.log({ ...record, user: p.userId === '' ? null : p.userId });
        this.caps.recordImpression(p.userId, p.cid, p.crid).catch(() => {
          this.stats.count('imp', 'cap_error');
        });
        void reply.code(200).header('content-type', 'image/gif').header('cache-control', 'no-store').send(PIXEL);
        return;
      case 'click': {
        const c = findCreative(this.store.current(), p.crid);
        this.stats.count('click', c === undefined ? 'unknown_creative' : 'ok');
        this.log.log({ ...record, landing: c?.landingUrl ?? null });
        // Only ever redirect to the landing page of the creative named by the signed payload.
        if (c === undefined) {
          void reply.code(404).send({ error: 'creative no longer exists' });
          return;
        }
        void reply.code(302).header('location', c.landingUrl).header('cache-control', 'no-store').send();
        return;
      }
    }
  }
}
