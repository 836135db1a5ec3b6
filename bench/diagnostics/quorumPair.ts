/**
 * The uncontended pair on a quorum, engine against the store alone, for before/after comparisons in
 * one sitting: one loop of acquire + release on one key for SECS seconds over RedlockStore on the
 * Redis servers of PORTS (e.g. three `taskset -c 1 redis-server --port 639N --save ''`; run this
 * with `taskset -c 0`), alternating KINDS (`engine`: a locker's acquire and release; `store`: the
 * store's tryAcquire and release, as the bench's store-only) run after run, ROUNDS times. Prints
 * each run's pair p50, p90 and p99 in µs. DIST: a build of rxjs-lock (default ../../dist; run
 * `npm run build` first). TTL (default 10000, the bench's), SECS (default 2).
 *
 * Measured 2026-11-28 on three servers: after the first run the engine's p50 is within a few µs of
 * the store's (265 vs 265, 260 vs 275, 267 vs 271 µs); the first run pays for compiling the paths.
 *
 * Run: `PORTS=6392,6393,6394 taskset -c 0 npx tsx bench/diagnostics/quorumPair.ts`
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import type * as Core from '../../src/index.js';
import type * as RedisEntry from '../../src/redis.js';
import { percentile } from '../metrics.js';

const dist = process.env.DIST ?? new URL('../../dist', import.meta.url).pathname;
const { createLocker } = (await import(`${dist}/esm/index.js`)) as typeof Core;
const { RedlockStore } = (await import(`${dist}/esm/redis.js`)) as typeof RedisEntry;

const PORTS = (process.env.PORTS ?? '6392,6393,6394').split(',').map(Number);
const SECONDS = Number(process.env.SECS ?? 2);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const TTL = Number(process.env.TTL ?? 10_000);
const KINDS = (process.env.KINDS ?? 'engine,store').split(',');

async function run(kind: string): Promise<string> {
  const clients = PORTS.map((port) => new Redis({ port }));
  await Promise.all(clients.map((c) => c.ping()));
  const store = new RedlockStore(clients);
  const locker = createLocker({ store });
  const pair =
    kind === 'engine'
      ? async () => {
          const lease = await firstValueFrom(locker.acquire('q', { ttl: TTL, waitTimeout: 1_000 }));
          await lease.release();
        }
      : async () => {
          const token = randomUUID();
          const result = await store.tryAcquire('lock:q', token, TTL);
          if (!result.acquired) throw new Error('refused');
          await store.release('lock:q', token, { fence: result.fence, fences: result.fences ?? 1, answeredAt: performance.now() });
        };
  for (let i = 0; i < 200; i++) await pair();
  const times: number[] = [];
  const end = performance.now() + SECONDS * 1000;
  while (performance.now() < end) {
    const start = performance.now();
    await pair();
    times.push((performance.now() - start) * 1000);
  }
  await locker.close();
  await store.close();
  for (const c of clients) c.disconnect();
  times.sort((a, b) => a - b);
  const µs = (p: number) => percentile(times, p)?.toFixed(0) ?? '-';
  return `${kind}: n ${times.length}, p50 ${µs(0.5)}, p90 ${µs(0.9)}, p99 ${µs(0.99)} µs`;
}

for (let round = 0; round < ROUNDS; round++) for (const kind of KINDS) console.log(await run(kind));
