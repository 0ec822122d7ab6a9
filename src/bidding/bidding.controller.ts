// PROVISIONAL: parses JSON and logs request/response; the real bid path replaces this.
import { Controller, Post, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { LogService } from '../log/log.service';

@Controller('openrtb2')
export class BiddingController {
  constructor(private readonly log: LogService) {}

  @Post('bid')
  bid(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const raw = Buffer.isBuffer(req.body) ? req.body.toString('utf8') : '';
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      void reply.code(400).send({ error: 'malformed JSON' });
      return;
    }
    const id = body && typeof body === 'object' && typeof (body as { id?: unknown }).id === 'string' ? (body as { id: string }).id : '';
    if (!id) {
      void reply.code(400).send({ error: 'missing id' });
      return;
    }
    this.log.log({ type: 'request', id, name: '' }, { key: 'req', json: raw.replace(/[\r\n]+/g, ' ') });
    this.log.log({ type: 'response', id, name: '', status: 204, nbr: 0, reason: 'no_candidates' });
    void reply.code(204).send();
  }
}
