/**
 * locker.inspectPermits / isReadLocked / isWriteLocked / waitUntilPermitsFree: questions about
 * semaphores and read-write locks that take nothing, on the in-memory store and on a real Redis
 * (two lockers on their own connections, as two processes would be), plus their refusals: a store
 * without shared locks or without `inspectShared`, bad options and keys.
 */
import { firstValueFrom, lastValueFrom, Subject, type Observable } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, isLockCapabilityError, isLockTimeoutError, MemoryLockStore, type Lease, type Locker, type LockStore } from '../../src/index.js';
import { RedisLockStore } from '../../src/redis.js';
import type { SharedLockStore } from '../../src/store/SharedLockStore.js';
import { connect } from '../support/redis.js';
import { redisSuite } from '../support/redisSuite.js';
import { sleep } from '../support/timing.js';

const suite = redisSuite();

/** Two lockers on one store (memory) or on two connections to one Redis, closed after the test. */
type Pair = { a: Locker; b: Locker; store: LockStore & SharedLockStore };
const stores: Record<string, () => Pair> = {
  memory: () => {
    const store = new MemoryLockStore();
    const [a, b] = [createLocker({ store, retry: { minDelay: 2, jitter: 3 } }), createLocker({ store, retry: { minDelay: 2, jitter: 3 } })];
    suite.closers.push(
      () => store.close(),
      () => a.close(),
      () => b.close(),
    );
    return { a, b, store };
  },
  redis: () => {
    const lockers = [0, 1].map(() => {
      const client = connect(suite.server);
      const store = new RedisLockStore(client);
      const locker = createLocker({ store, retry: { minDelay: 2, jitter: 3 } });
      suite.closers.push(
        () => client.disconnect(),
        () => store.close(),
        () => locker.close(),
      );
      return { store, locker };
    });
    return { a: lockers[0]!.locker, b: lockers[1]!.locker, store: lockers[0]!.store };
  },
};

/** Holds the lease `lease$` emits until the test ends. */
async function hold(lease$: ReturnType<Locker['acquirePermit']>): Promise<Lease> {
  const lease = await firstValueFrom(lease$);
  suite.closers.push(() => lease.release());
  return lease;
}

describe.each(Object.keys(stores))('shared-lock inspection (%s store)', (name) => {
  it("inspectPermits: permits used, each holder (token, permits, TTL, fence, writer, heldHere), the line and this locker's waits; null when idle", async () => {
    const { a, b } = stores[name]!();
    expect(await lastValueFrom(a.inspectPermits('renderer'))).toBeNull();
    const two = await hold(a.acquirePermit('renderer', { limit: 3, permits: 2, ttl: 20_000 }));
    const one = await hold(a.acquirePermit('renderer', { limit: 3, ttl: 10_000 }));
    const waiting = b.acquirePermit('renderer', { limit: 3, permits: 2, waitTimeout: 10_000 }).subscribe({ error: () => undefined });
    suite.closers.push(() => waiting.unsubscribe());
    await sleep(30);
    const fromA = (await lastValueFrom(a.inspectPermits('renderer')))!;
    expect(fromA).toMatchObject({
      used: 3,
      waiting: 1,
      waitingHere: 0,
      holders: [
        { token: one.token, weight: 1, fence: one.fence, writer: false, heldHere: true },
        { token: two.token, weight: 2, fence: two.fence, writer: false, heldHere: true },
      ],
    });
    expect(fromA.holders[0]!.ttl).toBeGreaterThan(5_000);
    expect(fromA.holders[0]!.ttl).toBeLessThanOrEqual(10_000);
    const fromB = (await lastValueFrom(b.inspectPermits('renderer')))!;
    expect(fromB.holders.map((h) => h.heldHere)).toEqual([false, false]);
    expect(fromB.waitingHere).toBe(1);
    // a mutex of that name is another lock; a write lock is told as a writer
    expect(await lastValueFrom(a.inspect('renderer'))).toBeNull();
    const writer = await hold(b.acquireWriteLock('config'));
    expect((await lastValueFrom(a.inspectPermits('config')))?.holders).toEqual([
      expect.objectContaining({ token: writer.token, writer: true, heldHere: false, fence: writer.fence }),
    ]);
  });

  it('isReadLocked / isWriteLocked tell readers from a writer, and take nothing', async () => {
    const { a, b } = stores[name]!();
    const ask = async () => [await lastValueFrom(b.isReadLocked('doc')), await lastValueFrom(b.isWriteLocked('doc'))];
    expect(await ask()).toEqual([false, false]);
    const reader = await firstValueFrom(a.acquireReadLock('doc'));
    expect(await ask()).toEqual([true, false]);
    await reader.release();
    const writer = await firstValueFrom(a.acquireWriteLock('doc'));
    expect(await ask()).toEqual([false, true]);
    // looking took nothing: the writer still holds, and a reader still cannot get in
    expect(writer.held).toBe(true);
    expect(isLockTimeoutError(await firstValueFrom(b.acquireReadLock('doc', { waitTimeout: 0 })).catch((e: unknown) => e))).toBe(true);
    await writer.release();
    expect(await ask()).toEqual([false, false]);
  });

  it("waitUntilPermitsFree: 'no-writer' emits once the writer is gone (readers may hold), the default once nobody holds anything", async () => {
    const { a, b } = stores[name]!();
    const endWrite = new Subject<void>();
    // (the writer holds before anyone looks: a fixed sleep here was too short on a loaded machine,
    // and 'no-writer' was then true at once)
    const writing = new Promise<void>((resolve) =>
      a
        .usingWriteLock('config', () => {
          resolve();
          return endWrite;
        })
        .subscribe({ error: () => undefined }),
    );
    await writing;
    const endRead = new Subject<void>();
    const read = b.usingReadLock('config', () => endRead, { waitTimeout: 10_000 }).subscribe({ error: () => undefined });
    suite.closers.push(() => read.unsubscribe());
    const seen: string[] = [];
    const noWriter = lastValueFrom(b.waitUntilPermitsFree('config', { until: 'no-writer', waitTimeout: 10_000 }), { defaultValue: undefined }).then(() =>
      seen.push('no-writer'),
    );
    const noHolder = lastValueFrom(b.waitUntilPermitsFree('config', { waitTimeout: 10_000 }), { defaultValue: undefined }).then(() => seen.push('no-holder'));
    await sleep(60);
    expect(seen).toEqual([]);
    endWrite.complete(); // the reader in line gets in
    await noWriter;
    expect(await lastValueFrom(a.isReadLocked('config'))).toBe(true);
    await sleep(30);
    expect(seen).toEqual(['no-writer']);
    endRead.complete();
    await noHolder;
    expect(seen).toEqual(['no-writer', 'no-holder']);
  });

  it('waitUntilPermitsFree: LockTimeoutError when held the whole wait; each sleep capped by the first holder’s TTL', async () => {
    const { a, b, store } = stores[name]!();
    await hold(a.acquirePermit('busy', { limit: 2 }));
    const error = await lastValueFrom(b.waitUntilPermitsFree('busy', { waitTimeout: 60 })).catch((e: unknown) => e);
    expect(isLockTimeoutError(error)).toBe(true);
    expect(error).toMatchObject({ key: 'busy' });
    // a holder that crashed (never renews, never releases): noticed when its lease ends, not after the 30 s back-off
    expect((await store.tryAcquireShared('lock:crashed', 'crashed-holder', 300, 1, 1, 'keep')).acquired).toBe(true);
    const started = performance.now();
    await lastValueFrom(b.waitUntilPermitsFree('crashed', { waitTimeout: 60_000, retry: { minDelay: 30_000, jitter: 0 } }), { defaultValue: undefined });
    expect(performance.now() - started).toBeLessThan(10_000);
  });
});

