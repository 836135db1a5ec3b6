/**
 * Concept "Semaphores": at most N renders at once across every instance, a big job taking two
 * permits. Run by test/docs/examples.test.ts with two instances on one private Redis (REDIS_URL).
 */
// #region sample
import { Redis } from 'ioredis';
import { catchError, defer, EMPTY, lastValueFrom, from, mergeMap } from 'rxjs';
import { createLocker, isLockTimeoutError } from 'rxjs-lock';
import { RedisLockStore } from 'rxjs-lock/redis';

export interface RenderJob {
  id: string;
  big: boolean;
}

/** One instance of the render service: renders its jobs, never more than 4 permits' worth at once across all instances. */
export async function renderInstance(jobs: RenderJob[], render: (job: RenderJob) => Promise<void>, log: (line: string) => void = console.log): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://localhost:6379');
  const store = new RedisLockStore(redis);
  const locker = createLocker({ store, waitTimeout: 30_000 });
  try {
    await lastValueFrom(
      from(jobs).pipe(
        mergeMap((job) =>
          defer(() => render(job)).pipe(
            // 4 permits in all, shared by every instance; a big job takes 2 of them.
            // Every caller of 'renderer' must name the same limit.
            locker.withPermit('renderer', { limit: 4, permits: job.big ? 2 : 1 }),
            catchError((error: unknown) => {
              if (isLockTimeoutError(error)) {
                log(`${job.id}: no permit within ${error.waitedMs} ms, left for the next run`);
                return EMPTY;
              }
              throw error; // LockStoreError: Redis failed; LockLostError: a permit's lease was lost
            }),
          ),
        ),
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
