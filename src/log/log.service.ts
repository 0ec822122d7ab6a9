// STUB (to be replaced by the log pipeline work): keeps lines in memory only.
import { Injectable } from '@nestjs/common';
import type { LogRecord } from './log.types';

@Injectable()
export class LogService {
  private readonly lines: string[] = [];
  /** O(1), synchronous, no I/O. `raw` embeds already-serialized JSON text under `raw.key`. */
  log(record: LogRecord, raw?: { key: string; json: string }): void {
    let line = JSON.stringify({ ts: Date.now(), ...record });
    if (raw) line = `${line.slice(0, -1)},"${raw.key}":${raw.json}}`;
    this.lines.push(line);
  }
  /** False when the pipeline is over its memory bound (readiness). */
  isHealthy(): boolean {
    return true;
  }
}
