/**
 * The one way a request body becomes a request the auction can run on, shared by the bid path and
 * `/debug/explain`: read (JSON, nesting limit) → shed when it waited too long (the bid path's
 * overload rule) → privacy decision (from the body's signals) → the bidder's typed view
 * (src/openrtb/parse.ts) → the user key (a keyed hash, only when user data may be used) and the
 * calling exchange. Whatever explains a bid therefore sees the user, the caps and the privacy
 * decision exactly as the bid did.
 */
import { readJson } from '../openrtb/json';
import { InvalidRequestError, NativeRequestCache, parseBidRequest } from '../openrtb/parse';
import type { BidRequest } from '../openrtb/types';
import type { PiiHasher } from '../privacy/pii-hasher';
import type { PrivacyDecision, PrivacyPolicy } from '../privacy/policy';
import { readPrivacySignals } from '../privacy/signals';

/**
 * A request ready for the auction, with the privacy decision it was prepared under and the body as
 * read (what the request record is made from). `req` and `privacy` are null for a request shed
 * under overload: read, but not prepared.
 */
export type Prepared = { readonly parsed: unknown; readonly req: BidRequest; readonly privacy: PrivacyDecision } | { readonly parsed: unknown; readonly req: null; readonly privacy: null };

/**
 * The typed view could not be made. `invalid`: the client's fault (a 400 with `reason`); otherwise a
 * bug of the reader (`cause`). The body was read and the privacy decision made; both go into the log records.
 */
export class PrepareError extends Error {
  constructor(
    readonly parsed: unknown,
    readonly privacy: PrivacyDecision,
    readonly invalid: boolean,
    readonly reason: string,
    override readonly cause: unknown,
  ) {
    super(reason);
  }
}

/** Shedding (SHED_MAX_WAIT_MS, SHED_MARGIN_MS): how long a request may have waited and still be prepared. */
export interface ShedLimits {
  readonly shedMaxWaitMs: number;
  readonly shedMarginMs: number;
}

export class RequestPreparer {
  /** Native requests sent as strings, read once (the reader's cache). */
  private readonly natives = new NativeRequestCache();
  private readonly shedMaxWaitMs: number;
  private readonly shedMarginMs: number;

  constructor(
    private readonly policy: PrivacyPolicy,
    private readonly hasher: PiiHasher,
    limits: ShedLimits = { shedMaxWaitMs: 0, shedMarginMs: 0 },
  ) {
    this.shedMaxWaitMs = limits.shedMaxWaitMs;
    this.shedMarginMs = limits.shedMarginMs;
  }

  /**
   * The body of exchange `source`, which waited `waitedMs` before its turn (0: never shed). Throws
   * InvalidRequestError (a 400, nothing to log) when the body is not JSON within the nesting
   * limit, PrepareError when the typed view cannot be made.
   */
  prepare(raw: Buffer, source: number, waitedMs = 0): Prepared {
    const parsed = readJson(raw);
    if (this.shedMaxWaitMs > 0 && waitedMs > this.shedBudget(parsed)) return { parsed, req: null, privacy: null };
    // What the request may be used for (regs, consent, GPP, COPPA, lmt/dnt), decided once.
    const privacy = this.policy.decide(readPrivacySignals(parsed));
    let req: BidRequest;
    try {
      req = parseBidRequest(parsed, this.natives);
    } catch (e) {
      const invalid = e instanceof InvalidRequestError;
      throw new PrepareError(parsed, privacy, invalid, invalid ? e.reason : 'internal_error', e);
    }
    // Caps and tracking payloads know the user by a keyed hash, and only when user data may be used.
    req.userKey = privacy.userData && req.userId !== '' ? this.hasher.hash(req.userId) : '';
    req.source = source;
    return { parsed, req, privacy };
  }

  /**
   * How long a request may have waited before it is shed: min(SHED_MAX_WAIT_MS, tmax −
   * SHED_MARGIN_MS), at least 10 ms (a tmax shorter than the margin is the exchange's choice: what
   * arrives in time is still answered).
   */
  private shedBudget(parsed: unknown): number {
    const tmax = Number((parsed as { tmax?: unknown } | null)?.tmax);
    if (!(tmax > 0)) return this.shedMaxWaitMs;
    return Math.min(this.shedMaxWaitMs, Math.max(10, tmax - this.shedMarginMs));
  }
}
