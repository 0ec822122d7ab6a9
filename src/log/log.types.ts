/** Record types written to the bid log (INTERFACE.md: every record has `ts` and `type`). */
export type LogType = 'request' | 'response' | 'win' | 'bill' | 'loss' | 'imp' | 'click';

/** A record to log; `ts` and `worker` are added by the log service. */
export interface LogRecord {
  readonly type: LogType;
  /** The bid request id. */
  readonly id: string;
  /** The publisher name (as the reference bidder logs it). */
  readonly name: string;
  readonly [field: string]: unknown;
}
