import { Controller, Get, Inject, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { CONFIG, type Config } from '../config/config';
import { Health } from './health.service';

/** `GET /health/live`, `GET /health/ready`: on the public port (load balancers) and the admin port. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: Health,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * Alive while the event loop answers at all: a wedged process does not answer, and that is the
   * only failure liveness should report (a restart would not help with anything else).
   */
  @Get('live')
  live(@Res() reply: FastifyReply): void {
    void reply.code(200).send({ status: 'ok', worker: this.config.workerId, host: this.config.hostId, pid: process.pid });
  }

  /**
   * Ready (200) unless a module says it cannot take traffic (503): starting, shutting down, the bid
   * log over its memory bound... `degraded` (still 200) lists what an operator should look at.
   */
  @Get('ready')
  ready(@Res() reply: FastifyReply): void {
    const s = this.health.state();
    const body = { status: s.status, worker: this.config.workerId, host: this.config.hostId, pid: process.pid, problems: s.problems, warnings: s.warnings };
    void reply.code(s.status === 'not ready' ? 503 : 200).send(body);
  }
}
