/**
 * redis-semaphore 5.x `Mutex` with its defaults (10 ms fixed retry interval, refresh at 80% of
 * `lockTimeout`). `acquireTimeout` is the scenario's wait limit and `lockTimeout` its lease (both
 * equal to the library's defaults, 10 s, in the hot-key scenarios). Its key is `mutex:<name>`.
 * Its `Semaphore` (semaphore-hot) alike, with the same defaults and the scenario's limit: a sorted
 * set `semaphore:<name>` of holders, tried with one script every 10 ms. It has no read-write lock.
 */
import { Mutex, Semaphore, TimeoutError } from 'redis-semaphore';
import { AcquireTimeout, whenAborted, type AdapterContext, type Held, type LockAdapter, type Limits } from './types.js';

export async function createRedisSemaphore(ctx: AdapterContext): Promise<LockAdapter> {
  const redis = await ctx.connect();
  const mutex = (name: string, limits: Limits) => new Mutex(redis, name, { acquireTimeout: limits.waitTimeoutMs, lockTimeout: limits.ttlMs });
  const release = (m: Mutex) =>
    m.release().then(
      () => undefined,
      () => undefined,
    );
  /** Waits for `m` (a Mutex or a Semaphore); its timeout becomes AcquireTimeout. */
  const held = async (m: Mutex): Promise<Held> => {
    try {
      await m.acquire();
    } catch (error) {
      if (error instanceof TimeoutError) throw new AcquireTimeout(error.message);
      throw error;
    }
    return { release: () => release(m) };
  };

  return {
    storeKey: (name) => `mutex:${name}`,

    acquire: (name, limits) => held(mutex(name, limits)),

    shared: {
      offers: ['permit'],
      storeKey: (name) => `semaphore:${name}`,
      acquire(name, take, limits) {
        if (take.kind !== 'permit') return Promise.reject(new Error(`redis-semaphore has no ${take.kind} lock`));
        return held(new Semaphore(redis, name, take.limit, { acquireTimeout: limits.waitTimeoutMs, lockTimeout: limits.ttlMs }));
      },
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
