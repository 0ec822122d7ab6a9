'use strict';
// /proc readings for the load test: CPU time and memory of processes, machine-wide CPU, and the
// PM2 processes (daemon + workers) of one PM2_HOME.
const { execFile, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

// USER_HZ: 100 on every Linux the project targets (`getconf CLK_TCK`).
const HZ = 100;

/** CPU seconds (user + system, plus reaped children) of a process, or null when it is gone. */
function cpuSeconds(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Fields after the command (which may contain spaces) start after the last ')'.
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // f[0] is field 3 (state): utime is field 14, stime 15, cutime 16, cstime 17.
  const ticks = Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
  return ticks / HZ;
}

/** glibc's arenas of threads other than the main one: 64 MiB each, reserved and used together. */
const ARENA = 64 * 1024 * 1024;

/**
 * Resident kB of the mappings by kind: glibc arenas of other threads (an anonymous 64 MiB-aligned
 * region whose used and reserved parts add up to 64 MiB), the main arena ([heap]), and the rest;
 * null when the process is gone.
 */
function mappings(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  } catch {
    return null;
  }
  const maps = [];
  let cur = null;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) {
      cur = { start: parseInt(head[1], 16), end: parseInt(head[2], 16), perms: head[3], inode: Number(head[4]), name: head[5], rss: 0 };
      maps.push(cur);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && cur) cur.rss = Number(rss[1]);
  }
  const out = { arenas: 0, arenaCount: 0, heap: 0, otherAnon: 0, file: 0 };
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i];
    if (m.name === '[heap]') out.heap += m.rss;
    else if (m.inode !== 0 || m.name.startsWith('/')) out.file += m.rss;
    else if (m.start % ARENA === 0 && m.perms.startsWith('rw')) {
      const next = maps[i + 1];
      const reserved = next && next.start === m.end && next.perms.startsWith('---') && next.inode === 0 ? next.end - next.start : 0;
      if (m.end - m.start + reserved === ARENA) {
        out.arenas += m.rss;
        out.arenaCount++;
      } else out.otherAnon += m.rss;
    } else out.otherAnon += m.rss;
  }
  return out;
}

/** {rssMB, hwmMB} from /proc/<pid>/status, or null when the process is gone. */
function memory(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  } catch {
    return null;
  }
  const kb = (key) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) / 1024 : null;
  };
  return { rssMB: kb('VmRSS'), hwmMB: kb('VmHWM') };
}

/**
 * Proportional set size in MB from /proc/<pid>/smaps_rollup: the process's resident pages, each
 * page shared with n processes counted 1/n (the Node binary's text is resident once for every
 * process that runs it; VmRSS counts it in each). Null when the process is gone or the kernel has no
 * smaps_rollup.
 */
function pssMB(pid) {
  try {
    const m = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/** Machine-wide CPU seconds {busy, total} since boot, from /proc/stat. */
function machineCpu() {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal guest guest_nice (guest is counted in user).
  const idle = v[3] + (v[4] || 0);
  const total = v.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: (total - idle) / HZ, total: total / HZ, steal: (v[7] || 0) / HZ };
}

function machine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpus.length ? cpus[0].model.trim() : 'unknown',
    cpus: cpus.length,
    memoryGB: Math.round((os.totalmem() / 1024 ** 3) * 10) / 10,
    kernel: `${os.type()} ${os.release()}`,
    hostname: os.hostname(),
  };
}

const PM2_BIN = path.resolve(__dirname, '..', '..', 'node_modules', 'pm2', 'bin', 'pm2');

/** Runs the PM2 CLI on the project's Node (so a daemon it spawns runs Node 24 too). */
function pm2(args, { home, env = {}, timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [PM2_BIN, ...args],
      { env: { ...process.env, ...env, PM2_HOME: home }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          err.message += `\n${stdout}\n${stderr}`;
          reject(err);
        } else resolve(stdout);
      },
    );
  });
}

/** The PM2 daemon's pid for a PM2_HOME, or null when no daemon runs there. */
function pm2DaemonPid(home) {
  try {
    const pid = Number(fs.readFileSync(path.join(home, 'pm2.pid'), 'utf8').trim());
    process.kill(pid, 0);
    return pid;
  } catch {
    return null;
  }
}

/** The processes of a PM2 daemon: [{name, pmId, pid, status, restarts}]; [] when none runs. */
async function pm2Processes(home) {
  if (!pm2DaemonPid(home)) return [];
  const out = await pm2(['jlist'], { home });
  const start = out.indexOf('[');
  if (start < 0) return [];
  const list = JSON.parse(out.slice(start));
  return list.map((p) => ({
    name: p.name,
    pmId: p.pm_id,
    pid: p.pid,
    status: p.pm2_env ? p.pm2_env.status : 'unknown',
    restarts: p.pm2_env ? p.pm2_env.restart_time : 0,
  }));
}

/** Below this many cores k6 and the servers share them: too few to give each a core of its own. */
const MIN_PINNED_CPUS = 4;

function hasTaskset() {
  const r = spawnSync('taskset', ['--version'], { stdio: 'ignore' });
  return r.status === 0;
}

/**
 * How the load test splits the machine: with MIN_PINNED_CPUS cores or more, the upper half for
 * k6 and the lower half for the servers (taskset lists, e.g. {k6: '2-3', servers: '0-1'}); null
 * with fewer cores or without taskset.
 */
function cpuSplit(cpus, taskset = hasTaskset()) {
  if (cpus < MIN_PINNED_CPUS || !taskset) return null;
  const half = Math.floor(cpus / 2);
  return { servers: `0-${half - 1}`, k6: `${half}-${cpus - 1}` };
}

/** Pins every thread of each pid to the cores `cpus` (a taskset list); returns the pids it could not pin. */
function pin(pids, cpus) {
  const failed = [];
  for (const pid of pids) {
    const r = spawnSync('taskset', ['-a', '-p', '-c', cpus, String(pid)], { stdio: 'ignore' });
    if (r.status !== 0) failed.push(pid);
  }
  return failed;
}

module.exports = { cpuSeconds, memory, pssMB, mappings, machineCpu, machine, pm2, pm2DaemonPid, pm2Processes, cpuSplit, pin, MIN_PINNED_CPUS, PM2_BIN };
