/**
 * The operators for event pipelines, in one process on the in-memory store: `onBusy: 'skip'`,
 * `exclusivePerKey`, the AbortSignal `using` hands its work, and the warning about the in-memory
 * default locker.
 */
import { defer, from, lastValueFrom, NEVER, of, Subject, throwError, timer, toArray, map } from 'rxjs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  createLocker,
  exclusivePerKey,
  isLockLostError,
  isLockOptionsError,
  isLockStoreError,
  MemoryLockStore,
  usingLock,
  withLock,
  type LockEvent,
  type LockStore,
} from '../../src/index.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const lockers: Array<ReturnType<typeof createLocker>> = [];
const newLocker = (options: Parameters<typeof createLocker>[0] = {}) => {
  const locker = createLocker(options);
  lockers.push(locker);
  return locker;
};
afterEach(async () => {
  for (const locker of lockers.splice(0)) await locker.close();
});

/** Two lockers on one store: two "instances" of a service. */
function twoInstances() {
  const store = new MemoryLockStore();
  return { a: newLocker({ store }), b: newLocker({ store }) };
}

describe("onBusy: 'skip'", () => {
  it('completes empty without subscribing to the source when another locker holds the key, and reports a skip', async () => {
    const { a, b } = twoInstances();
    const events: LockEvent[] = [];
    b.events$.subscribe((e) => events.push(e));
    const lease = await lastValueFrom(a.acquire('job'));
    let subscribed = false;
    const result = await lastValueFrom(defer(() => ((subscribed = true), of(1))).pipe(b.withLock('job', { onBusy: 'skip' }), toArray()));
    expect(result).toEqual([]);
    expect(subscribed).toBe(false);
    expect(events.filter((e) => e.type === 'timed-out')).toEqual([expect.objectContaining({ type: 'timed-out', key: 'job', attempts: 1, skipped: true })]);
    await lease.release();
    expect(await lastValueFrom(of(1).pipe(b.withLock('job', { onBusy: 'skip' }), toArray()))).toEqual([1]);
  });

  it('skips when a holder of the same locker has the key (no waiting in the local line), for using and the free operators too', async () => {
    const locker = newLocker();
    const held = new Subject<void>();
    const holding = lastValueFrom(held.pipe(locker.withLock('job')), { defaultValue: undefined });
    await sleep(5);
    let ran = false;
    expect(await lastValueFrom(locker.using('job', () => ((ran = true), of(1)), { onBusy: 'skip' }).pipe(toArray()))).toEqual([]);
    expect(await lastValueFrom(of(2).pipe(withLock('job', { locker, onBusy: 'skip' }), toArray()))).toEqual([]);
    expect(await lastValueFrom(usingLock('job', () => of(3), { locker, onBusy: 'skip' }).pipe(toArray()))).toEqual([]);
    expect(ran).toBe(false);
    held.complete();
    await holding;
  });

  it("does not swallow the work's own LockTimeoutError-free errors, nor store failures", async () => {
    const failing: LockStore = {
      tryAcquire: () => Promise.reject(new Error('store down')),
      release: () => Promise.resolve(true),
      extend: () => Promise.resolve('extended'),
    };
    const locker = newLocker({ store: failing });
    await expect(lastValueFrom(of(1).pipe(locker.withLock('job', { onBusy: 'skip' })))).rejects.toSatisfy(isLockStoreError);
    const ok = newLocker();
    await expect(lastValueFrom(throwError(() => new Error('work failed')).pipe(ok.withLock('job', { onBusy: 'skip' })))).rejects.toThrow('work failed');
  });

  it('rejects an unknown onBusy, and a waitTimeout with skip, naming the option', () => {
    const locker = newLocker();
    const caught = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return e;
      }
      return undefined;
    };
    const bad = caught(() => locker.withLock('k', { onBusy: 'later' as never }));
    expect(isLockOptionsError(bad) && bad.option === 'onBusy' && bad.allowed.includes("'skip'") && bad.allowed.includes("'wait'")).toBe(true);
    expect(caught(() => withLock('k', { onBusy: 'nope' as never }))).toSatisfy(isLockOptionsError);
    expect(caught(() => usingLock('k', () => of(1), { onBusy: 1 as never }))).toSatisfy(isLockOptionsError);
    const wait = caught(() => locker.withLock('k', { onBusy: 'skip', waitTimeout: 100 }));
    expect(isLockOptionsError(wait) && wait.option === 'waitTimeout').toBe(true);
    expect(caught(() => locker.withLock('k', { onBusy: 'skip', waitTimeout: 0 }))).toBeUndefined();
    expect(caught(() => locker.acquire('k', { onBusy: 'skip' } as never))).toSatisfy(isLockOptionsError);
  });
});

