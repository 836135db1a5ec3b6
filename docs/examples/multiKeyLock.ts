/**
 * Concept "Multi-key locks": a transfer between two accounts holds both accounts' locks, whichever
 * order callers name them in. Run by test/docs/examples.test.ts with two instances transferring in
 * opposite directions on one private Redis (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { lastValueFrom } from 'rxjs';
import { createLocker, isLockTimeoutError, type Locker } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

/** Moves `amount` from one balance to the other: a read, then a write, of both keys. */
export async function transfer(redis: Redis, locker: Locker, from: string, to: string, amount: number): Promise<boolean> {
  try {
    await lastValueFrom(
      // Both accounts or neither; taken in one global order, so a transfer b → a running at the
      // same time as a → b cannot deadlock with it.
      locker.usingLocks([`account:${from}`, `account:${to}`], async (_locks, signal) => {
        const [source, target] = (await redis.mget(`balance:${from}`, `balance:${to}`)).map(Number);
        signal.throwIfAborted(); // a lease of the set was lost: write nothing
        await redis.mset(`balance:${from}`, source! - amount, `balance:${to}`, target! + amount);
      }),
      { defaultValue: undefined },
    );
    return true;
  } catch (error) {
    if (isLockTimeoutError(error)) return false; // error.key: the account that stayed busy
    throw error;
  }
}

/** One instance of the service: opens its locker, runs `work`, closes what it opened. */
export async function accountsInstance<T>(work: (redis: Redis, locker: Locker) => Promise<T>): Promise<T> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, waitTimeout: 10_000 });
  try {
    return await work(redis, locker);
  } finally {
    await locker.close();
    store.close();
    await redis.quit();
  }
}
// #endregion sample
