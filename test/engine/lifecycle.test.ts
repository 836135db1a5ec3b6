/**
 * The lock's life in one process, on the in-memory store: cold acquisition, the source
 * subscribed only once the lock is held, release exactly once on complete, error and
 * unsubscribe, `using`, and what happens when the store fails or hangs.
 */
import { defer, finalize, firstValueFrom, lastValueFrom, merge, NEVER, of, throwError, timer, toArray } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import {
  usingLock,
  createLocker,
  getDefaultLocker,
  isLockStoreError,
  MemoryLockStore,
  setDefaultLocker,
  withLock,
  type AcquireResult,
  type ExtendOutcome,
  type LockEvent,
  type LockStore,
  type Lease,
} from '../../src/index.js';
import { recordingLocker } from '../support/recordingStore.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const setup = (options: Parameters<typeof createLocker>[0] = {}) => recordingLocker({ keyPrefix: 'p:', ...options });

describe('acquire()', () => {
  it('is cold: nothing reaches the store before subscription, and each subscription uses a new token', async () => {
    const { store, locker } = setup();
    const lease$ = locker.acquire('k');
    await sleep(5);
    expect(store.calls).toHaveLength(0);
    const first = await firstValueFrom(lease$);
    await first.release();
    const second = await firstValueFrom(lease$);
    await second.release();
    expect(first.token).not.toBe(second.token);
    expect(first.key).toBe('k');
    expect(store.calls.filter((c) => c.op === 'tryAcquire').map((c) => c.key)).toEqual(['p:k', 'p:k']);
  });

  it('emits a lease whose release() deletes the key once and then answers with the same promise', async () => {
    const { memory, locker, events } = setup();
    const lease = await firstValueFrom(locker.acquire('k', { ttl: 5000 }));
    expect(lease.ttl).toBe(5000);
    expect(memory.holder('p:k')).toBe(lease.token);
    expect(lease.released).toBe(false);
    const first = lease.release();
    expect(lease.release()).toBe(first);
    expect(await first).toBe(true);
    expect(memory.holder('p:k')).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['acquired', 'released']);
  });

  it('release() answers false when the key expired and someone else took it, leaving theirs alone', async () => {
    const { memory, locker, events } = setup();
    const lease = await firstValueFrom(locker.acquire('k', { ttl: 30, renew: false }));
    await sleep(60);
    await memory.tryAcquire('p:k', 'intruder', 10_000);
    expect(await lease.release()).toBe(false);
    expect(memory.holder('p:k')).toBe('intruder');
    // the lost event told how the hold ended: no released event follows it
    expect(events.map((e) => e.type)).toEqual(['acquired', 'lost']);
  });
});

describe('withLock()', () => {
  it('subscribes to the source only once the lock is held', async () => {
    const { memory, locker } = setup();
    await memory.tryAcquire('p:k', 'holder', 60);
    let subscribedAt = 0;
    const started = performance.now();
    const source = defer(() => {
      subscribedAt = performance.now();
      expect(memory.holder('p:k')).not.toBe('holder');
      expect(memory.holder('p:k')).toBeDefined();
      return of(1);
    });
    await lastValueFrom(source.pipe(locker.withLock('k')));
    expect(subscribedAt - started).toBeGreaterThanOrEqual(55);
  });

  it('releases exactly once on complete', async () => {
    const { memory, store, locker } = setup();
    const values = await lastValueFrom(of(1, 2, 3).pipe(locker.withLock('k'), toArray()));
    expect(values).toEqual([1, 2, 3]);
    await sleep(0);
    expect(store.count('release')).toBe(1);
    expect(memory.size).toBe(0);
  });

  it('releases exactly once on error, and the source error reaches the subscriber unchanged', async () => {
    const { memory, store, locker } = setup();
    const boom = new Error('work failed');
    await expect(lastValueFrom(throwError(() => boom).pipe(locker.withLock('k')))).rejects.toBe(boom);
    await sleep(0);
    expect(store.count('release')).toBe(1);
    expect(memory.size).toBe(0);
  });

  it('releases when the stream is unsubscribed from inside the work, while the work is being subscribed', async () => {
    const { memory, store, locker } = setup();
    const subscription = defer(() => {
      subscription.unsubscribe();
      return NEVER;
    })
      .pipe(locker.withLock('k'))
      .subscribe();
    await sleep(5);
    expect(subscription.closed).toBe(true);
    expect(store.count('release')).toBe(1);
    expect(memory.size).toBe(0);

    // the same through using(), whose work function gets the lease
    let held: Lease | undefined;
    const viaUsing = locker
      .using('k', (lease) => {
        held = lease;
        viaUsing.unsubscribe();
        return NEVER;
      })
      .subscribe();
    await sleep(5);
    expect(held?.released).toBe(true);
    expect(store.count('release')).toBe(2);
    expect(memory.size).toBe(0);
  });

  it('releases exactly once on unsubscribe', async () => {
    const { memory, store, locker } = setup();
    const subscription = NEVER.pipe(locker.withLock('k')).subscribe();
    await sleep(5);
    expect(memory.size).toBe(1);
    subscription.unsubscribe();
    subscription.unsubscribe();
    await sleep(0);
    expect(store.count('release')).toBe(1);
    expect(memory.size).toBe(0);
  });

  it('runs sections on one key one at a time; finalize upstream of withLock runs before the release', async () => {
    const { memory, locker } = setup({ retry: { minDelay: 1, jitter: 2 } });
    let inside = 0;
    let maxInside = 0;
    const heldAtExit: Array<string | undefined> = [];
    const work = () =>
      defer(() => {
        inside++;
        maxInside = Math.max(maxInside, inside);
        return timer(2);
      }).pipe(
        finalize(() => {
          inside--;
          heldAtExit.push(memory.holder('p:shared'));
        }),
        locker.withLock('shared'),
      );
    await Promise.all(Array.from({ length: 10 }, () => lastValueFrom(work())));
    expect(maxInside).toBe(1);
    expect(heldAtExit).toHaveLength(10);
    expect(heldAtExit.every((holder) => holder !== undefined)).toBe(true);
  });

  it('never subscribes to the source when acquisition fails', async () => {
    const { memory, locker } = setup();
    await memory.tryAcquire('p:k', 'holder', 10_000);
    const source = vi.fn(() => of(1));
    await expect(lastValueFrom(defer(source).pipe(locker.withLock('k', { waitTimeout: 20 })))).rejects.toMatchObject({ name: 'LockTimeoutError', key: 'k' });
    expect(source).not.toHaveBeenCalled();
  });
});

