import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';

/** What lowerPriority did, for the start-up log line. */
export interface PriorityResult {
  nice: number;
  threads: number;
  /** Threads whose nice value could not be set (gone meanwhile, or not permitted). */
  failed: number;
  /** 'idle' when every thread is in the idle I/O class, else why not. */
  ioClass: string;
}

/**
 * Puts every thread of this process at nice `nice` and in the idle I/O class, so that the shipper
 * runs on CPU and disk time the bid path does not want (docs/log-pipeline.md, "Keeping it off the
 * bid path"). Linux keeps the nice value and the I/O priority per thread, and a new thread
 * inherits its creator's: done once at start, before DuckDB and libuv's pool start theirs, every
 * later thread runs at the same priority. The process lowers itself so that this holds however it
 * is started (npm start, pm2 start ecosystem.config.js, pm2-runtime, a container). The I/O class
 * needs util-linux's `ionice` (no system call for it in Node) and takes effect only under an I/O
 * scheduler that honours classes (bfq); without one it is a no-op.
 */
export function lowerPriority(nice: number): PriorityResult {
  const tids = threadIds();
  let failed = 0;
  for (const tid of tids) {
    try {
      os.setPriority(tid, nice);
    } catch {
      failed++;
    }
  }
  let ioClass = 'idle';
  if (tids.length > 0) {
    const r = spawnSync('ionice', ['-c', '3', '-p', ...tids.map(String)], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 5_000 });
    if (r.error) ioClass = `unchanged (ionice: ${r.error.message})`;
    else if (r.status !== 0) ioClass = `unchanged (ionice exit ${r.status}: ${r.stderr.trim()})`;
  }
  return { nice, threads: tids.length, failed, ioClass };
}

function threadIds(): number[] {
  try {
    return fs.readdirSync('/proc/self/task').map(Number).filter((n) => n > 0);
  } catch {
    // Not Linux: the process's own priority (all its threads on other systems).
    return [process.pid];
  }
}
