import { Injectable } from '@nestjs/common';
import type { HealthProblem } from './health-problem';

/** What a module reports about itself: nothing when fine, else how bad and why (health-problem.ts). */
export type { HealthProblem } from './health-problem';

export interface HealthCheck {
  readonly name: string;
  /** Called on every readiness probe and metrics scrape: cheap, no I/O. */
  problem(): HealthProblem | null;
}

export interface HealthState {
  readonly status: 'ready' | 'degraded' | 'not ready';
  /** What makes it not ready (503). */
  readonly problems: string[];
  /** What degrades it (still 200). */
  readonly warnings: string[];
}

/**
 * The worker's health: every module registers its checks here (the worker's own, Redis and the
 * spill directory: worker-checks.ts; delivery registers the budgets' age in
 * src/delivery/delivery.module.ts); `/health/ready` and `bidder_ready` read them.
 */
@Injectable()
export class Health {
  private readonly checks: HealthCheck[] = [];

  register(check: HealthCheck): void {
    this.checks.push(check);
  }

  state(): HealthState {
    const problems: string[] = [];
    const warnings: string[] = [];
    for (const c of this.checks) {
      const p = c.problem();
      if (p === null) continue;
      (p.level === 'not_ready' ? problems : warnings).push(p.text);
    }
    return { status: problems.length > 0 ? 'not ready' : warnings.length > 0 ? 'degraded' : 'ready', problems, warnings };
  }
}
