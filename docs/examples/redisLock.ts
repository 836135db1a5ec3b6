/**
 * Getting started, step 2: the same lock on Redis, shared by every process that uses the same
 * server. Shown on the site from the region below; run by test/docs/examples.test.ts against a
 * private Redis (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { catchError, defer, EMPTY, lastValueFrom } from 'rxjs';
import { createLocker, isLockTimeoutError } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

export async function redisLock(log: (line: string) => void = console.log): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  redis.on('error', (error) => log(`redis: ${error.message}`)); // ioredis reconnects by itself
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, waitTimeout: 5_000 });

  const sendInvoice = (id: number) => defer(async () => log(`sending invoice ${id}`));

  try {
    await lastValueFrom(
      sendInvoice(42).pipe(
        // At most one process of the whole service sends invoice 42 at a time.
        locker.withLock('invoice:42'),
        catchError((error: unknown) => {
          if (isLockTimeoutError(error)) {
            log(`invoice 42 busy for ${error.waitedMs} ms: another instance is sending it`);
            return EMPTY;
          }
          throw error; // LockStoreError: Redis failed or did not answer in time
        }),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await locker.close(); // first the locker: it gives back what it holds
    store.close(); // then the store's own subscriber connection
    await redis.quit(); // then your client: without this the process does not exit
  }
}
// #endregion sample
