/**
 * Reentrant read-write locks, one suite run on every store with shared locks (the in-memory store:
 * test/engine/readWriteReentrancy.test.ts; Redis: test/redis/readWriteReentrancy.test.ts). With
 * `reentrant: true` a read or write lock subscribed inside the work of a read-write lock of the
 * same key and locker that covers it joins that lease (one store holder, same token and fence,
 * given back when the outermost stream ends); a write inside a read fails at once with
 * LockUpgradeError; the mutex and the read-write lock of one name never join each other; and
 * without `reentrant` nothing joins (the nested read waits, as before).
 */
import { defer, firstValueFrom, lastValueFrom, of, throwError, timer } from 'rxjs';
import { catchError, map, mergeMap } from 'rxjs/operators';
import { describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockerClosedError,
  isLockLostError,
  isLockOptionsError,
  isLockTimeoutError,
  isLockUpgradeError,
  type Lease,
  type Locker,
  type LockStore,
  type SharedLockInfo,
  type SharedLockStore,
} from '../../src/index.js';

/** A store of the backend under test, with what the suite counts, and how to close it. */
export interface ReentrancyStoreUnderTest {
  readonly store: LockStore & SharedLockStore & { inspectShared(key: string): Promise<SharedLockInfo | null> };
  close(): Promise<void>;
}

