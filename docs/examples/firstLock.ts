/**
 * Getting started, step 1: a first lock on the in-memory store (one process). Shown on the site
 * from the region below; run by test/docs/examples.test.ts.
 */
// #region sample
import { catchError, defer, EMPTY, lastValueFrom, merge } from 'rxjs';
import { createLocker, isLockTimeoutError } from 'rxjs-lock';

export async function firstLock(log: (line: string) => void = console.log): Promise<void> {
  // No store given: the in-memory store, which excludes within this process only.
  const locker = createLocker({ waitTimeout: 1_000 });

  // The work to protect: anything an Observable can wrap (here an async function).
  const sendInvoice = (id: number, by: string) =>
    defer(async () => {
      log(`${by}: sending invoice ${id}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
      log(`${by}: sent invoice ${id}`);
    });

  const guarded = (by: string) =>
    sendInvoice(42, by).pipe(
      // Subscribing takes the lock; it is given back when the work completes, errors or is
      // unsubscribed.
      locker.withLock('invoice:42'),
      catchError((error: unknown) => {
        // Someone else held invoice:42 for the whole second: skip it this time.
        if (isLockTimeoutError(error)) {
          log(`${by}: invoice 42 busy for ${error.waitedMs} ms, skipped`);
          return EMPTY;
        }
        throw error;
      }),
    );

  try {
    // Two callers at once: the second waits until the first has given the lock back.
    await lastValueFrom(merge(guarded('A'), guarded('B')), { defaultValue: undefined });
  } finally {
    await locker.close(); // gives back any lock still held and stops its timers
  }
}
// #endregion sample
