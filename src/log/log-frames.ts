import type { Segment } from './journal';

/** A compressed batch in memory, waiting for (or on its way to) Redis. */
export interface Frame {
  readonly id: string;
  readonly data: Buffer;
  readonly records: number;
  readonly rawBytes: number;
  readonly createdAt: number;
  readonly compressMs: number;
  /** The journal segment holding its records (deleted once all its frames are safe). */
  readonly seg: Segment | null;
  inFlight: boolean;
  spilling: boolean;
}

/**
 * The compressed frames only in memory, oldest first: compression adds them, a push to Redis or a
 * write to the spill directory removes them.
 */
export class PendingFrames {
  list: Frame[] = [];
  bytes = 0;
  records = 0;

  add(f: Frame): void {
    this.list.push(f);
    this.bytes += f.data.length;
    this.records += f.records;
  }

  remove(f: Frame): void {
    const i = this.list.indexOf(f);
    if (i === -1) return;
    this.list.splice(i, 1);
    this.bytes -= f.data.length;
    this.records -= f.records;
  }

  clear(): void {
    this.list = [];
    this.bytes = 0;
    this.records = 0;
  }
}

/** Neither on its way to Redis nor to disk. */
export function spillable(f: Frame): boolean {
  return !f.inFlight && !f.spilling;
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
