import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '../config/config';
import { errorAnswer, type HttpAnswer, jsonAnswer } from '../http/answer';
import { Route } from '../http/route.decorator';
import type { HttpRoute, RouteRequest } from '../http/server';
import { InvalidRequestError } from '../openrtb/parse';
import { ExplainService } from './explain.service';
import { PrepareError } from './prepare';

export const EXPLAIN_PATH = '/debug/explain';

/**
 * `POST /debug/explain` on the admin port (only with DEBUG_ENDPOINTS=true): for a bid request, what
 * the bid path would answer (`status`, `reason`) and, for each imp, every candidate with the filter
 * that rejected it, or null when it was eligible: the no-bid reasons an operator needs to see why a
 * campaign does not bid. The bid path's own preparation and auction (ExplainService), read-only:
 * no log record, no budget taken.
 */
@Injectable()
export class DebugRoute implements HttpRoute {
  constructor(
    @Inject(CONFIG) private readonly config: Config,
    private readonly explainer: ExplainService,
  ) {}

  @Route({ method: 'POST', path: EXPLAIN_PATH, on: 'admin' })
  handle(r: RouteRequest): HttpAnswer {
    if (!this.config.debugEndpoints) return errorAnswer(404, 'debug endpoints are off (DEBUG_ENDPOINTS=true turns them on)');
    try {
      return jsonAnswer(200, this.explainer.explain(r.body!));
    } catch (e) {
      if (e instanceof InvalidRequestError) return errorAnswer(400, e.reason);
      if (e instanceof PrepareError && e.invalid) return errorAnswer(400, e.reason);
      throw e;
    }
  }
}