/** Counts the store's shared grants and releases (the calls, whatever they answer). */
function counted(target: ReentrancyStoreUnderTest['store']): { store: ReentrancyStoreUnderTest['store']; calls: { acquire: number; release: number } } {
  const calls = { acquire: 0, release: 0 };
  const store = new Proxy(target, {
    get(object, property, receiver) {
      const value = Reflect.get(object, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      if (property === 'tryAcquireShared')
        return (...args: unknown[]) => {
          calls.acquire++;
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        };
      if (property === 'releaseShared')
        return (...args: unknown[]) => {
          calls.release++;
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        };
      return (value as (...a: unknown[]) => unknown).bind(object);
    },
  });
  return { store, calls };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function readWriteReentrancySuite(backend: string, open: () => Promise<ReentrancyStoreUnderTest>): void {
  /** Runs `test` with a reentrant locker (and a second, independent locker) on a fresh store. */
  async function withLockers(
    test: (ctx: {
      locker: Locker;
      other: Locker;
      calls: { acquire: number; release: number };
      holders: (key: string) => Promise<number>;
      waiting: (key: string) => Promise<number>;
    }) => Promise<void>,
    reentrant = true,
  ): Promise<void> {
    const underTest = await open();
    const { store, calls } = counted(underTest.store);
    const locker = createLocker({ store, keyPrefix: '', reentrant, ttl: 5_000 });
    const other = createLocker({ store: underTest.store, keyPrefix: '', ttl: 5_000 });
    const info = (key: string) => underTest.store.inspectShared(key);
    try {
      await test({
        locker,
        other,
        calls,
        holders: async (key) => (await info(key))?.holders.length ?? 0,
        waiting: async (key) => (await info(key))?.waiting ?? 0,
      });
    } finally {
      await locker.close();
      await other.close();
      await underTest.close();
    }
  }

  /** Waits until `check` holds (polling every 5 ms, at most 2 s). */
  async function until(check: () => Promise<boolean>): Promise<void> {
    const end = Date.now() + 2_000;
    while (!(await check())) {
      if (Date.now() > end) throw new Error('condition not met within 2 s');
      await sleep(5);
    }
  }

  describe(`reentrant read-write locks (${backend})`, () => {
    it('a read lock (operator, using and acquire) inside a write lock of the same key joins it: one store holder, same token and fence, given back when the outermost ends', async () => {
      await withLockers(async ({ locker, calls, holders }) => {
        const seen: Array<{ where: string; token: string; fence: number; holders: number }> = [];
        const note = async (where: string, lease: Lease) => seen.push({ where, token: lease.token, fence: lease.fence, holders: await holders('cfg') });
        await lastValueFrom(
          locker.usingWriteLock('cfg', (outer) =>
            defer(() => note('write', outer)).pipe(
              mergeMap(() => locker.usingReadLock('cfg', (inner) => note('read', inner), { waitTimeout: 0 })),
              mergeMap(async () => {
                const lease = await firstValueFrom(locker.acquireReadLock('cfg', { waitTimeout: 0 }));
                await note('acquire', lease);
                expect(await lease.release()).toBe(true); // a joined lease's release gives nothing back
                seen.push({ where: 'after', token: '', fence: 0, holders: await holders('cfg') });
              }),
              mergeMap(() => of('read inside').pipe(locker.withReadLock('cfg', { waitTimeout: 0 }))),
            ),
          ),
        );
        const [write, ...nested] = seen;
        expect(seen.map((s) => s.where)).toEqual(['write', 'read', 'acquire', 'after']);
        for (const s of nested.slice(0, 2)) expect({ token: s.token, fence: s.fence }).toEqual({ token: write!.token, fence: write!.fence });
        expect(seen.map((s) => s.holders)).toEqual([1, 1, 1, 1]);
        expect(calls).toEqual({ acquire: 1, release: 1 });
        expect(await holders('cfg')).toBe(0);
      });
    });

    it('a read inside a read joins it while a writer waits between them (without reentrant the nested read waits behind the writer, which waits for the outer read: a deadlock until waitTimeout)', async () => {
      for (const reentrant of [true, false]) {
        await withLockers(async ({ locker, other, calls, waiting }) => {
          let writer: Promise<unknown> | undefined;
          const outcome = await lastValueFrom(
            locker.usingReadLock('cfg', async (outer) => {
              writer = lastValueFrom(of('written').pipe(other.withWriteLock('cfg', { waitTimeout: 4_000 })));
              writer.catch(() => undefined); // (awaited below; not left unhandled if the test fails first)
              await until(async () => (await waiting('cfg')) === 1);
              const nested = await lastValueFrom(
                locker.usingReadLock('cfg', (inner) => of(inner.token === outer.token), { waitTimeout: 300 }).pipe(catchError((e: unknown) => of(e))),
              );
              return nested;
            }),
          );
          if (reentrant) {
            expect(outcome).toBe(true);
            expect(calls.acquire).toBe(1);
          } else {
            expect(isLockTimeoutError(outcome)).toBe(true);
          }
          // the writer gets the lock once the outer read is given back
          expect(await writer).toBe('written');
        }, reentrant);
      }
    });

    it('a write inside a write joins it; a write inside a read fails at once with LockUpgradeError and leaves the read lock held', async () => {
      await withLockers(async ({ locker, other, calls, holders }) => {
        const joined = await lastValueFrom(
          locker.usingWriteLock('cfg', (outer) =>
            locker.usingWriteLock('cfg', (inner) => of([inner.token === outer.token, inner.fence === outer.fence]), { waitTimeout: 0 }),
          ),
        );
        expect(joined).toEqual([true, true]);
        expect(calls).toEqual({ acquire: 1, release: 1 });

        const started = performance.now();
        const upgrade = await lastValueFrom(
          locker.usingReadLock('cfg', (outer) =>
            of('x').pipe(
              locker.withWriteLock('cfg', { waitTimeout: 5_000 }),
              catchError((e: unknown) => of(e)),
              mergeMap(async (e) => ({ error: e, held: outer.held, holders: await holders('cfg') })),
            ),
          ),
        );
        expect(isLockUpgradeError(upgrade.error)).toBe(true);
        expect((upgrade.error as Error).message).toContain('"cfg"');
        expect(performance.now() - started).toBeLessThan(2_000); // at once, not after waitTimeout
        expect(upgrade.held).toBe(true);
        expect(upgrade.holders).toBe(1);
        expect(calls).toEqual({ acquire: 2, release: 2 }); // the refused write asked the store nothing
        // acquireWriteLock too; and another locker's write still gets in afterwards
        const refused = await lastValueFrom(locker.usingReadLock('cfg', () => locker.acquireWriteLock('cfg').pipe(catchError((e: unknown) => of(e)))));
        expect(isLockUpgradeError(refused)).toBe(true);
        expect(await lastValueFrom(of('w').pipe(other.withWriteLock('cfg', { waitTimeout: 1_000 })))).toBe('w');
      });
    });

    it('reentrant: false on the nested call neither joins nor refuses an upgrade: it waits for the enclosing lock, as without reentrancy', async () => {
      await withLockers(async ({ locker }) => {
        const outcome = (e: unknown) => (isLockTimeoutError(e) ? 'waited' : isLockUpgradeError(e) ? 'refused' : e);
        const nestedRead = await lastValueFrom(
          locker.usingWriteLock('cfg', () =>
            of('read').pipe(
              locker.withReadLock('cfg', { reentrant: false, waitTimeout: 100 }),
              catchError((e: unknown) => of(outcome(e))),
            ),
          ),
        );
        expect(nestedRead).toBe('waited');
        const nestedWrite = await lastValueFrom(
          locker.usingReadLock('cfg', () =>
            of('write').pipe(
              locker.withWriteLock('cfg', { reentrant: false, waitTimeout: 100 }),
              catchError((e: unknown) => of(outcome(e))),
            ),
          ),
        );
        expect(nestedWrite).toBe('waited');
      });
    });

    it('a locker closed inside the work: a nested read errors with LockerClosedError, it joins nothing', async () => {
      await withLockers(async ({ locker, holders }) => {
        let nested: unknown;
        const outer = await lastValueFrom(
          locker
            .usingWriteLock('cfg', () => {
              void locker.close();
              return locker
                .usingReadLock('cfg', () => of('joined'), { waitTimeout: 0 })
                .pipe(
                  catchError((e: unknown) => of(e)),
                  map((value) => (nested = value)),
                );
            })
            .pipe(catchError((e: unknown) => of(e))),
        );
        expect(isLockerClosedError(nested)).toBe(true);
        expect(isLockLostError(outer) && outer.reason).toBe('locker-closed'); // closing stops the outer stream
        await until(async () => (await holders('cfg')) === 0);
      });
    });

    it('a write inside a read inside a write joins the enclosing write (it covers both)', async () => {
      await withLockers(async ({ locker, calls }) => {
        const tokens = await lastValueFrom(
          locker.usingWriteLock('cfg', (write) =>
            locker.usingReadLock('cfg', (read) => locker.usingWriteLock('cfg', (inner) => of([write.token, read.token, inner.token]), { waitTimeout: 0 }), {
              waitTimeout: 0,
            }),
          ),
        );
        expect(new Set(tokens).size).toBe(1);
        expect(calls).toEqual({ acquire: 1, release: 1 });
      });
    });

    it('the mutex and the read-write lock of one name never join each other; another key or another locker never joins', async () => {
      await withLockers(async ({ locker, other, calls }) => {
        const tokens = await lastValueFrom(
          locker.using('cfg', (mutex) =>
            locker.usingReadLock(
              'cfg',
              (read) => locker.usingReadLock('other', (elsewhere) => of([mutex.token, read.token, elsewhere.token]), { waitTimeout: 0 }),
              { waitTimeout: 0 },
            ),
          ),
        );
        expect(new Set(tokens).size).toBe(3);
        expect(calls.acquire).toBe(2); // two read locks taken from the store (the mutex is another call)
        const inside = await lastValueFrom(
          locker.usingWriteLock('cfg', () =>
            of('x').pipe(
              other.withReadLock('cfg', { waitTimeout: 100, reentrant: true }),
              map(() => 'joined'),
              catchError((e: unknown) => of(isLockTimeoutError(e) ? 'waited' : e)),
            ),
          ),
        );
        expect(inside).toBe('waited');
        const mutexInsideWrite = await lastValueFrom(
          locker.usingWriteLock('cfg', (write) => locker.using('cfg', (mutex) => of(mutex.token !== write.token), { waitTimeout: 0 })),
        );
        expect(mutexInsideWrite).toBe(true);
      });
    });

    it('a nested read that joined a write lock hears of its loss (LockLostError), before the stream around it', async () => {
      await withLockers(async ({ locker }) => {
        const order: string[] = [];
        const result = await lastValueFrom(
          locker
            .usingWriteLock(
              'cfg',
              () =>
                locker
                  .usingReadLock('cfg', () => timer(5_000), { waitTimeout: 0 })
                  .pipe(catchError((e: unknown) => (order.push(isLockLostError(e) ? 'nested lost' : String(e)), throwError(() => e)))),
              { ttl: 150, renew: false },
            )
            .pipe(catchError((e: unknown) => (order.push(isLockLostError(e) ? 'outer lost' : String(e)), of('done')))),
        );
        expect(result).toBe('done');
        expect(order).toEqual(['nested lost', 'outer lost']);
      });
    });

    it('reentrant is checked as a boolean on read-write locks, and still refused on semaphores (permits never join)', async () => {
      await withLockers(async ({ locker }) => {
        expect(() => locker.withReadLock('cfg', { reentrant: 'yes' as unknown as boolean })).toThrow(/reentrant/);
        let error: unknown;
        try {
          locker.withPermit('cfg', { limit: 2, reentrant: true } as unknown as { limit: number });
        } catch (e) {
          error = e;
        }
        expect(isLockOptionsError(error) && error.option).toMatch(/reentrant/);
        // a semaphore nested in a semaphore of the same key (reentrant locker) takes a permit of its own
        const tokens = await lastValueFrom(
          locker.usingPermit('sem', (outer) => locker.usingPermit('sem', (inner) => of([outer.token, inner.token]), { limit: 2, waitTimeout: 0 }), {
            limit: 2,
          }),
        );
        expect(new Set(tokens).size).toBe(2);
      });
    });
  });
}
