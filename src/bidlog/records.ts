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

/**
 * A bid request that reached the bidding code. Every request has its compact fields (CompactRequest,
 * written by src/bidlog/compact.ts from the typed request; only `bytes`, `hash` and `body` when no
 * typed view could be made); its redacted body follows as `req` (raw JSON) only when `body` is true
 * (LOG_REQUEST_SAMPLE). Records of earlier versions have `req` always and no compact fields.
 */
export interface RequestRecord extends Head<'request'> {
  /** The calling exchange (`open` without EXCHANGES_FILE); the bid path always writes it. */
  readonly exchange?: string;
  /** true for a `test` = 1 request, absent otherwise. */
  readonly test?: boolean;
}

/** The compact fields of a request record (src/bidlog/compact.ts writes them, in this order). */
export interface CompactRequest {
  /** `site`, `app` or `dooh`. */
  readonly inv?: string;
  readonly domain?: string;
  /** The app bundle ('' for a site). */
  readonly bundle?: string;
  /** device.devicetype (0: absent). */
  readonly devicetype?: number;
  /** device.os, lower-case. */
  readonly os?: string;
  /** device.geo.country, ISO-3166-1 alpha-3. */
  readonly country?: string;
  readonly imps?: number;
  /** Media asked for: banner, video, native. */
  readonly media?: readonly string[];
  /** Banner and video sizes asked for, `WxH`. */
  readonly sizes?: readonly string[];
  /** Each imp's bidfloor and its currency. */
  readonly floors?: readonly number[];
  readonly floorcurs?: readonly string[];
  /** Deal ids of the imps' PMPs. */
  readonly deals?: readonly string[];
  /** The currencies the request allows. */
  readonly curs?: readonly string[];
  readonly at?: number;
  readonly tmax?: number;
  /** The user key (keyed hash; '' without one or without consent). */
  readonly user?: string;
  /** The body's size in bytes, as received (decoded). */
  readonly bytes?: number;
  /** SHA-1 of the body, first 16 bytes, base64url. */
  readonly hash?: string;
  /** Whether the redacted body follows as `req`. */
  readonly body?: boolean;
}

/** One bid of a response record: what identifies it, and the shading input (`value`). */
export interface CompactBid {
  readonly id: string;
  readonly impid: string;
  /** The bid price, in the response's `cur`. */
  readonly price: number;
  readonly cid: string;
  readonly crid: string;
  readonly dealid: string | null;
  readonly mtype: number;
  /** The candidate's value (the bid before shading), in `cur`. */
  readonly value: number;
}

/** The compact fields of a response record with bids. */
export interface CompactResponse {
  readonly cur?: string;
  /** The campaign set's version (src/bidlog/compact.ts markupVersion): with the bid's fields, what rebuilds its markup. */
  readonly mv?: string;
  readonly bids?: readonly CompactBid[];
}

/** The answer to a bid request: its bids in compact form (CompactResponse); the full response follows as `res` only when the request's body was kept. */
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
  readonly request: RequestRecord & CompactRequest & Stamp & { readonly req?: unknown };
  readonly response: ResponseRecord & CompactResponse & Stamp & { readonly res?: unknown };
  readonly notice: NoticeRecord & Stamp;
  readonly failed: FailedRecord & Stamp;
}
