'use strict';
// `node tools/bench/redis-batch.js` (after `npm run build`): CPU per Redis command of the notices'
// kind (SET NX EX) arriving 130 a second, as a worker's win notices and impressions do at 650 bid
// requests a second: sent one by one as they come (ioredis as is, and with enableAutoPipelining),
// or gathered for REDIS_BATCH_MS and sent corked (src/redis/batch.ts). Client CPU from
// process.cpuUsage, Redis's from /proc; three alternating rounds, medians printed.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Redis = require('ioredis');
const { corked, REDIS_BATCH_MS } = require('../../dist/redis/batch');
const { startRedis, serverPid } = require('../../scripts/lib/redis');

const RATE = 130;
const SECONDS = 4;
const ROUNDS = 3;
const CLK_US = 1e6 / 100; // /proc's clock ticks (USER_HZ 100), in µs

function cpuOf(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) * CLK_US;
}

async function phase(client, mode, redisPid) {
  const n = RATE * SECONDS;
  const replies = [];
  let queue = [];
  let timer = null;
  const c0 = process.cpuUsage();
  const r0 = cpuOf(redisPid);
  await new Promise((resolve) => {
    let i = 0;
    const iv = setInterval(() => {
      const key = `bench:${mode}:${i}`;
      if (mode !== 'batched') replies.push(client.set(key, '1', 'EX', 60, 'NX'));
      else {
        queue.push(key);
        timer ??= setTimeout(() => {
          timer = null;
          const q = queue;
          queue = [];
          corked(client, () => {
            for (const k of q) replies.push(client.set(k, '1', 'EX', 60, 'NX'));
          });
        }, REDIS_BATCH_MS);
      }
      if (++i >= n) {
        clearInterval(iv);
        setTimeout(resolve, REDIS_BATCH_MS * 2);
      }
    }, 1000 / RATE);
  });
  await Promise.all(replies);
  const c = process.cpuUsage(c0);
  return { client: (c.user + c.system) / n, redis: (cpuOf(redisPid) - r0) / n };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'redis-batch-bench-'));
  const server = await startRedis({ dir, log: () => {} });
  const pid = await serverPid(server.url);
  const clients = { plain: new Redis(server.url), autopipelining: new Redis(server.url, { enableAutoPipelining: true }), batched: new Redis(server.url) };
  try {
    await Promise.all(Object.values(clients).map((c) => c.ping()));
    const res = Object.fromEntries(Object.keys(clients).map((m) => [m, []]));
    for (let round = 0; round < ROUNDS; round++) for (const [m, c] of Object.entries(clients)) res[m].push(await phase(c, m, pid));
    const med = (xs) => xs.slice().sort((a, b) => a - b)[xs.length >> 1];
    console.log(`CPU per command, ${RATE} commands/s, median of ${ROUNDS} rounds of ${RATE * SECONDS}; ${os.cpus().length} CPUs, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
    for (const [m, rs] of Object.entries(res)) {
      console.log(`  ${m.padEnd(15)} client ${med(rs.map((x) => x.client)).toFixed(1).padStart(6)} µs   Redis ${med(rs.map((x) => x.redis)).toFixed(1).padStart(6)} µs`);
    }
  } finally {
    for (const c of Object.values(clients)) c.disconnect();
    await server.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
