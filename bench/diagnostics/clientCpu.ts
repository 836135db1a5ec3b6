/**
 * Client CPU of one uncontended acquire + release pair on Redis, three ways, in one process:
 * `raw` (the store's own scripts by plain EVALSHA, keys built inline), `store` (RedisLockStore's
 * tryAcquire / release) and `locker` (locker.acquire / lease.release on that store). Prints user
 * CPU µs per pair (median and min over alternating rounds): noisy on a shared machine. For stable
 * figures, bundle it (esbuild --bundle --platform=node --format=esm) and count instructions per
 * pair with `valgrind --tool=cachegrind --cache-sim=no node --single-threaded probe.mjs` at
 * ROUNDS=0 and ROUNDS=2: (Ir₂ − Ir₀) / 2N.
 *
 * Env: PORT (a Redis of your own, e.g. pinned to the other CPU with taskset), N pairs per round
 * (default 3000), ROUNDS (default 6), WHICH (default raw,store,locker).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { createLocker } from '../../src/index.js';
import { lockKeys } from '../../src/backends/redis/protocol/keyLayout.js';
import { luaScripts } from '../../src/backends/redis/protocol/lua/scripts.generated.js';
import { RedisLockStore } from '../../src/redis.js';

const redis = new Redis({ port: Number(process.env.PORT) });
await redis.ping();
const store = new RedisLockStore(redis, { wakeUp: false });
const locker = createLocker({ store });
const N = Number(process.env.N ?? 3000);
const KEY = 'bench:u';

const variants: Record<string, () => Promise<void>> = {
  raw: async () => {
    for (let i = 0; i < N; i++) {
      const token = randomUUID();
      const keys = lockKeys(KEY);
      await redis.evalsha(luaScripts.acquire.sha, 4, ...keys, token, 10_000, 1);
      await redis.evalsha(luaScripts.release.sha, 4, ...keys, token, 'passed');
    }
  },
  store: async () => {
    for (let i = 0; i < N; i++) {
      const token = randomUUID();
      const result = await store.tryAcquire(KEY, token, 10_000);
      await store.release(KEY, token, result.acquired ? { fence: result.fence, fences: 1, answeredAt: 0 } : undefined);
    }
  },
  locker: async () => {
    for (let i = 0; i < N; i++) {
      const lease = await firstValueFrom(locker.acquire('u', { ttl: 10_000 }));
      await lease.release();
    }
  },
};

await redis.script('LOAD', luaScripts.acquire.source);
await redis.script('LOAD', luaScripts.release.source);
const which = (process.env.WHICH ?? 'raw,store,locker').split(',');
const perPair: Record<string, number[]> = {};
for (const name of which) {
  await variants[name]!(); // warm-up
  perPair[name] = [];
}
for (let round = 0; round < Number(process.env.ROUNDS ?? 6); round++) {
  for (const name of which) {
    const start = process.cpuUsage();
    await variants[name]!();
    perPair[name]!.push(process.cpuUsage(start).user / N);
  }
}
for (const name of which) {
  const sorted = perPair[name]!.slice().sort((a, b) => a - b);
  if (sorted.length === 0) continue;
  console.log(`${name.padEnd(7)} user µs/pair: median ${sorted[sorted.length >> 1]!.toFixed(1)}, min ${sorted[0]!.toFixed(1)}`);
}
await locker.close();
redis.disconnect();