describe('using()', () => {
  it('hands the lease to the work and releases when the work ends', async () => {
    const { memory, locker } = setup();
    const seen = await lastValueFrom(locker.using('k', (lease) => of(lease.token)));
    expect(typeof seen).toBe('string');
    await sleep(0);
    expect(memory.size).toBe(0);
  });

  it('releases when the work function throws synchronously', async () => {
    const { memory, locker } = setup();
    const boom = new Error('sync');
    await expect(
      lastValueFrom(
        locker.using('k', () => {
          throw boom;
        }),
      ),
    ).rejects.toBe(boom);
    await sleep(0);
    expect(memory.size).toBe(0);
  });
});

describe('the free withLock() and the default locker', () => {
  it('works with no set-up, in memory', async () => {
    setDefaultLocker(undefined);
    const values = await lastValueFrom(of('a', 'b').pipe(withLock('free'), toArray()));
    expect(values).toEqual(['a', 'b']);
  });

  it('uses the locker set with setDefaultLocker(), resolved at subscription', async () => {
    const { store, locker } = setup();
    const operator = withLock<number>('late-bound');
    setDefaultLocker(locker);
    try {
      expect(getDefaultLocker()).toBe(locker);
      await lastValueFrom(of(1).pipe(operator));
      expect(store.count('tryAcquire')).toBe(1);
    } finally {
      setDefaultLocker(undefined);
    }
  });

  it('uses options.locker when given', async () => {
    const { store, locker } = setup();
    await lastValueFrom(of(1).pipe(withLock('k', { locker, ttl: 1000 })));
    expect(store.count('tryAcquire')).toBe(1);
  });
});

/** A store whose calls can be made to fail, throw or hang; everything else is a real MemoryLockStore. */
class FaultyStore implements LockStore {
  readonly inner = new MemoryLockStore();
  mode: 'ok' | 'reject' | 'throw' | 'hang' = 'ok';
  private readonly hung: Array<() => void> = [];

  private fault<T>(real: () => Promise<T>): Promise<T> {
    switch (this.mode) {
      case 'reject':
        return Promise.reject(new Error('connection refused'));
      case 'throw':
        throw new Error('thrown synchronously');
      case 'hang':
        return new Promise<T>((resolve, reject) => this.hung.push(() => real().then(resolve, reject)));
      default:
        return real();
    }
  }

  /** Lets every hung call through to the real store. */
  unhang(): void {
    this.hung.splice(0).forEach((go) => go());
  }

  tryAcquire(key: string, token: string, ttl: number): Promise<AcquireResult> {
    return this.fault(() => this.inner.tryAcquire(key, token, ttl));
  }
  release(key: string, token: string): Promise<boolean> {
    return this.fault(() => this.inner.release(key, token));
  }
  extend(key: string, token: string, ttl: number): Promise<ExtendOutcome> {
    return this.fault(() => this.inner.extend(key, token, ttl));
  }
}

