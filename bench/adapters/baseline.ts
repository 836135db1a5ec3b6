/**
 * The hand-written lock most code bases start with: `SET key token NX PX ttl`, a fixed 10 ms
 * sleep after each failed attempt until the wait limit, and release by an owner-checked
 * compare-and-delete script called with EVALSHA (EVAL once if the server does not know it yet).
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AcquireTimeout, Background, whenAborted, type AdapterContext, type Held, type LockAdapter, type Limits } from './types.js';

const RETRY_SLEEP_MS = 10;
const COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0";
const COMPARE_AND_DELETE_SHA = createHash('sha1').update(COMPARE_AND_DELETE).digest('hex');

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function compareAndDelete(redis: Redis, key: string, token: string): Promise<void> {
  try {
    await redis.evalsha(COMPARE_AND_DELETE_SHA, 1, key, token);
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    await redis.eval(COMPARE_AND_DELETE, 1, key, token);
  }
}

export async function createBaseline(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  const background = new Background();

  async function acquire(key: string, limits: Limits): Promise<Held> {
    const token = randomUUID();
    const deadline = performance.now() + limits.waitTimeoutMs;
    for (;;) {
      if ((await redis.set(key, token, 'PX', limits.ttlMs, 'NX')) === 'OK') {
        return { release: () => compareAndDelete(redis, key, token).catch(() => undefined) };
      }
      const left = deadline - performance.now();
      if (left <= 0) throw new AcquireTimeout(`"${key}" stayed held for ${limits.waitTimeoutMs} ms`);
      await sleep(Math.min(RETRY_SLEEP_MS, left));
    }
  }

  return {
    storeKey: (name) => name,
    acquire,

    // The same naive pattern as with redlock: race the acquire against a timer, release in
    // `finally` if it won; an abandoned acquire keeps polling and nobody releases what it gets.
    async holdUntilAborted(name, limits, signal, section) {
      const acquiring = acquire(name, limits);
      background.track(acquiring);
      const first = await Promise.race([
        acquiring.then(
          (held) => ({ held }),
          (error: unknown) => ({ error }),
        ),
        whenAborted(signal).then(() => null),
      ]);
      if (first === null) return 'cancelled';
      if ('error' in first) return first.error instanceof AcquireTimeout ? 'timeout' : 'error';
      try {
        section.enter();
        await whenAborted(signal);
        section.exit();
      } finally {
        await first.held.release();
      }
      return 'held';
    },

    settle: () => background.settle(),
    close: async () => undefined,
  };
}
