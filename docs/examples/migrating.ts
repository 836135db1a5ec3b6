/**
 * Guide "Migrating from redlock and redis-semaphore": the same critical section written with each
 * library and with rxjs-lock. Run by test/docs/examples.test.ts (REDIS_URL).
 */
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createLocker, isLockTimeoutError, usingLock } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

// #region redlock
import Redlock, { ExecutionError } from 'redlock';

export async function withRedlock(redis: Redis, work: () => Promise<void>): Promise<boolean> {
  const redlock = new Redlock([redis], { retryCount: 20, retryDelay: 100, retryJitter: 50 });
  try {
    // `using` extends the lock while the routine runs; the signal aborts when an extension fails.
    await redlock.using(['report'], 10_000, async (signal) => {
      await work();
      if (signal.aborted) throw signal.error;
    });
    return true;
  } catch (error) {
    if (error instanceof ExecutionError) return false; // busy after every retry
    throw error;
  }
}
// #endregion redlock

// #region redis-semaphore
import { Mutex, TimeoutError } from 'redis-semaphore';

export async function withRedisSemaphore(redis: Redis, work: () => Promise<void>): Promise<boolean> {
  const mutex = new Mutex(redis, 'report', { lockTimeout: 10_000, acquireTimeout: 2_000 });
  try {
    await mutex.acquire();
  } catch (error) {
    if (error instanceof TimeoutError) return false; // busy for the whole acquireTimeout
    throw error;
  }
  try {
    await work();
    return true;
  } finally {
    await mutex.release();
  }
}
// #endregion redis-semaphore

// #region rxjs-lock
export async function withRxjsLock(redis: Redis, work: () => Promise<void>): Promise<boolean> {
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, ttl: 10_000, waitTimeout: 2_000 });
  try {
    // Renewed while the work runs; `signal` aborts if the lease is lost anyway.
    await lastValueFrom(
      usingLock(
        'report',
        async (_lease, signal) => {
          await work();
          signal.throwIfAborted();
        },
        { locker },
      ),
      { defaultValue: undefined },
    );
    return true;
  } catch (error) {
    if (isLockTimeoutError(error)) return false; // busy for the whole waitTimeout
    throw error;
  } finally {
    await locker.close();
    store.close();
  }
}
// #endregion rxjs-lock

/** Runs the three on the server of REDIS_URL; what each returned. */
export async function migrateAll(work: () => Promise<void>): Promise<boolean[]> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  try {
    return [await withRedlock(redis, work), await withRedisSemaphore(redis, work), await withRxjsLock(redis, work)];
  } finally {
    await redis.quit();
  }
}
