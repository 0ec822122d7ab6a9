/**
 * The one way a request body becomes a request the auction can run on, shared by the bid path and
 * `/debug/explain`: read (JSON, nesting limit) → privacy decision (from the body's signals) → the
 * bidder's typed view (src/openrtb/parse.ts) → the user key (a keyed hash, only when user data may
 * be used) and the calling exchange. Whatever explains a bid therefore sees the user, the caps and
 * the privacy decision exactly as the bid did.
 */
import { readJson } from '../openrtb/json';
import { InvalidRequestError, NativeRequestCache, parseBidRequest } from '../openrtb/parse';
import type { BidRequest } from '../openrtb/types';
import type { PiiHasher } from '../privacy/pii-hasher';
import type { PrivacyDecision, PrivacyPolicy } from '../privacy/policy';
import { readPrivacySignals } from '../privacy/signals';

/** A request ready for the auction, with the privacy decision it was prepared under. */
export interface Prepared {
  readonly req: BidRequest;
  readonly privacy: PrivacyDecision;
}

/**
 * The typed view could not be made. `invalid`: the client's fault (a 400 with `reason`); otherwise a
 * bug of the reader (`cause`). The privacy decision was made already and goes into the log records.
 */
export class PrepareError extends Error {
  constructor(
    readonly privacy: PrivacyDecision,
    readonly invalid: boolean,
    readonly reason: string,
    override readonly cause: unknown,
  ) {
    super(reason);
  }
}

export class RequestPreparer {
  /** Native requests sent as strings, read once (the reader's cache). */
  private readonly natives = new NativeRequestCache();

  constructor(
    private readonly policy: PrivacyPolicy,
    private readonly hasher: PiiHasher,
  ) {}

  /** The body as JSON within the nesting limit; throws InvalidRequestError (a 400). */
  read(raw: Buffer): unknown {
    return readJson(raw);
  }

  /**
   * The privacy decision and the typed request of a body `read` returned, for exchange `source`.
   * Throws PrepareError (with the decision) when the typed view cannot be made.
   */
  prepare(parsed: unknown, source: number): Prepared {
    // What the request may be used for (regs, consent, GPP, COPPA, lmt/dnt), decided once.
    const privacy = this.policy.decide(readPrivacySignals(parsed));
    let req: BidRequest;
    try {
      req = parseBidRequest(parsed, this.natives);
    } catch (e) {
      const invalid = e instanceof InvalidRequestError;
      throw new PrepareError(privacy, invalid, invalid ? e.reason : 'internal_error', e);
    }
    // Caps and tracking payloads know the user by a keyed hash, and only when user data may be used.
    req.userKey = privacy.userData && req.userId !== '' ? this.hasher.hash(req.userId) : '';
    req.source = source;
    return { req, privacy };
  }
}