describe('shared-lock inspection refusals', () => {
  it('a store without shared locks: LockCapabilityError naming shared; one without inspectShared: naming inspect', async () => {
    const memory = new MemoryLockStore();
    const mutexOnly: LockStore = {
      tryAcquire: (...a) => memory.tryAcquire(...a),
      extend: (...a) => memory.extend(...a),
      release: (k, t) => memory.release(k, t),
    };
    const { inspectShared: _, ...withoutInspect } = Object.fromEntries(
      ['tryAcquire', 'extend', 'release', 'tryAcquireShared', 'extendShared', 'releaseShared', 'leaveShared', 'inspectShared'].map((m) => [
        m,
        (memory as unknown as Record<string, (...a: unknown[]) => unknown>)[m]!.bind(memory),
      ]),
    );
    for (const [store, capability] of [
      [mutexOnly, 'shared'],
      [withoutInspect as unknown as LockStore, 'inspect'],
    ] as const) {
      const locker = createLocker({ store });
      suite.closers.push(() => locker.close());
      const answers: Array<Observable<unknown>> = [
        locker.inspectPermits('k'),
        locker.isReadLocked('k'),
        locker.isWriteLocked('k'),
        locker.waitUntilPermitsFree('k'),
      ];
      for (const answer$ of answers) {
        const error = await lastValueFrom(answer$).catch((e: unknown) => e);
        expect(isLockCapabilityError(error)).toBe(true);
        expect(error).toMatchObject({ capability, key: 'k' });
      }
    }
  });

  it('bad options and keys throw LockOptionsError at once, naming the option', () => {
    const locker = createLocker();
    suite.closers.push(() => locker.close());
    expect(() => locker.waitUntilPermitsFree('k', { until: 'soon' } as never)).toThrow(expect.objectContaining({ name: 'LockOptionsError', option: 'until' }));
    expect(() => locker.waitUntilPermitsFree('k', { ttl: 5 } as never)).toThrow(expect.objectContaining({ option: 'options.ttl' }));
    expect(() => locker.waitUntilPermitsFree('k', { waitTimeout: -1 })).toThrow(expect.objectContaining({ option: 'waitTimeout' }));
    expect(() => locker.waitUntilPermitsFree('k', 5 as never)).toThrow(expect.objectContaining({ name: 'LockOptionsError' }));
    for (const ask of [() => locker.inspectPermits(''), () => locker.isReadLocked(''), () => locker.isWriteLocked(''), () => locker.waitUntilPermitsFree('')]) {
      expect(ask).toThrow(expect.objectContaining({ name: 'LockOptionsError', option: 'key' }));
    }
  });
});
