/**
 * The records of the bid log, one typed kind per `type` (docs/log-pipeline.md, "Records"). What a
 * caller hands to `LogService.log()` is a `LogRecord`; the line written adds `ts`, `worker` and
 * `host` in front, and the bid path's raw JSON (`req`, `res`) at the end. The Parquet schema
 * (src/bidlog/schema.ts) is typed against these lines, so a field added here that the schema does
 * not place fails to compile.
 */

export const LOG_TYPES = ['request', 'response', 'win', 'bill', 'loss', 'imp', 'click'] as const;
/** Record types written to the bid log (every record has `ts` and `type`). */
export type LogType = (typeof LOG_TYPES)[number];
export type NoticeType = Exclude<LogType, 'request' | 'response'>;

interface Head<T extends LogType> {
  readonly type: T;
  /** The bid request id. */
  readonly id: string;
  /** The publisher: its name, else its id (site or app); empty when the request has none. */
  readonly name: string;
}

/** A bid request that reached the bidding code; its body follows as `req` (raw JSON). */
export interface RequestRecord extends Head<'request'> {
  /** The calling exchange (`open` without EXCHANGES_FILE); the bid path always writes it. */
  readonly exchange?: string;
  /** true for a `test` = 1 request, absent otherwise. */
  readonly test?: boolean;
}

/** The answer to a bid request; a bid's JSON follows as `res` (raw JSON). */
export interface ResponseRecord extends Head<'response'> {
  readonly exchange?: string;
  readonly test?: boolean;
  /** HTTP status: 200 bid, 204 no bid, 400 invalid. */
  readonly status: number;
  /** The no-bid or 400 reason (absent or null on a bid). */
  readonly reason?: string | null;
  /** The bidder's handler time, ms. */
  readonly ms?: number;
  /** The privacy decision's reason (`none` when user data may be used). */
  readonly privacy?: string;
  /** Bids left out to keep the answer within ANSWER_MAX_BYTES. */
  readonly dropped?: number;
}

/** A notice or tracker of one bid (from its signed payload), with what Redis said of it. */
export interface NoticeRecord extends Head<NoticeType> {
  readonly bid: string;
  readonly imp: string;
  readonly crid: string;
  readonly cid: string;
  /** The clearing price the exchange substituted, in `cur`; null when it did not. */
  readonly price: number | null;
  /** The bid's price, in `cur`. */
  readonly bidPrice: number;
  readonly cur: string;
  readonly deal: string | null;
  /** When the bid was made, epoch ms. */
  readonly bidTs: number;
  readonly exchange: string;
  readonly test?: boolean;
  /** loss: the OpenRTB loss reason code. */
  readonly loss?: number | null;
  /** true the first time for this bid, false for a repeat (or a test bid's bill/imp), null when Redis could not say. */
  readonly counted?: boolean | null;
  /** click: the creative's landing page (null when the creative is gone). */
  readonly landing?: string | null;
  /** imp: the user key the caps counted (null: none). */
  readonly user?: string | null;
}

/** What a record becomes when one of its values cannot be serialized (BigInt, a cycle): its identity and why. */
export interface FailedRecord extends Head<LogType> {
  readonly error: string;
}

/** A record to log; `ts`, `worker` and `host` are added by the log service. */
export type LogRecord = RequestRecord | ResponseRecord | NoticeRecord | FailedRecord;

/** The fields the log service writes in front of every record. */
export interface Stamp {
  /** Epoch ms when the record was logged. */
  readonly ts: number;
  readonly worker: string;
  readonly host: string;
}

/** Every line as written, by kind: what the shipper reads. */
export interface RecordLines {
  readonly request: RequestRecord & Stamp & { readonly req: unknown };
  readonly response: ResponseRecord & Stamp & { readonly res?: unknown };
  readonly notice: NoticeRecord & Stamp;
  readonly failed: FailedRecord & Stamp;
}
