import * as fs from 'node:fs';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';

/**
 * `mkdir -p`, one level at a time, each new directory made with `mode`. Node's recursive mkdir
 * loops forever on some paths (under /proc: ENOENT for the child while the parent exists), which
 * left a process waiting on it forever; this fails at once with the error of the level that failed.
 */
export async function mkdirEachLevel(dir: string, mode = 0o700): Promise<void> {
  const missing: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      if ((await fsp.stat(d)).isDirectory()) break;
      throw Object.assign(new Error(`${d} is not a directory`), { code: 'ENOTDIR' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(d) === d) throw e;
      missing.push(d);
    }
  }
  for (const d of missing.reverse()) {
    try {
      await fsp.mkdir(d, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/** `mkdirEachLevel`, synchronously (for what a constructor must have before it goes on). */
export function mkdirEachLevelSync(dir: string, mode = 0o700): void {
  const missing: string[] = [];
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    try {
      if (fs.statSync(d).isDirectory()) break;
      throw Object.assign(new Error(`${d} is not a directory`), { code: 'ENOTDIR' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || path.dirname(d) === d) throw e;
      missing.push(d);
    }
  }
  for (const d of missing.reverse()) {
    try {
      fs.mkdirSync(d, { mode });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
  }
}

/**
 * Makes `dir` if need be and writes and deletes a small file in it, within `timeoutMs` (a hung
 * mount never answers; 0: no deadline); rejects with the reason (`ENOTDIR`, `EACCES`, `not answering within … ms`).
 * `onSettled` is called once the file system calls have returned (never, for a hung mount).
 */
export async function probeWritableDir(dir: string, timeoutMs: number, onSettled: () => void = () => undefined): Promise<void> {
  const probe = (async () => {
    await mkdirEachLevel(dir);
    const file = path.join(dir, `.probe-${process.pid}`);
    await fsp.writeFile(file, 'probe', { mode: 0o600 });
    await fsp.unlink(file);
  })();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_r, reject) => {
    if (timeoutMs > 0) timer = setTimeout(() => reject(new Error(`not answering within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([probe, timeout]);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new Error(code ?? (e as Error).message, { cause: e });
  } finally {
    clearTimeout(timer);
    // The file system call itself cannot be cancelled: the caller learns when it has returned.
    probe.then(onSettled, onSettled);
  }
}
