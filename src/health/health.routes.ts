import { Inject, Injectable, type OnModuleInit, Optional } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { type HttpAnswer, jsonAnswer } from '../http/answer';
import { HttpServers } from '../http/http.module';
import { Health } from './health.service';

/** `GET /health/live`, `GET /health/ready`: on the public port (load balancers) and the admin port. */
@Injectable()
export class HealthRoutes implements OnModuleInit {
  constructor(
    @Optional() @Inject(HttpServers) private readonly servers: HttpServers | null,
    private readonly health: Health,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  onModuleInit(): void {
    if (this.servers === null) return;
    for (const server of [this.servers.public, this.servers.admin]) {
      server.route({ method: 'GET', path: '/health/live', route: { handle: () => this.live() } });
      server.route({ method: 'GET', path: '/health/ready', route: { handle: () => this.ready() } });
    }
  }

  /**
   * Alive while the event loop answers at all: a wedged process does not answer, and that is the
   * only failure liveness should report (a restart would not help with anything else).
   */
  live(): HttpAnswer {
    return jsonAnswer(200, { status: 'ok', worker: this.config.workerId, host: this.config.hostId, pid: process.pid });
  }

  /**
   * Ready (200) unless a module says it cannot take traffic (503): starting, shutting down, the bid
   * log over its memory bound... `degraded` (still 200) lists what an operator should look at.
   */
  ready(): HttpAnswer {
    const s = this.health.state();
    const body = { status: s.status, worker: this.config.workerId, host: this.config.hostId, pid: process.pid, problems: s.problems, warnings: s.warnings };
    return jsonAnswer(s.status === 'not ready' ? 503 : 200, body);
  }
}
