/**
 * The one way a request body becomes a request the auction can run on, shared by the bid path and
 * `/debug/explain`: read (JSON, nesting limit) → shed when it waited too long (the bid path's
 * overload rule) → privacy decision (from the body's signals) → the bidder's typed view
 * (src/openrtb/parse.ts) → the request record and the user key (src/privacy/redact.ts: the log's
 * allowlist, personal data redacted; a keyed hash of the user, only when user data may be used) and
 * the calling exchange. Whatever explains a bid therefore sees the user, the caps and the privacy
 * decision exactly as the bid did.
 */
import { readJson } from '../openrtb/json';
import { InvalidRequestError, NativeRequestCache, parseBidRequest } from '../openrtb/parse';
import type { BidRequest } from '../openrtb/types';
import type { PiiHasher } from '../privacy/pii-hasher';
import type { PrivacyDecision, PrivacyPolicy } from '../privacy/policy';
import { pseudonymize, requestLogJson, userKey } from '../privacy/redact';
import { readPrivacySignals } from '../privacy/signals';

/**
 * A request ready for the auction, with the privacy decision it was prepared under and its request
 * record (the log's text of the body; '' when not asked for). `req` and `privacy` are null for a
 * request shed under overload: read, but not prepared.
 */
export type Prepared =
  | { readonly parsed: unknown; readonly record: string; readonly req: BidRequest; readonly privacy: PrivacyDecision }
  | { readonly parsed: unknown; readonly record: string; readonly req: null; readonly privacy: null };

/**
 * The typed view could not be made. `invalid`: the client's fault (a 400 with `reason`); otherwise a
 * bug of the reader (`cause`). The body was read and the privacy decision made; both go into the log
 * records (`record`: the request record, personal data redacted).
 */
export class PrepareError extends Error {
  constructor(
    readonly parsed: unknown,
    readonly record: string,
    readonly privacy: PrivacyDecision,
    readonly invalid: boolean,
    readonly reason: string,
    override readonly cause: unknown,
  ) {
    super(reason);
  }
}

/** Shedding (SHED_MAX_WAIT_MS, SHED_MARGIN_MS): how long a request may have waited and still be prepared; LOG_RAW_PII. */
export interface PrepareSettings {
  readonly shedMaxWaitMs: number;
  readonly shedMarginMs: number;
  /** Whether a request that consented is logged as sent (LOG_RAW_PII). */
  readonly logRawPii: boolean;
}

export class RequestPreparer {
  /** Native requests sent as strings, read once (the reader's cache). */
  private readonly natives = new NativeRequestCache();
  private readonly shedMaxWaitMs: number;
  private readonly shedMarginMs: number;
  private readonly logRawPii: boolean;

  constructor(
    private readonly policy: PrivacyPolicy,
    private readonly hasher: PiiHasher,
    settings: PrepareSettings = { shedMaxWaitMs: 0, shedMarginMs: 0, logRawPii: false },
  ) {
    this.shedMaxWaitMs = settings.shedMaxWaitMs;
    this.shedMarginMs = settings.shedMarginMs;
    this.logRawPii = settings.logRawPii;
  }

  /**
   * The body of exchange `source`, which waited `waitedMs` before its turn (0: never shed). Throws
   * InvalidRequestError (a 400, nothing to log) when the body is not JSON within the nesting
   * limit, PrepareError when the typed view cannot be made. `record`: whether to make the request
   * record (the bid path logs it; explain does not).
   */
  prepare(raw: Buffer, source: number, waitedMs = 0, record = true): Prepared {
    const parsed = readJson(raw);
    // A shed request is logged as one without consent: its privacy signals are not even read.
    if (this.shedMaxWaitMs > 0 && waitedMs > this.shedBudget(parsed)) return { parsed, record: this.redacted(parsed, record), req: null, privacy: null };
    // What the request may be used for (regs, consent, GPP, COPPA, lmt/dnt), decided once.
    const privacy = this.policy.decide(readPrivacySignals(parsed));
    let req: BidRequest;
    try {
      req = parseBidRequest(parsed, this.natives);
    } catch (e) {
      const invalid = e instanceof InvalidRequestError;
      // An invalid request's body is always kept (rare, and what explains its 400).
      throw new PrepareError(parsed, this.redacted(parsed, true), privacy, invalid, invalid ? e.reason : 'internal_error', e);
    }
    // The log keeps what its allowlist names, IPs truncated and ids hashed, unless the request
    // consented and LOG_RAW_PII is on; caps and tracking payloads know the user by a keyed hash, and
    // only when user data may be used.
    let text = '';
    if (record) {
      const ids = pseudonymize(parsed, req.userId, privacy.userData, this.hasher, { keepRawPii: privacy.consent && this.logRawPii });
      text = ids.record;
      req.userKey = ids.userKey;
    } else {
      req.userKey = userKey(req.userId, privacy.userData, this.hasher);
    }
    req.source = source;
    return { parsed, record: text, req, privacy };
  }

  /** The request record with personal data redacted ('' when not asked for). */
  private redacted(parsed: unknown, record: boolean): string {
    return record ? requestLogJson(parsed, this.hasher, { keepRawPii: false }) : '';
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
