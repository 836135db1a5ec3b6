/**
 * redis-semaphore 5.x `Mutex` with its defaults (10 ms fixed retry interval, refresh at 80% of
 * `lockTimeout`). `acquireTimeout` is the scenario's wait limit and `lockTimeout` its lease (both
 * equal to the library's defaults, 10 s, in the hot-key scenarios). Its key is `mutex:<name>`.
 */
import { Mutex, TimeoutError } from 'redis-semaphore';
import { AcquireTimeout, whenAborted, type AdapterContext, type LockAdapter, type Limits } from './types.js';

export async function createRedisSemaphore(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  const mutex = (name: string, limits: Limits) => new Mutex(redis, name, { acquireTimeout: limits.waitTimeoutMs, lockTimeout: limits.ttlMs });
  const release = (m: Mutex) => m.release().then(
    () => undefined,
    () => undefined,
  );

  return {
    storeKey: (name) => `mutex:${name}`,

    async acquire(name, limits) {
      const m = mutex(name, limits);
      try {
        await m.acquire();
      } catch (error) {
        if (error instanceof TimeoutError) throw new AcquireTimeout(error.message);
        throw error;
      }
      return { release: () => release(m) };
    },

    // redis-semaphore takes an AbortSignal: it stops retrying once aborted. A SET already in
    // flight that wins still resolves the acquire; the `finally` then releases it.
    async holdUntilAborted(name, limits, signal, section) {
      const m = mutex(name, limits);
      try {
        await m.acquire(signal);
      } catch (error) {
        await release(m);
        if (signal.aborted) return 'cancelled';
        return error instanceof TimeoutError ? 'timeout' : 'error';
      }
      try {
        section.enter();
        await whenAborted(signal);
        section.exit();
      } finally {
        await release(m);
      }
      return 'held';
    },

    settle: async () => undefined,
    close: async () => undefined,
  };
}
