/**
 * Misbehaving inputs and re-entrant callers must end the acquisition cleanly: a clear error, no
 * hang, no unhandled rejection, no leaked lock. And the ordering users rely on: complete and
 * error reach the subscriber only once the lock is given back.
 */
import { defer, filter, firstValueFrom, lastValueFrom, of, takeUntil, throwError, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockOptionsError,
  isLockStoreError,
  MemoryLockStore,
  type AcquireResult,
  type ExtendOutcome,
  type LockStore,
} from '../../src/index.js';
import { RecordingStore } from '../support/recordingStore.js';
import { runUntil } from '../support/virtualTime.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function heldStore() {
  const store = new MemoryLockStore();
  await store.tryAcquire('k', 'holder', 60_000);
  return store;
}

describe('a retry policy or random source that misbehaves errors the acquisition', () => {
  it('a policy that throws', async () => {
    const boom = new Error('policy bug');
    const locker = createLocker({
      store: await heldStore(),
      keyPrefix: '',
      retry: () => {
        throw boom;
      },
    });
    await expect(firstValueFrom(locker.acquire('k'))).rejects.toBe(boom);
  });

  it('a policy that returns something that is not an ObservableInput', async () => {
    const locker = createLocker({ store: await heldStore(), keyPrefix: '', retry: (() => undefined) as never });
    await expect(firstValueFrom(locker.acquire('k'))).rejects.toBeInstanceOf(TypeError);
  });

  it('a random source that throws', async () => {
    const boom = new Error('random bug');
    const locker = createLocker({
      store: await heldStore(),
      keyPrefix: '',
      random: () => {
        throw boom;
      },
    });
    await expect(firstValueFrom(locker.acquire('k'))).rejects.toBe(boom);
  });

  it('a random source outside [0, 1) sleeps minDelay instead of busy polling', async () => {
    const scheduler = new TestScheduler(() => undefined);
    const store = new RecordingStore(await heldStore(), () => scheduler.now());
    const locker = createLocker({ store, keyPrefix: '', scheduler, random: () => NaN, retry: { minDelay: 100, jitter: 50 } });
    const sub = locker.acquire('k').subscribe({ error: () => undefined });
    await runUntil(scheduler, () => store.count('tryAcquire') >= 3);
    sub.unsubscribe();
    expect(store.calls.map((c) => c.at)).toEqual([0, 100, 200]);
  });

  it('rejects minDelay + jitter beyond the longest timer', () => {
    try {
      createLocker({ retry: { minDelay: 2_000_000_000, jitter: 2_000_000_000 } });
      expect.unreachable();
    } catch (error) {
      expect(isLockOptionsError(error)).toBe(true);
      expect((error as Error).message).toContain('retry.jitter');
      expect((error as Error).message).toContain('147483647');
    }
  });
});

describe('a synchronous retry notifier', () => {
  it('does not starve the event loop: the holder still releases and the waiter gets the lock', async () => {
    const locker = createLocker({ keyPrefix: '', retry: () => of(0), waitTimeout: 2_000 });
    const holder = lastValueFrom(timer(50).pipe(locker.withLock('k')));
    await sleep(5);
    const started = performance.now();
    const lease = await firstValueFrom(locker.acquire('k'));
    await holder;
    expect(performance.now() - started).toBeLessThan(1_000);
    await lease.release();
  });
});

describe('a store that breaks the Promise contract', () => {
  /** Answers with plain values instead of promises. */
  class PlainValueStore implements LockStore {
    readonly inner = new MemoryLockStore();
    tryAcquire(key: string, token: string, ttl: number): Promise<AcquireResult> {
      return (
        this.inner.holder(key) === undefined ? (void this.inner.tryAcquire(key, token, ttl), { acquired: true, fence: 1 }) : { acquired: false }
      ) as never;
    }
    release(key: string, token: string): Promise<boolean> {
      const deleted = this.inner.holder(key) === token;
      void this.inner.release(key, token);
      return deleted as never;
    }
    extend(): Promise<ExtendOutcome> {
      return 'gone' as never;
    }
  }

  it('still acquires and releases; release() resolves and never rejects', async () => {
    const store = new PlainValueStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const lease = await firstValueFrom(locker.acquire('k'));
    await expect(lease.release()).resolves.toBe(true);
    expect(store.inner.size).toBe(0);
  });

  it('a store method that throws synchronously gives LockStoreError, not a raw throw', async () => {
    const store = new MemoryLockStore();
    store.tryAcquire = () => {
      throw new Error('sync');
    };
    const error = await firstValueFrom(createLocker({ store }).acquire('k')).catch((e: unknown) => e);
    expect(isLockStoreError(error)).toBe(true);
  });
});

describe('re-entrant callers', () => {
  it('an events$ handler that ends the acquisition on "acquired" does not leak the lock', async () => {
    const store = new MemoryLockStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const acquired$ = locker.events$.pipe(filter((e) => e.type === 'acquired'));
    const leases: unknown[] = [];
    await new Promise<void>((resolve) =>
      locker
        .acquire('k')
        .pipe(takeUntil(acquired$))
        .subscribe({ next: (l) => leases.push(l), complete: resolve }),
    );
    await sleep(5);
    expect(leases).toEqual([]);
    expect(store.size).toBe(0);
  });
});

describe('complete and error arrive after the lock is given back', () => {
  /** A MemoryLockStore whose release takes 5 ms to take effect, like a store across a network. */
  function slowReleaseStore() {
    const store = new MemoryLockStore();
    const release = store.release.bind(store);
    store.release = async (key, token) => {
      await sleep(5);
      return release(key, token);
    };
    return store;
  }

  it('on complete: code after await lastValueFrom runs with the key deleted', async () => {
    const store = slowReleaseStore();
    const locker = createLocker({ store, keyPrefix: '' });
    await lastValueFrom(of(1).pipe(locker.withLock('k')));
    expect(store.holder('k')).toBeUndefined();
  });

  it('on error: the error handler runs with the key deleted', async () => {
    const store = slowReleaseStore();
    const locker = createLocker({ store, keyPrefix: '' });
    let holderWhenErrored: string | undefined = 'not called';
    await new Promise<void>((resolve) =>
      throwError(() => new Error('x'))
        .pipe(locker.withLock('k'))
        .subscribe({
          error: () => {
            holderWhenErrored = store.holder('k');
            resolve();
          },
        }),
    );
    expect(holderWhenErrored).toBeUndefined();
  });

  it('using(): the same for complete', async () => {
    const store = slowReleaseStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const heldInside = await lastValueFrom(locker.using('k', () => defer(() => of(store.holder('k')))));
    expect(heldInside).toBeDefined();
    expect(store.holder('k')).toBeUndefined();
  });

  it('on unsubscribe: the release starts at once', async () => {
    const store = slowReleaseStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const sub = timer(10_000).pipe(locker.withLock('k')).subscribe();
    await sleep(2);
    sub.unsubscribe();
    await sleep(10);
    expect(store.holder('k')).toBeUndefined();
  });
});
