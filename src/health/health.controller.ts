import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { LogService } from '../log/log.service';
import { Lifecycle } from './lifecycle';

@Controller('health')
export class HealthController {
  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly log: LogService,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * Alive while the event loop answers at all: a wedged process does not answer, and that is the
   * only failure liveness should report (a restart would not help with anything else).
   */
  @Get('live')
  live(@Res() reply: FastifyReply): void {
    void reply.code(200).send({ status: 'ok', worker: this.config.workerId, pid: process.pid });
  }

  /** Ready: started, not shutting down, log sink within its bounds. */
  @Get('ready')
  ready(@Res() reply: FastifyReply): void {
    const problems: string[] = [];
    if (!this.lifecycle.started) problems.push('starting');
    if (this.lifecycle.stopping) problems.push('shutting down');
    if (!this.log.isHealthy()) problems.push('log pipeline over its memory bound');
    const body = { status: problems.length === 0 ? 'ready' : 'not ready', worker: this.config.workerId, pid: process.pid, problems };
    void reply.code(problems.length === 0 ? 200 : 503).send(body);
  }
}
