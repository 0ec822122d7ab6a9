import { Controller, Get, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { LogService } from '../log/log.service';
import { Lifecycle } from './lifecycle';

@Controller('health')
export class HealthController {
  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly log: LogService,
  ) {}

  /** Alive while the event loop answers at all. */
  @Get('live')
  live(@Res() reply: FastifyReply): void {
    void reply.code(200).send({ status: 'ok' });
  }

  /** Ready: started, not shutting down, log sink within its bounds. */
  @Get('ready')
  ready(@Res() reply: FastifyReply): void {
    const problems: string[] = [];
    if (!this.lifecycle.started) problems.push('starting');
    if (this.lifecycle.stopping) problems.push('shutting down');
    if (!this.log.isHealthy()) problems.push('log pipeline over its memory bound');
    if (problems.length === 0) void reply.code(200).send({ status: 'ready' });
    else void reply.code(503).send({ status: 'not ready', problems });
  }
}