describe('store failures', () => {
  for (const mode of ['reject', 'throw'] as const) {
    it(`acquire errors with LockStoreError when the store call fails (${mode})`, async () => {
      const store = new FaultyStore();
      store.mode = mode;
      const locker = createLocker({ store });
      const error = await firstValueFrom(locker.acquire('k')).catch((e: unknown) => e);
      expect(isLockStoreError(error)).toBe(true);
      expect(error).toMatchObject({ name: 'LockStoreError', key: 'k', operation: 'acquire' });
    });

    it(`a failing release (${mode}) resolves false, is reported on events$, and the stream still completes`, async () => {
      const store = new FaultyStore();
      const locker = createLocker({ store });
      const events: LockEvent[] = [];
      locker.events$.subscribe((e) => events.push(e));
      const results: unknown[] = [];
      let completed = false;
      of(1)
        .pipe(locker.withLock('k'))
        .subscribe({ next: (v) => results.push(v), complete: () => (completed = true), error: (e) => results.push(e) });
      store.mode = mode;
      await sleep(10);
      expect(results).toEqual([1]);
      expect(completed).toBe(true);
      const failed = events.find((e) => e.type === 'release-failed');
      expect(failed).toMatchObject({ type: 'release-failed', key: 'k' });
      expect(isLockStoreError((failed as { error: unknown }).error)).toBe(true);
    });
  }

  it('a store call that hangs fails with LockStoreError after commandTimeout, and a late grant is given back', async () => {
    const store = new FaultyStore();
    const locker = createLocker({ store, commandTimeout: 50 });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    store.mode = 'hang';
    const started = performance.now();
    const error = await firstValueFrom(locker.acquire('k')).catch((e: unknown) => e);
    const elapsed = performance.now() - started;
    expect(error).toMatchObject({ name: 'LockStoreError', operation: 'acquire' });
    expect(elapsed).toBeGreaterThanOrEqual(45);
    store.mode = 'ok';
    store.unhang(); // the store now grants the timed-out call
    await sleep(10);
    expect(store.inner.size).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['acquire-failed', 'abandoned-released']);
  });

  it('an acquire abandoned by unsubscribe while in flight is given back when the store grants it', async () => {
    const store = new FaultyStore();
    const locker = createLocker({ store });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    store.mode = 'hang';
    const subscription = locker.acquire('k').subscribe();
    subscription.unsubscribe();
    store.mode = 'ok';
    store.unhang();
    await sleep(10);
    expect(store.inner.size).toBe(0);
    expect(events).toEqual([expect.objectContaining({ type: 'abandoned-released', key: 'k', deleted: true })]);
  });

  it('an attempt that failed is given back by token once the store settled it, quietly when the key was not ours', async () => {
    // (the store may have run a failed call all the same: the give-back is only a precaution, and
    // says nothing unless it found the key ours)
    const store = new FaultyStore();
    const released: boolean[] = [];
    store.release = (key, token) => {
      released.push(true);
      if (released.length === 1) return store.inner.release(key, token);
      return Promise.reject(new Error('connection reset'));
    };
    const locker = createLocker({ store });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    store.mode = 'reject';
    const error = await firstValueFrom(locker.acquire('k')).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LockStoreError', operation: 'acquire' });
    const second = await firstValueFrom(locker.acquire('k')).catch((e: unknown) => e);
    expect(second).toMatchObject({ name: 'LockStoreError', operation: 'acquire' });
    for (let i = 0; i < 100 && released.length < 2; i++) await sleep(5);
    await sleep(20);
    // one give-back per failed attempt: the first answered false (not ours), the second failed
    expect(released).toHaveLength(2);
    expect(events.map((e) => e.type)).toEqual(['acquire-failed', 'acquire-failed']);
    await locker.close();
  });

  it('a late grant whose give-back finds the key gone, or fails, is reported all the same', async () => {
    const store = new FaultyStore();
    let releases = 0;
    store.release = () => (++releases === 1 ? Promise.resolve(false) : Promise.reject(new Error('connection reset')));
    const locker = createLocker({ store, commandTimeout: 50 });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    for (const key of ['gone', 'failed']) {
      store.mode = 'hang';
      const error = await firstValueFrom(locker.acquire(key)).catch((e: unknown) => e);
      expect(error).toMatchObject({ name: 'LockStoreError', operation: 'acquire' });
      store.mode = 'ok';
      store.unhang(); // the store now grants the timed-out call
      for (let i = 0; i < 100 && releases < (key === 'gone' ? 1 : 2); i++) await sleep(5);
      await sleep(20);
    }
    expect(events.filter((e) => e.type !== 'acquire-failed')).toEqual([
      expect.objectContaining({ type: 'abandoned-released', key: 'gone', deleted: false }),
      expect.objectContaining({ type: 'release-failed', key: 'failed' }),
    ]);
    await locker.close();
  });
});