describe('using hands the work an AbortSignal', () => {
  it('aborts with the LockLostError when the lease is lost, and the Promise-based work sees it', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker({ store, ttl: 60, renew: false });
    let reason: unknown;
    const error = await lastValueFrom(
      locker.using(
        'k',
        (_lease, signal) =>
          new Promise<never>((_, reject) =>
            signal.addEventListener('abort', () => {
              reason = signal.reason;
              reject(signal.reason as Error);
            }),
          ),
      ),
    ).catch((e: unknown) => e);
    expect(error).toSatisfy(isLockLostError);
    expect(reason).toBe(error);
  });

  it("aborts on loss with onLost: 'notify' too, while the work keeps running", async () => {
    const locker = newLocker({ ttl: 60, renew: false, onLost: 'notify' });
    const reason = await lastValueFrom(
      locker.using('k', (_lease, signal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)))),
    );
    expect(reason).toSatisfy(isLockLostError);
  });

  it('aborts with an AbortError when the subscriber leaves, and after the work ended; not before', async () => {
    const locker = newLocker();
    let signal: AbortSignal | undefined;
    const subscription = locker.using('k', (_lease, s) => ((signal = s), NEVER)).subscribe();
    await sleep(5);
    expect(signal?.aborted).toBe(false);
    subscription.unsubscribe();
    expect(signal?.aborted).toBe(true);
    expect((signal?.reason as DOMException | undefined)?.name).toBe('AbortError');
    let seen: AbortSignal | undefined;
    await lastValueFrom(usingLock('k', (_lease, s) => ((seen = s), of(s.aborted)), { locker }).pipe(map((aborted) => expect(aborted).toBe(false))));
    expect(seen?.aborted).toBe(true);
  });

  it('still accepts work that takes only the lease, and a synchronous throw still releases', async () => {
    const locker = newLocker();
    expect(await lastValueFrom(locker.using('k', (lease) => of(lease.key)))).toBe('k');
    await expect(
      lastValueFrom(
        locker.using('k', () => {
          throw new Error('sync');
        }),
      ),
    ).rejects.toThrow('sync');
    expect(await lastValueFrom(locker.using('k', () => of(1), { waitTimeout: 0 }))).toBe(1);
  });
});

describe('exclusivePerKey', () => {
  it('runs one message per key at a time across two instances, keys in parallel, in arrival order per key', async () => {
    const { a, b } = twoInstances();
    const active = new Map<string, number>();
    let overlaps = 0;
    let parallel = 0;
    let running = 0;
    const order: Record<string, number[]> = {};
    const work = (m: { key: string; n: number }) => async () => {
      const now = (active.get(m.key) ?? 0) + 1;
      active.set(m.key, now);
      running++;
      parallel = Math.max(parallel, running);
      if (now > 1) overlaps++;
      await sleep(2);
      (order[m.key] ??= []).push(m.n);
      active.set(m.key, active.get(m.key)! - 1);
      running--;
      return m.n;
    };
    const messages = Array.from({ length: 40 }, (_, n) => ({ key: `k${n % 4}`, n }));
    const instance = (locker: typeof a, part: number) =>
      lastValueFrom(
        from(messages.filter((m) => m.n % 2 === part)).pipe(
          exclusivePerKey(
            (m) => m.key,
            (m) => work(m)(),
            { concurrency: 3, locker },
          ),
          toArray(),
        ),
      );
    const [fromA, fromB] = await Promise.all([instance(a, 0), instance(b, 1)]);
    expect(overlaps).toBe(0);
    expect(parallel).toBeGreaterThan(1);
    expect([...fromA, ...fromB].sort((x, y) => x - y)).toEqual(messages.map((m) => m.n));
    // per key and instance, in arrival order
    for (const list of [fromA, fromB]) {
      for (let k = 0; k < 4; k++) {
        const ofKey = list.filter((n) => n % 4 === k);
        expect(ofKey).toEqual([...ofKey].sort((x, y) => x - y));
      }
    }
  });

  it('keeps to concurrency: 1 as a serial queue, and Infinity by default', async () => {
    const locker = newLocker();
    let running = 0;
    let most = 0;
    const job = async (n: number) => {
      most = Math.max(most, ++running);
      await sleep(1);
      running--;
      return n;
    };
    const out = await lastValueFrom(
      from([1, 2, 3, 4]).pipe(
        exclusivePerKey((n) => `k${n}`, job, { concurrency: 1, locker }),
        toArray(),
      ),
    );
    expect(out).toEqual([1, 2, 3, 4]);
    expect(most).toBe(1);
    most = 0;
    await lastValueFrom(
      from([1, 2, 3, 4]).pipe(
        exclusivePerKey((n) => `k${n}`, job, { locker }),
        toArray(),
      ),
    );
    expect(most).toBe(4);
  });

  it('errors the stream on the first failed message, unsubscribes the others and gives their locks back', async () => {
    const locker = newLocker();
    let aborted = 0;
    const run = lastValueFrom(
      from(['a', 'b', 'bad', 'c']).pipe(
        exclusivePerKey(
          (m) => m,
          (m, _lease, signal) => {
            signal.addEventListener('abort', () => aborted++);
            return m === 'bad'
              ? timer(5).pipe(
                  map(() => {
                    throw new Error('bad message');
                  }),
                )
              : NEVER;
          },
          { locker },
        ),
      ),
    );
    await expect(run).rejects.toThrow('bad message');
    expect(aborted).toBe(4);
    await sleep(5);
    for (const key of ['a', 'b', 'bad', 'c']) expect(await lastValueFrom(locker.using(key, () => of(key), { waitTimeout: 0 }))).toBe(key);
  });

  it('errors with a throw of keyOf, an invalid key, or the source error', async () => {
    const locker = newLocker();
    await expect(
      lastValueFrom(
        of(1).pipe(
          exclusivePerKey(
            () => {
              throw new Error('no key');
            },
            () => of(1),
            { locker },
          ),
        ),
      ),
    ).rejects.toThrow('no key');
    await expect(
      lastValueFrom(
        of(1).pipe(
          exclusivePerKey(
            () => '',
            () => of(1),
            { locker },
          ),
        ),
      ),
    ).rejects.toSatisfy(isLockOptionsError);
    await expect(
      lastValueFrom(
        throwError(() => new Error('source')).pipe(
          exclusivePerKey(
            () => 'k',
            () => of(1),
            { locker },
          ),
        ),
      ),
    ).rejects.toThrow('source');
    // an invalid key met when a queued message starts (after another completed)
    const keys = ['k', 'k', ''];
    await expect(
      lastValueFrom(
        from([0, 1, 2]).pipe(
          exclusivePerKey(
            (i) => keys[i]!,
            (i) => timer(1).pipe(map(() => i)),
            { locker, concurrency: 1 },
          ),
        ),
      ),
    ).rejects.toSatisfy(isLockOptionsError);
  });

  it('validates concurrency, the functions and the options at once', () => {
    const bad = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return isLockOptionsError(e) ? e.option : 'other';
      }
      return 'none';
    };
    const withOptions = (options: unknown) =>
      bad(() =>
        exclusivePerKey(
          (m: string) => m,
          () => of(1),
          options as never,
        ),
      );
    const cases: Array<[options: unknown, option: string]> = [
      [{ concurrency: 0 }, 'concurrency'],
      [{ concurrency: 1.5 }, 'concurrency'],
      [{ concurrency: '2' }, 'concurrency'],
      [{ concurrency: Infinity }, 'none'],
      [{ ttl: -1 }, 'ttl'],
      [{ onBusy: 'skip' }, 'options.onBusy'],
      [5, 'options'],
      [{ locker: {} }, 'locker'],
    ];
    for (const [options, option] of cases) expect({ options, option: withOptions(options) }).toEqual({ options, option });
    expect(bad(() => exclusivePerKey('k' as never, () => of(1)))).toBe('keyOf');
    expect(bad(() => exclusivePerKey((m: string) => m, null as never))).toBe('project');
  });
});

