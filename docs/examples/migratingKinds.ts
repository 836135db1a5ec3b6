/**
 * Guide "Migrating from redlock and redis-semaphore", other kinds of lock: redis-semaphore's
 * Semaphore and MultiSemaphore, and redlock's locks over several resources, each beside the
 * rxjs-lock equivalent. Run by test/docs/examples.test.ts (REDIS_URL).
 */
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createLocker, isLockTimeoutError, type Locker } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';
import Redlock, { ExecutionError } from 'redlock';
import { MultiSemaphore, Semaphore, TimeoutError } from 'redis-semaphore';

// #region redis-semaphore-semaphore
export async function renderWithSemaphore(redis: Redis, render: () => Promise<void>): Promise<boolean> {
  const semaphore = new Semaphore(redis, 'renderer', 4, { lockTimeout: 10_000, acquireTimeout: 2_000 });
  try {
    await semaphore.acquire(); // one of 4
  } catch (error) {
    if (error instanceof TimeoutError) return false;
    throw error;
  }
  try {
    await render();
    return true;
  } finally {
    await semaphore.release();
  }
}
// #endregion redis-semaphore-semaphore

// #region redis-semaphore-multi
export async function bigRenderWithMultiSemaphore(redis: Redis, render: () => Promise<void>): Promise<boolean> {
  const semaphore = new MultiSemaphore(redis, 'renderer', 4, 2, { lockTimeout: 10_000, acquireTimeout: 2_000 });
  try {
    await semaphore.acquire(); // two of 4
  } catch (error) {
    if (error instanceof TimeoutError) return false;
    throw error;
  }
  try {
    await render();
    return true;
  } finally {
    await semaphore.release();
  }
}
// #endregion redis-semaphore-multi

// #region rxjs-lock-permits
// `locker`: createLocker({ store: new RedisLockStore(redis), ttl: 10_000, waitTimeout: 2_000 })
export async function renderWithPermits(locker: Locker, render: () => Promise<void>, big = false): Promise<boolean> {
  try {
    // Semaphore: permits 1 (the default); MultiSemaphore: permits 2.
    await lastValueFrom(
      locker.usingPermit('renderer', (_lease, signal) => render().then(() => signal.throwIfAborted()), { limit: 4, permits: big ? 2 : 1 }),
      { defaultValue: undefined },
    );
    return true;
  } catch (error) {
    if (isLockTimeoutError(error)) return false;
    throw error;
  }
}
// #endregion rxjs-lock-permits

// #region redlock-multi
export async function transferWithRedlock(redis: Redis, move: () => Promise<void>): Promise<boolean> {
  const redlock = new Redlock([redis], { retryCount: 20, retryDelay: 100, retryJitter: 50 });
  try {
    // one lock over both resources: each attempt sets every key in one script, or none
    await redlock.using(['account:1', 'account:2'], 10_000, async (signal) => {
      await move();
      if (signal.aborted) throw signal.error;
    });
    return true;
  } catch (error) {
    if (error instanceof ExecutionError) return false;
    throw error;
  }
}
// #endregion redlock-multi

// #region rxjs-lock-multi
// `locker`: createLocker({ store: new RedisLockStore(redis), ttl: 10_000, waitTimeout: 2_000 })
export async function transferWithLocks(locker: Locker, move: () => Promise<void>): Promise<boolean> {
  try {
    // each key its own lock, taken in one global order, all or none
    await lastValueFrom(
      locker.usingLocks(['account:1', 'account:2'], (_locks, signal) => move().then(() => signal.throwIfAborted())),
      { defaultValue: undefined },
    );
    return true;
  } catch (error) {
    if (isLockTimeoutError(error)) return false;
    throw error;
  }
}
// #endregion rxjs-lock-multi

/** Runs each on the server of REDIS_URL; what each returned, in the order of the page. */
export async function migrateOtherKinds(work: () => Promise<void>): Promise<boolean[]> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, ttl: 10_000, waitTimeout: 2_000 });
  try {
    return [
      await renderWithSemaphore(redis, work),
      await bigRenderWithMultiSemaphore(redis, work),
      await renderWithPermits(locker, work),
      await renderWithPermits(locker, work, true),
      await transferWithRedlock(redis, work),
      await transferWithLocks(locker, work),
    ];
  } finally {
    await locker.close();
    store.close();
    await redis.quit();
  }
}
