import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { type HttpAnswer, jsonAnswer } from '../http/answer';
import { Route } from '../http/route.decorator';
import { Health } from './health.service';

/** `GET /health/live`, `GET /health/ready`: on the public port (load balancers) and the admin port. */
@Injectable()
export class HealthRoutes {
  constructor(
    private readonly health: Health,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * Alive while the event loop answers at all: a wedged process does not answer, and that is the
   * only failure liveness should report (a restart would not help with anything else).
   */
  @Route({ method: 'GET', path: '/health/live', on: 'both' })
  live(): HttpAnswer {
    return jsonAnswer(200, { status: 'ok', worker: this.config.workerId, host: this.config.hostId, pid: process.pid });
  }

  /**
   * Ready (200) unless a module says it cannot take traffic (503): starting, shutting down, the bid
   * log over its memory bound... `degraded` (still 200) lists what an operator should look at.
   */
  @Route({ method: 'GET', path: '/health/ready', on: 'both' })
  ready(): HttpAnswer {
    const s = this.health.state();
    const body = { status: s.status, worker: this.config.workerId, host: this.config.hostId, pid: process.pid, problems: s.problems, warnings: s.warnings };
    return jsonAnswer(s.status === 'not ready' ? 503 : 200, body);
  }
}
