/**
 * semaphore-hot in small, for before/after comparisons of rxjs-lock's semaphore in one sitting:
 * P processes × L loops on one semaphore of 4 permits, each taking 1 permit, holding it 1 ms (a
 * timer) and releasing it, for SECS seconds, on a Redis of your own. Prints the acquisitions per
 * second and the client CPU per acquisition (every process's user + system CPU, all its threads).
 * Alternate the builds (or the libraries) run after run: on a noisy machine the figures drift by
 * 2× within minutes, so only pairs run back to back compare.
 *
 * Env: PORT (the Redis, e.g. `taskset -c 1 redis-server --port 6391 --save ''`; run this with
 * `taskset -c 0`), KIND (`rxjs`, default, or `redis-semaphore`), DIST (a build of rxjs-lock, default
 * ../../dist; copy a build under bench/ so that it finds rxjs and ioredis), P (default 8), L (default
 * 4), SECS (default 5), CHILD_ARGS (node flags for the processes, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 *
 * Run: `PORT=6391 taskset -c 0 npx tsx bench/diagnostics/semaphoreHot.ts`
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { firstValueFrom } from 'rxjs';
import type * as Core from '../../src/index.js';
import type * as RedisEntry from '../../src/redis.js';

const PORT = Number(process.env.PORT);
const PROCESSES = Number(process.env.P ?? 8);
const LOOPS = Number(process.env.L ?? 4);
const SECONDS = Number(process.env.SECS ?? 5);
const KIND = process.env.KIND ?? 'rxjs';
const LIMIT = 4;

interface Outcome {
  readonly acquisitions: number;
  /** CPU µs of the process (user + system) during the run. */
  readonly cpu: number;
}

/** Takes a permit; resolves with its release. */
type Take = () => Promise<() => Promise<unknown>>;

async function taker(redis: Redis): Promise<Take> {
  if (KIND === 'redis-semaphore') {
    const { Semaphore } = await import('redis-semaphore');
    return async () => {
      const semaphore = new Semaphore(redis, 's', LIMIT, { acquireTimeout: 10_000, lockTimeout: 10_000 });
      await semaphore.acquire();
      return () => semaphore.release();
    };
  }
  const dist = process.env.DIST ?? fileURLToPath(new URL('../../dist', import.meta.url));
  const { createLocker } = (await import(`${dist}/esm/index.js`)) as typeof Core;
  const { RedisLockStore } = (await import(`${dist}/esm/redis.js`)) as typeof RedisEntry;
  const locker = createLocker({ store: new RedisLockStore(redis) });
  return async () => {
    const lease = await firstValueFrom(locker.acquirePermit('s', { limit: LIMIT, waitTimeout: 10_000, ttl: 10_000 }));
    return () => lease.release();
  };
}

/** One process: its loops, once the parent says go. */
async function child(): Promise<void> {
  const redis = new Redis({ port: PORT });
  const take = await taker(redis);
  await redis.ping();
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  const start = performance.now();
  const before = process.cpuUsage();
  let acquisitions = 0;
  const loop = async () => {
    while (performance.now() - start < SECONDS * 1000) {
      const release = await take();
      await new Promise((resolve) => setTimeout(resolve, 1));
      await release();
      acquisitions++;
    }
  };
  await Promise.all(Array.from({ length: LOOPS }, loop));
  const used = process.cpuUsage(before);
  const outcome: Outcome = { acquisitions, cpu: used.user + used.system };
  process.send?.(outcome, () => process.exit(0));
}

/** The parent: starts the processes, lets them go together, sums what they did. */
async function parent(): Promise<void> {
  const admin = new Redis({ port: PORT });
  await admin.flushall();
  const children = Array.from({ length: PROCESSES }, () =>
    fork(fileURLToPath(import.meta.url), [], {
      env: { ...process.env, SEMAPHORE_HOT_CHILD: '1' },
      execArgv: ['--import', 'tsx', ...(process.env.CHILD_ARGS ?? '').split(' ').filter(Boolean)],
    }),
  );
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('message', resolve))));
  const outcomes = await Promise.all(
    children.map(
      (c) =>
        new Promise<Outcome>((resolve) => {
          c.once('message', (m) => resolve(m as Outcome));
          c.send('go');
        }),
    ),
  );
  const total = outcomes.reduce((sum, o) => sum + o.acquisitions, 0);
  const cpu = outcomes.reduce((sum, o) => sum + o.cpu, 0);
  console.log(
    `${KIND}: ${(total / SECONDS).toFixed(0)} acq/s, client CPU ${(cpu / total).toFixed(0)} µs/acq, per process ${outcomes.map((o) => o.acquisitions).join(',')}`,
  );
  admin.disconnect();
}

if (process.env.SEMAPHORE_HOT_CHILD === '1') await child();
else await parent();
