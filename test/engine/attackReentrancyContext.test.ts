import { catchError, concat, defer, finalize, firstValueFrom, lastValueFrom, mergeMap, of, Subject, timer, switchMap, map } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockTimeoutError, MemoryLockStore, type Locker } from '../../src/index.js';
import { giverHoldsK2 } from '../support/reentrancyScenarios.js';

async function withLocker<T>(run: (locker: Locker) => Promise<T>): Promise<T> {
  const locker = createLocker({ store: new MemoryLockStore(), keyPrefix: '', reentrant: true });
  try {
    return await run(locker);
  } finally {
    await locker.close();
  }
}

describe("attack: a grant delivered in the giver's context", () => {
  it("acquire(): the lease arrives by a pass from X; code run on it does not join X's other hold", async () => {
    await withLocker(async (locker) => {
      const outcome = await giverHoldsK2(locker, () =>
        lastValueFrom(
          locker.acquire('k1', { waitTimeout: 5_000 }).pipe(
            mergeMap((lease) =>
              of('y').pipe(
                locker.withLock('k2', { waitTimeout: 100 }),
                finalize(() => void lease.release()),
              ),
            ),
          ),
        ).catch((e: unknown) => e),
      );
      expect(isLockTimeoutError(outcome)).toBe(true);
    });
  });

  it("waitUntilFree(): woken by X's release; code run on it does not join X's other hold", async () => {
    await withLocker(async (locker) => {
      const outcome = await giverHoldsK2(locker, () =>
        lastValueFrom(
          locker.waitUntilFree('k1', { waitTimeout: 5_000 }).pipe(switchMap(() => of('y').pipe(locker.withLock('k2', { waitTimeout: 100 })))),
        ).catch((e: unknown) => e),
      );
      expect(isLockTimeoutError(outcome)).toBe(true);
    });
  });
});

describe('attack: a loss delivered from a timer another stream armed', () => {
  it("Y's LockLostError arrives from the renewal timer X armed inside its work; Y's catchError does not join X's hold", async () => {
    const store = new MemoryLockStore();
    const extend = store.extend.bind(store);
    // Y's lease cannot be renewed: it is lost at its first renewal
    store.extend = (key, token, ttl) => (key === 'y' ? Promise.resolve('gone' as const) : extend(key, token, ttl));
    const locker = createLocker({ store, keyPrefix: '', reentrant: true });
    try {
      const yHeld = new Subject<void>();
      // Y holds y (renewal due in ~ttl/2 = 300 ms); on its loss it takes j
      const y = lastValueFrom(
        defer(() => {
          yHeld.next();
          return timer(5_000);
        }).pipe(
          locker.withLock('y', { ttl: 600 }),
          map(() => 'y kept its lock'),
          catchError((lost: unknown) => of(`y lost (${String(lost)}), then`).pipe(locker.withLock('j', { waitTimeout: 100 }))),
        ),
      ).catch((e: unknown) => e);
      await firstValueFrom(yHeld);
      // X holds j for 1.5 s; inside its work it takes k with a short ttl: k's renewal arms the
      // locker's one lease timer from X's work, earlier than Y's renewal
      const x = lastValueFrom(
        locker.using('j', () => concat(timer(1).pipe(locker.withLock('k', { ttl: 100 })), timer(1_500))),
        { defaultValue: undefined },
      );
      const outcome = await y;
      await x;
      expect(outcome).toBeInstanceOf(Error);
      expect(isLockTimeoutError(outcome), String(outcome)).toBe(true);
    } finally {
      await locker.close();
    }
  });
});

describe('attack: lease.lost$ told from a timer another stream armed', () => {
  it("an acquire() lease's lost$ subscriber that takes j does not join X's hold", async () => {
    const store = new MemoryLockStore();
    const extend = store.extend.bind(store);
    store.extend = (key, token, ttl) => (key === 'y' ? Promise.resolve('gone' as const) : extend(key, token, ttl));
    const locker = createLocker({ store, keyPrefix: '', reentrant: true });
    try {
      const lease = await firstValueFrom(locker.acquire('y', { ttl: 600 }));
      const y = firstValueFrom(lease.lost$.pipe(switchMap(() => of('joined').pipe(locker.withLock('j', { waitTimeout: 100 }))))).catch((e: unknown) => e);
      const x = lastValueFrom(
        locker.using('j', () => concat(timer(1).pipe(locker.withLock('k', { ttl: 100 })), timer(1_500))),
        { defaultValue: undefined },
      );
      const outcome = await y;
      await x;
      expect(isLockTimeoutError(outcome), String(outcome)).toBe(true);
    } finally {
      await locker.close();
    }
  });
});