describe('usingLock()', () => {
  it('hands the lease (with its fence) to the work, on the given or the default locker', async () => {
    const { locker, memory } = setup();
    const seen: Array<[string, number]> = [];
    const result = await lastValueFrom(
      usingLock(
        'k',
        (lease) => {
          seen.push([memory.holder('p:k')!, lease.fence]);
          expect(lease.token).toBe(seen[0]![0]);
          return of('done');
        },
        { locker },
      ),
    );
    expect(result).toBe('done');
    expect(seen[0]![1]).toBeGreaterThan(0);
    expect(memory.holder('p:k')).toBeUndefined();
    const second = await lastValueFrom(usingLock('k', (lease) => of(lease.fence), { locker }));
    expect(second).toBeGreaterThan(seen[0]![1]);
    // default locker: in memory
    expect(await lastValueFrom(usingLock('k', (lease) => of(lease.held)))).toBe(true);
    expect(() => usingLock('k', 'nope' as never)).toThrow(/work/);
  });
});

describe('renewal failures', () => {
  it('a failing renewal is retried while the lease is valid, then the lease is lost as store-unreachable at its deadline', async () => {
    const store = new FaultyStore();
    const locker = createLocker({ store, ttl: 300 }); // renewal every 100 ms, retries every 33 ms
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    let deadline = 0;
    const result = lastValueFrom(
      locker.using('k', (lease) => {
        deadline = lease.validUntil;
        store.mode = 'reject';
        return NEVER;
      }),
    ).catch((e: unknown) => e);
    const error = await result;
    const at = performance.now();
    store.mode = 'ok';
    expect(error).toMatchObject({ name: 'LockLostError', reason: 'store-unreachable' });
    expect((error as Error).cause).toMatchObject({ name: 'LockStoreError', operation: 'extend' });
    expect(at).toBeGreaterThanOrEqual(deadline);
    expect(at - deadline).toBeLessThan(60);
    const failures = events.filter((e) => e.type === 'renew-failed');
    // first renewal at ~100 ms, then retries every ~33 ms until ~294 ms
    expect(failures.length).toBeGreaterThanOrEqual(4);
    expect(failures.length).toBeLessThanOrEqual(8);
    // the release tried at the loss fails too (the store still refuses), quietly: `lost` told how it ended
    expect(events.map((e) => e.type).filter((t) => t !== 'renew-failed')).toEqual(['acquired', 'lost']);
  });

  it('a renewal that recovers before the deadline keeps the lease', async () => {
    const store = new FaultyStore();
    const locker = createLocker({ store, ttl: 600 });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => {
      events.push(e);
      // the store comes back right after the first failed renewal: driven by the event, not a
      // timer, so a stalled event loop cannot skip the failure or outlast the deadline
      if (e.type === 'renew-failed') store.mode = 'ok';
    });
    const done = lastValueFrom(
      locker.using('k', () => {
        store.mode = 'reject';
        return timer(900); // past the first deadline (600 ms): kept only by the renewals after the failure
      }),
    );
    await expect(done).resolves.toBe(0);
    const types = events.map((e) => e.type);
    expect(types).toContain('renew-failed');
    expect(types).not.toContain('lost');
    expect(types.at(-1)).toBe('released');
  });
});

describe('renewal and release in one timer firing', () => {
  it('a lease released while its renewal batch is being collected is not extended', async () => {
    const { store, locker } = setup();
    let held = 0;
    const errors: unknown[] = [];
    merge(
      locker.using('a', () => (held++, NEVER), { ttl: 300, renew: { interval: 50 } }),
      locker.using('b', () => (held++, NEVER), { ttl: 60, renew: false }),
    ).subscribe({ error: (e: unknown) => errors.push(e) });
    while (held < 2) await sleep(1);
    // stall past b's deadline and a's renewal: both come due in the same firing; b's loss errors
    // the merge, which releases a while its renewal is being collected
    const until = performance.now() + 100;
    while (performance.now() < until) {
      // busy
    }
    await sleep(60);
    expect(errors).toHaveLength(1);
    const ops = store.calls.filter((c) => c.key === 'p:a').map((c) => c.op);
    expect(ops).toEqual(['tryAcquire', 'release']);
  });
});
