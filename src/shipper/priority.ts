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
  /** 'idle' when every thread runs under SCHED_IDLE, else why not. */
  cpuClass: string;
}

/**
 * Puts every thread of this process in the idle scheduling class (SCHED_IDLE) at nice `nice` and in
 * the idle I/O class, so that the shipper runs on CPU and disk time the bid path does not want
 * (docs/log-pipeline.md, "Keeping it off the bid path"). A worker that wakes up preempts a SCHED_IDLE
 * thread at once, where a nice-19 one may first finish its time slice (measured, bench/RESULTS.md:
 * no difference in the workers' p99 that stands out of the noise; what the shipper still costs them
 * is not CPU time). Linux keeps the policy, the nice value and the I/O priority per thread, and a
 * new thread inherits its creator's: done once at start, before DuckDB and libuv's pool start
 * theirs, every later thread runs at the same priority.
 * The process lowers itself so that this holds however it is started (npm start, pm2 start
 * ecosystem.config.js, pm2-runtime, a container). Node has no system call for either class:
 * util-linux's `chrt` and `ionice` set them. The I/O class takes effect only under an I/O scheduler
 * that honours classes (bfq); without one it is a no-op. Where `chrt` is missing, nice alone remains.
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
  const ioClass = tids.length > 0 ? run('ionice', ['-c', '3', '-p', ...tids.map(String)]) : 'unchanged (no threads found)';
  // -a: every thread of the process; 0 is the only priority SCHED_IDLE takes.
  const cpuClass = run('chrt', ['--idle', '--all-tasks', '--pid', '0', String(process.pid)]);
  return { nice, threads: tids.length, failed, ioClass, cpuClass };
}

/** Runs a util-linux tool: 'idle' when it succeeded, else why not. */
function run(tool: string, args: string[]): string {
  const r = spawnSync(tool, args, { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 5_000 });
  if (r.error) return `unchanged (${tool}: ${r.error.message})`;
  if (r.status !== 0) return `unchanged (${tool} exit ${r.status}: ${r.stderr.trim()})`;
  return 'idle';
}

function threadIds(): number[] {
  try {
    return fs.readdirSync('/proc/self/task').map(Number).filter((n) => n > 0);
  } catch {
    // Not Linux: the process's own priority (all its threads on other systems).
    return [process.pid];
  }
}
