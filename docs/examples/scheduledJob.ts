/**
 * Guide "Scheduled jobs on one instance": every instance fires the job; the one that gets the lock
 * runs it, the others skip that round. Run by test/docs/examples.test.ts with two instances on one
 * private Redis (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { defer, exhaustMap, lastValueFrom, take, timer } from 'rxjs';
import { createLocker } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

/** One instance of the service: fires the digest job `rounds` times, every `everyMs`. */
export async function digestInstance(name: string, rounds: number, everyMs: number, sendDigest: (by: string) => Promise<void>): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store });
  try {
    await lastValueFrom(
      timer(0, everyMs).pipe(
        take(rounds),
        // onBusy: 'skip' tries once: held elsewhere, the round completes empty instead of waiting
        // (no LockTimeoutError to handle). A Redis failure still errors: "could not tell" is not "busy".
        exhaustMap(() => defer(() => sendDigest(name)).pipe(locker.withLock('job:digest', { onBusy: 'skip' }))),
      ),
      { defaultValue: undefined },
    );
  } finally {
    await locker.close();
    store.close();
    await redis.quit();
  }
}
// #endregion sample