describe('the in-memory default locker warns once', () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.resetModules();
  });

  it('on the first use of the free operators without a locker, with a code, and only once', async () => {
    vi.resetModules();
    const fresh = await import('../../src/index.js');
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const op = fresh.withLock('k'); // building an operator does not warn: subscribing does
    expect(warn).not.toHaveBeenCalled();
    await lastValueFrom(of(1).pipe(op));
    await lastValueFrom(fresh.usingLock('k', () => of(1)));
    await lastValueFrom(
      of(1).pipe(
        fresh.exclusivePerKey(
          () => 'k',
          () => of(1),
        ),
      ),
    );
    expect(warn).toHaveBeenCalledTimes(1);
    const [message, options] = warn.mock.calls[0] as [string, { code: string }];
    expect(options.code).toBe('RXJS_LOCK_IN_MEMORY_DEFAULT');
    expect(fresh.IN_MEMORY_DEFAULT_WARNING).toBe('RXJS_LOCK_IN_MEMORY_DEFAULT');
    expect(message).toMatch(/only within this process/);
    expect(message).toMatch(/setDefaultLocker/);
    await fresh.getDefaultLocker().close();
  });

  it('not when a default locker was set, nor when each call names its locker', async () => {
    vi.resetModules();
    const fresh = await import('../../src/index.js');
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const locker = fresh.createLocker();
    await lastValueFrom(of(1).pipe(fresh.withLock('k', { locker })));
    await lastValueFrom(fresh.usingLock('k', () => of(1), { locker }));
    expect(warn).not.toHaveBeenCalled();
    fresh.setDefaultLocker(createLockerLike(fresh));
    await lastValueFrom(of(1).pipe(fresh.withLock('k')));
    fresh.setDefaultLocker(undefined); // going back to in-memory on purpose is a choice too
    await lastValueFrom(of(1).pipe(fresh.withLock('k')));
    expect(warn).not.toHaveBeenCalled();
    await locker.close();
    await fresh.getDefaultLocker().close();
  });
});

function createLockerLike(fresh: typeof import('../../src/index.js')) {
  const locker = fresh.createLocker({ store: new fresh.MemoryLockStore() });
  lockers.push(locker);
  return locker;
}
