/**
 * Reentrancy: a withLock / using / acquire subscribed inside the work of a stream that holds the
 * same key of the same locker joins that lease (same token and fence, no store call) and the lock
 * is given back only when the outermost stream ends; streams that do not run inside that work
 * never share it.
 */
import {
  catchError,
  concat,
  defer,
  delay,
  EMPTY,
  firstValueFrom,
  from,
  ignoreElements,
  lastValueFrom,
  map,
  mergeMap,
  NEVER,
  of,
  Subject,
  take,
  tap,
  throwError,
  timer,
  toArray,
} from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockLostError, isLockTimeoutError, MemoryLockStore, type Lease, type Locker } from '../../src/index.js';
import { countingStore } from '../support/countingStore.js';
import { giverHoldsK2 } from '../support/reentrancyScenarios.js';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function withLocker<T>(run: (locker: Locker, store: MemoryLockStore, calls: { tryAcquire: number; release: number }) => Promise<T>): Promise<T> {
  const { store, calls } = countingStore();
  const locker = createLocker({ store, keyPrefix: '', reentrant: true });
  try {
    return await run(locker, store, calls);
  } finally {
    await locker.close();
  }
}

describe('reentrancy: nested acquisitions join the enclosing lease', () => {
  it('with a keyPrefix: a nested acquisition joins the enclosing lease of its key', async () => {
    const { store, calls } = countingStore();
    const locker = createLocker({ store, keyPrefix: 'app:', reentrant: true });
    try {
      const joined = await lastValueFrom(
        locker.using('k', (outer) =>
          locker.using('k', (inner) => of(inner.token === outer.token && store.holder('app:k') === outer.token), { waitTimeout: 0 }),
        ),
      );
      expect(joined).toBe(true);
      expect(calls).toEqual({ tryAcquire: 1, release: 1 });
    } finally {
      await locker.close();
    }
  });

  it('withLock as the outermost: a stream its source subscribes joins its lease', async () => {
    await withLocker(async (locker, store, calls) => {
      const result = await lastValueFrom(
        defer(() => {
          const outer = store.holder('k');
          return locker.using('k', (inner) => of(inner.token === outer), { waitTimeout: 0 });
        }).pipe(locker.withLock('k')),
      );
      expect(result).toBe(true);
      expect(calls).toEqual({ tryAcquire: 1, release: 1 });
    });
  });

  it('a nested withLock, using and acquire on the same key join: one store lease, same token and fence, released when the outermost ends', async () => {
    await withLocker(async (locker, store, calls) => {
      const seen: Array<{ where: string; token: string; fence: number; holder: string | undefined }> = [];
      const note = (where: string, lease: Lease) => seen.push({ where, token: lease.token, fence: lease.fence, holder: store.holder('k') });
      const result = await lastValueFrom(
        locker.using('k', (outer) => {
          note('outer', outer);
          return locker
            .using(
              'k',
              (inner) => {
                note('using', inner);
                return defer(async () => {
                  const acquired = await firstValueFrom(locker.acquire('k', { waitTimeout: 0 }));
                  expect(acquired.held).toBe(true); // the caller's until it releases it
                  note('acquire', acquired);
                  await acquired.release();
                  return 'work';
                }).pipe(locker.withLock('k', { waitTimeout: 0 }));
              },
              { waitTimeout: 0 },
            )
            .pipe(tap(() => (seen.push({ where: 'after-nested', token: '', fence: 0, holder: store.holder('k') }), undefined)));
        }),
      );
      expect(result).toBe('work');
      const outer = seen[0]!;
      expect(seen.map((s) => s.where)).toEqual(['outer', 'using', 'acquire', 'after-nested']);
      for (const s of seen.slice(1, 3)) expect({ token: s.token, fence: s.fence }).toEqual({ token: outer.token, fence: outer.fence });
      expect(seen.every((s) => s.holder === outer.token)).toBe(true); // still held after the nested streams ended
      expect(store.holder('k')).toBeUndefined(); // given back when the outermost ended
      expect(calls).toEqual({ tryAcquire: 1, release: 1 });
    });
  });

  it('mergeMap fan-out under one outer lock: every inner stream joins, concurrently, and the lock outlives each of them', async () => {
    await withLocker(async (locker, store, calls) => {
      let running = 0;
      let most = 0;
      const holders: Array<string | undefined> = [];
      const tokens = await lastValueFrom(
        locker.using('k', () =>
          from([30, 10, 20, 5]).pipe(
            mergeMap((ms) =>
              locker.using(
                'k',
                (lease) =>
                  defer(async () => {
                    running++;
                    most = Math.max(most, running);
                    await sleep(ms);
                    running--;
                    holders.push(store.holder('k'));
                    return lease.token;
                  }),
                { waitTimeout: 0 },
              ),
            ),
            toArray(),
          ),
        ),
      );
      expect(new Set(tokens).size).toBe(1);
      expect(most).toBe(4);
      expect(holders).toEqual([tokens[0], tokens[0], tokens[0], tokens[0]]);
      expect(store.holder('k')).toBeUndefined();
      expect(calls).toEqual({ tryAcquire: 1, release: 1 });
    });
  });

  it('nested streams joined from timers and promises (async work) join too', async () => {
    await withLocker(async (locker, _store, calls) => {
      const fences = await lastValueFrom(
        locker.using('k', async (outer) => {
          await sleep(5);
          const viaTimer = await new Promise<number>((resolve, reject) =>
            setTimeout(() => locker.using('k', (l) => of(l.fence), { waitTimeout: 0 }).subscribe({ next: resolve, error: reject }), 5),
          );
          const viaOperator = await lastValueFrom(
            timer(5).pipe(
              mergeMap(() => of(1).pipe(locker.withLock('k', { waitTimeout: 0 }))),
              map(() => outer.fence),
            ),
          );
          return [outer.fence, viaTimer, viaOperator];
        }),
      );
      expect(new Set(fences).size).toBe(1);
      expect(calls.tryAcquire).toBe(1);
    });
  });

  it('hold counts: a nested stream that errors, or is unsubscribed, never gives back the outer lock', async () => {
    await withLocker(async (locker, store, calls) => {
      const heldAfter: Array<string | undefined> = [];
      const look = defer(() => (heldAfter.push(store.holder('k')), EMPTY));
      await lastValueFrom(
        locker.using('k', (outer) =>
          concat(
            throwError(() => new Error('nested failed')).pipe(
              locker.withLock('k', { waitTimeout: 0 }),
              catchError(() => EMPTY),
            ),
            look,
            concat(of(1), NEVER).pipe(locker.withLock('k', { waitTimeout: 0 }), take(1), ignoreElements()),
            look,
            defer(async () => {
              const lease = await firstValueFrom(locker.acquire('k', { waitTimeout: 0 }));
              await lease.release();
              await lease.release();
              heldAfter.push(store.holder('k'));
              return outer.token;
            }),
          ),
        ),
      );
      expect(heldAfter).toHaveLength(3);
      expect(heldAfter.every((h) => h !== undefined)).toBe(true);
      expect(store.holder('k')).toBeUndefined();
      expect(calls).toEqual({ tryAcquire: 1, release: 1 });
    });
  });

  it('a nested hold that outlives the outer work keeps the lock; the outermost stream completes once it is given back', async () => {
    await withLocker(async (locker, store) => {
      const detached = new Subject<void>();
      let outerCompleted = false;
      const done = lastValueFrom(
        locker
          .using('k', () => {
            // subscribed from the work but not part of it: ends later, on its own
            locker.using('k', () => detached, { waitTimeout: 0 }).subscribe();
            return of('outer done');
          })
          .pipe(tap({ complete: () => (outerCompleted = true) })),
      );
      await sleep(20);
      expect({ outerCompleted, held: store.holder('k') !== undefined }).toEqual({ outerCompleted: false, held: true });
      detached.complete();
      expect(await done).toBe('outer done');
      expect(store.holder('k')).toBeUndefined();
    });
  });

  it('loss of the outer lease errors the nested streams too (outer onLost: notify keeps its own work running)', async () => {
    await withLocker(async (locker, store) => {
      let nestedError: unknown;
      let outerLease: Lease | undefined;
      const outer = lastValueFrom(
        locker.using(
          'k',
          (lease) => {
            outerLease = lease;
            return NEVER.pipe(
              locker.withLock('k', { waitTimeout: 0 }),
              tap({ error: (e: unknown) => (nestedError = e) }),
              catchError(() => of('nested errored')),
            );
          },
          { ttl: 600, onLost: 'notify' },
        ),
      );
      await sleep(20);
      // someone else takes the key: the next renewal finds it taken
      await store.release('k', outerLease!.token);
      await store.tryAcquire('k', 'thief', 10_000);
      expect(await outer).toBe('nested errored');
      expect(isLockLostError(nestedError)).toBe(true);
      expect(store.holder('k')).toBe('thief');
    });
  });

  it('with the default onLost, a loss errors the nested stream first and the outer stream with the same LockLostError', async () => {
    await withLocker(async (locker, store) => {
      const order: string[] = [];
      let token = '';
      const outer = lastValueFrom(
        locker.using(
          'k',
          (lease) => {
            token = lease.token;
            return NEVER.pipe(locker.withLock('k', { waitTimeout: 0 }), tap({ error: () => order.push('nested') }));
          },
          { ttl: 600 },
        ),
      ).catch((error: unknown) => (order.push('outer'), error));
      await sleep(20);
      await store.release('k', token);
      const error = await outer;
      expect(isLockLostError(error)).toBe(true);
      expect(order).toEqual(['nested', 'outer']);
    });
  });

  it('reentrant: false on the nested acquisition waits for the outer one, as without reentrancy; on the outer one, nothing joins it', async () => {
    await withLocker(async (locker) => {
      const error = await lastValueFrom(locker.using('k', () => of(1).pipe(locker.withLock('k', { waitTimeout: 50, reentrant: false })))).catch(
        (e: unknown) => e,
      );
      expect(isLockTimeoutError(error)).toBe(true);
      // and an outer stream with reentrant: false cannot be joined
      const outer = await lastValueFrom(locker.using('k', () => of(1).pipe(locker.withLock('k', { waitTimeout: 50 })), { reentrant: false })).catch(
        (e: unknown) => e,
      );
      expect(isLockTimeoutError(outer)).toBe(true);
    });
  });
});

