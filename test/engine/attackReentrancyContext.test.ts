import { concat, defer, finalize, firstValueFrom, lastValueFrom, mergeMap, of, Subject, take, timer, switchMap, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type Locker } from '../../src/index.js';

async function withLocker<T>(run: (locker: Locker) => Promise<T>): Promise<T> {
  const locker = createLocker({ store: new MemoryLockStore(), keyPrefix: '', reentrant: true });
  try {
    return await run(locker);
  } finally {
    await locker.close();
  }
}

/** X holds k2 and, inside its work, takes and gives back k1 while Y waits for k1 (Y subscribed from the root). */
async function giverHoldsK2(locker: Locker, y: () => Promise<unknown>): Promise<unknown> {
  const outerHeld = new Subject<void>();
  const finishOuter = new Subject<void>();
  const x = lastValueFrom(
    locker.using('k2', () =>
      concat(
        defer(() => {
          outerHeld.next();
          return timer(30);
        }).pipe(locker.withLock('k1')),
        finishOuter.pipe(take(1)),
      ),
    ),
    { defaultValue: undefined },
  );
  await firstValueFrom(outerHeld);
  const outcome = await y();
  finishOuter.next();
  await x;
  return outcome;
}

describe('attack: a grant delivered in the giver\'s context', () => {
  it('acquire(): the lease arrives by a pass from X; code run on it does not join X\'s other hold', async () => {
    await withLocker(async (locker) => {
      const outcome = await giverHoldsK2(locker, () =>
        lastValueFrom(
          locker.acquire('k1', { waitTimeout: 5_000 }).pipe(
            mergeMap((lease) => of('y').pipe(locker.withLock('k2', { waitTimeout: 100 }), finalize(() => void lease.release()))),
          ),
        ).catch((e: unknown) => e),
      );
      expect(isLockTimeoutError(outcome)).toBe(true);
    });
  });

  it('waitUntilFree(): woken by X\'s release; code run on it does not join X\'s other hold', async () => {
    await withLocker(async (locker) => {
      const outcome = await giverHoldsK2(locker, () =>
        lastValueFrom(
          locker.waitUntilFree('k1', { waitTimeout: 5_000 }).pipe(
            switchMap(() => of('y').pipe(locker.withLock('k2', { waitTimeout: 100 }))),
          ),
        ).catch((e: unknown) => e),
      );
      expect(isLockTimeoutError(outcome)).toBe(true);
    });
  });
});
