/**
 * many-keys in small, for before/after comparisons run back to back: LOOPS concurrent loops of one
 * process (default 64), each on its own key, acquire + release on one connection, two ways —
 * `store` (RedisLockStore's tryAcquire / release, no engine) and `locker` (locker.acquire /
 * lease.release on that store). Prints client CPU (user + system) per pair and pairs/s per round.
 * CW=0 turns the store's `coalesceWrites` off (one write per call, as before it existed).
 *
 * Run against a Redis of your own on the other CPU, e.g.
 *   taskset -c 1 redis-server --port 6395 --save '' &
 *   PORT=6395 CW=0 taskset -c 0 npx tsx bench/diagnostics/manyKeys.ts
 * (or bundle it with esbuild --bundle --platform=node --format=esm to time compiled code).
 *
 * Env: PORT, LOOPS (default 64), N pairs per loop and round (default 500), ROUNDS (default 2, after
 * one round of warm-up), WHICH (default store,locker), CW (default 1).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import { createLocker } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';

const redis = new Redis({ port: Number(process.env.PORT) });
await redis.ping();
const store = new RedisLockStore(redis, { coalesceWrites: process.env.CW !== '0' });
const locker = createLocker({ store });
const N = Number(process.env.N ?? 500);
const LOOPS = Number(process.env.LOOPS ?? 64);

/** Runs `pair` N times in each of LOOPS concurrent loops, loop `l` on key `${prefix}${l}`. */
const loops = (prefix: string, pair: (key: string) => Promise<void>) => () =>
  Promise.all(
    Array.from({ length: LOOPS }, async (_, l) => {
      for (let i = 0; i < N; i++) await pair(`${prefix}${l}`);
    }),
  );

const variants: Record<string, () => Promise<unknown>> = {
  store: loops('lock:bench:many:', async (key) => {
    const token = randomUUID();
    const result = await store.tryAcquire(key, token, 10_000);
    await store.release(key, token, result.acquired ? { fence: result.fence, fences: 1, answeredAt: 0 } : undefined);
  }),
  locker: loops('bench:many:', async (key) => {
    const lease = await firstValueFrom(locker.acquire(key, { ttl: 10_000, waitTimeout: 10_000 }));
    await lease.release();
  }),
};

const which = (process.env.WHICH ?? 'store,locker').split(',');
for (const name of which) await variants[name]!(); // warm-up
for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
  for (const name of which) {
    const cpu = process.cpuUsage();
    const start = performance.now();
    await variants[name]!();
    const used = process.cpuUsage(cpu);
    const pairs = N * LOOPS;
    const ms = performance.now() - start;
    console.log(`${name.padEnd(6)} ${((used.user + used.system) / pairs).toFixed(1)} µs CPU/pair, ${Math.round((pairs / ms) * 1000)} pairs/s`);
  }
}
await locker.close();
redis.disconnect();