describe('reentrancy never makes unrelated streams share a lock', () => {
  it('two streams subscribed apart (same process, same locker) take turns, each with its own fence', async () => {
    await withLocker(async (locker, _store, calls) => {
      const spans: Array<[string, number, number, number]> = [];
      const section = (name: string) =>
        locker.using('k', async (lease) => {
          const start = performance.now();
          await sleep(20);
          spans.push([name, lease.fence, start, performance.now()]);
        });
      await Promise.all([lastValueFrom(section('a')), lastValueFrom(section('b'))]);
      const [a, b] = spans as [[string, number, number, number], [string, number, number, number]];
      expect(a[1]).not.toBe(b[1]);
      expect(a[3] <= b[2] || b[3] <= a[2]).toBe(true);
      expect(calls.tryAcquire).toBeGreaterThanOrEqual(1);
    });
  });

  it('another locker on the same store does not join (reentrancy is per locker)', async () => {
    const store = new MemoryLockStore();
    const [one, two] = [createLocker({ store, reentrant: true }), createLocker({ store, reentrant: true })];
    const error = await lastValueFrom(one.using('k', () => of(1).pipe(two.withLock('k', { waitTimeout: 50 })))).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    await Promise.all([one.close(), two.close()]);
  });

  it('a callback the outer work left behind, run after the outer stream ended, does not join: it waits for the next holder', async () => {
    await withLocker(async (locker) => {
      let late!: Promise<unknown>;
      await lastValueFrom(
        locker.using('k', async () => {
          // a timer set inside the work carries the work's context; it fires after the work ended
          late = new Promise((resolve) =>
            setTimeout(() => lastValueFrom(of('joined').pipe(locker.withLock('k', { waitTimeout: 50 }))).then(resolve, resolve), 60),
          );
        }),
      );
      // the outer stream ended; an unrelated stream holds the key when the timer fires
      const holding = lastValueFrom(locker.using('k', () => timer(300)));
      expect(isLockTimeoutError(await late)).toBe(true);
      await holding;
    });
  });

  it("code the locked work calls synchronously (a Subject.next into another pipeline) joins, as under a thread's reentrant lock; reentrant: false keeps it out", async () => {
    await withLocker(async (locker) => {
      const outcomes: string[] = [];
      for (const reentrant of [true, false]) {
        const events = new Subject<void>();
        const pipeline = events.pipe(mergeMap(() => of('joined').pipe(locker.withLock('k', { waitTimeout: 50, reentrant })))).subscribe({
          next: (v) => outcomes.push(`${reentrant}:${v}`),
          error: (e: unknown) => outcomes.push(`${reentrant}:${isLockTimeoutError(e) ? 'timed out' : String(e)}`),
        });
        await lastValueFrom(
          locker.using('k', () => {
            events.next();
            return timer(150);
          }),
        );
        pipeline.unsubscribe();
      }
      expect(outcomes).toEqual(['true:joined', 'false:timed out']);
    });
  });

  it("a lock passed to another stream's waiter does not carry the giver's other holds", async () => {
    await withLocker(async (locker) => {
      // X holds k2 and, inside its work, takes and gives back k1 while Y waits for k1; Y is
      // subscribed from the root context and gets k1 by a local pass from X's release
      const outcome = await giverHoldsK2(locker, () =>
        lastValueFrom(of('y').pipe(delay(1), locker.withLock('k2', { waitTimeout: 100 }), locker.withLock('k1', { waitTimeout: 5_000 }))).catch(
          (e: unknown) => e,
        ),
      );
      expect(isLockTimeoutError(outcome)).toBe(true); // waited for X's k2, never joined it
    });
  });
});

describe('reentrancy is opt-in: a default locker enters no async context', () => {
  it('with the defaults the work runs in no AsyncLocalStorage frame (Node 20 would then track every promise of the process), and a nested same-key acquisition waits for the outer one', async () => {
    const { currentFrame } = await import('../../src/engine/reentrancy/enclosingHolds.js');
    const locker = createLocker({ store: new MemoryLockStore(), keyPrefix: '' });
    try {
      const frames: unknown[] = [];
      const nested = await lastValueFrom(
        locker.using('k', () =>
          defer(() => {
            frames.push(currentFrame());
            return locker.using('k', () => of('joined'), { waitTimeout: 30 });
          }).pipe(catchError((e: unknown) => of(isLockTimeoutError(e) ? 'waited' : 'other'))),
        ),
      );
      expect({ nested, frames }).toEqual({ nested: 'waited', frames: [undefined] });
      // per call, it can be turned on (on both: the outer one to be joinable, the nested one to join)
      const joined = await lastValueFrom(locker.using('k', () => locker.using('k', () => of('joined'), { reentrant: true }), { reentrant: true }));
      expect(joined).toBe('joined');
    } finally {
      await locker.close();
    }
  });
});
