import { probeWritableDir } from '../config/dirs';

/** How often SHIP_DIR is tried while the shipper runs. */
export const STORAGE_PROBE_MS = 10_000;
/** A try that has not finished by then counts as failed (a hung network mount). */
const PROBE_TIMEOUT_MS = 5_000;

/**
 * Readiness of SHIP_DIR before any batch needs it: made if missing, then a small file written and
 * removed (src/config/dirs.ts), at start and every STORAGE_PROBE_MS. Without it a shipper whose
 * directory cannot be written (a path under /proc, a read-only mount, another owner) answered
 * ready until the first frame arrived.
 */
export class StorageProbe {
  private problem: string | null = null;
  private timer: NodeJS.Timeout | null = null;
  /** A try whose file system calls have not returned yet (a hung mount): no second one beside it. */
  private pending = false;

  constructor(private readonly dir: string) {}

  /** Tries once now (resolves when done), then every STORAGE_PROBE_MS. */
  async start(intervalMs = STORAGE_PROBE_MS): Promise<void> {
    this.timer = setInterval(() => void this.probe(), intervalMs);
    this.timer.unref();
    await this.probe();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** The reason SHIP_DIR cannot be written, or null when the last try succeeded. */
  status(): string | null {
    return this.problem;
  }

  async probe(): Promise<void> {
    if (this.pending) return;
    this.pending = true;
    try {
      await probeWritableDir(this.dir, PROBE_TIMEOUT_MS, () => (this.pending = false));
      this.problem = null;
    } catch (e) {
      this.problem = `SHIP_DIR ${this.dir} cannot be written (${(e as Error).message}): batches cannot be stored`;
    }
  }
}
