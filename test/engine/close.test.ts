/**
 * `locker.close()` on the in-memory store (issue #10, "a locker that can be closed"): it refuses
 * new work with LockerClosedError, fails the acquisitions still waiting (local ones and the one
 * polling the store), gives back every lease it holds (their streams error with LockLostError
 * 'locker-closed', even with `onLost: 'notify'`; `release()` then resolves false and never
 * rejects), stops renewals, completes `events$`, closes the store it made (the default one's
 * sweeper) but never one it was given, and resolves once the store calls in flight settled — or
 * about `commandTimeout` after a store that never answers. `close()` twice is one promise, and
 * `await using` calls it.
 */
import { defer, finalize, firstValueFrom, lastValueFrom, NEVER, of, timer, type Subscription } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import {
  createLocker,
  isLockerClosedError,
  isLockLostError,
  MemoryLockStore,
  type AcquireResult,
  type Lease,
  type LockEvent,
  type LockStore,
} from '../../src/index.js';
import type { LockEngine } from '../../src/engine/LockEngine.js';
import { recordingLocker } from '../support/recordingStore.js';
import { sleep } from '../support/timing.js';
import { expectNoUnhandledRejections } from '../support/unhandled.js';

expectNoUnhandledRejections();

function setup(options: Parameters<typeof createLocker>[0] = {}) {
  const made = recordingLocker(options);
  let completed = false;
  made.locker.events$.subscribe({ complete: () => (completed = true) });
  return { ...made, engine: made.locker as unknown as LockEngine, completed: () => completed };
}

/** Subscribes and records how the stream ends. */
function watch<T>(source: import('rxjs').Observable<T>) {
  const seen: { values: T[]; error?: unknown; completed: boolean; sub?: Subscription } = { values: [], completed: false };
  seen.sub = source.subscribe({
    next: (v) => seen.values.push(v),
    error: (e) => (seen.error = e),
    complete: () => (seen.completed = true),
  });
  return seen;
}

describe('after close(), new work is refused', () => {
  it('acquire, withLock and using, created before or after close, error with LockerClosedError on subscription; no store call', async () => {
    const { locker, store } = setup();
    const early = { acquire: locker.acquire('k'), withLock: of(1).pipe(locker.withLock('k')), using: locker.using('k', () => of(1)) };
    await locker.close();
    expect(locker.closed).toBe(true);
    let workRan = false;
    const late = {
      acquire: locker.acquire('k'),
      withLock: defer(() => ((workRan = true), of(1))).pipe(locker.withLock('k')),
      using: locker.using('k', () => ((workRan = true), of(1))),
    };
    for (const [name, source] of [...Object.entries(early), ...Object.entries(late)]) {
      const error = await firstValueFrom(source as import('rxjs').Observable<unknown>).catch((e: unknown) => e);
      expect(isLockerClosedError(error), name).toBe(true);
      expect(error).toMatchObject({ name: 'LockerClosedError', key: 'k' });
    }
    expect(workRan).toBe(false);
    expect(store.calls).toEqual([]);
  });
});

describe('close() ends what is waiting', () => {
  it('fails every waiting acquisition with LockerClosedError — the one polling the store and those queued behind it — and stops polling', async () => {
    const { memory, store, locker, events, engine } = setup({ retry: { minDelay: 5, jitter: 0 } });
    await memory.tryAcquire('k', 'someone-else', 60_000);
    const waiters = Array.from({ length: 4 }, () => watch(locker.acquire('k')));
    await sleep(30); // the first polls the store, the others wait in the local line
    expect(store.count('tryAcquire')).toBeGreaterThan(1);
    await locker.close();
    for (const w of waiters) expect(isLockerClosedError(w.error)).toBe(true);
    expect(events.filter((e) => e.type === 'closed')).toHaveLength(4);
    const attempts = store.count('tryAcquire');
    await sleep(50);
    expect(store.count('tryAcquire')).toBe(attempts);
    expect(engine.liveKeys).toBe(0);
    expect(memory.holder('k')).toBe('someone-else');
  });

  it("fails acquisitions waiting behind a holder of the same locker, and gives the holder's lock back", async () => {
    const { memory, locker } = setup();
    const holder = await firstValueFrom(locker.acquire('k'));
    const behind = [watch(locker.acquire('k')), watch(locker.acquire('k', { retry: () => timer(5) })), watch(locker.acquire('k', { waitTimeout: Infinity }))];
    await locker.close();
    for (const w of behind) expect(isLockerClosedError(w.error)).toBe(true);
    expect(holder.held).toBe(false);
    expect(memory.holder('k')).toBeUndefined();
  });

  it('an acquire in flight at close fails at once; its late grant is given back before close resolves', async () => {
    const memory = new MemoryLockStore();
    // The store answers when the test says so (not after a sleep, which a loaded machine stretches
    // past the test's own waits).
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => (answer = resolve));
    const slow: LockStore = {
      tryAcquire: async (key, token, ttl, fences): Promise<AcquireResult> => {
        await answered;
        return memory.tryAcquire(key, token, ttl, fences);
      },
      release: (key, token) => memory.release(key, token),
      extend: (key, token, ttl) => memory.extend(key, token, ttl),
    };
    const locker = createLocker({ store: slow, keyPrefix: '' });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const waiter = watch(locker.acquire('k'));
    await sleep(10);
    let closed = false;
    const closing = locker.close().then(() => (closed = true));
    await sleep(0);
    expect(isLockerClosedError(waiter.error)).toBe(true);
    await sleep(50);
    expect(closed).toBe(false); // it waits for the store's answer
    answer();
    await closing;
    expect(memory.holder('k')).toBeUndefined(); // and gave the late grant back
    expect(events.some((e) => e.type === 'abandoned-released')).toBe(true);
  });
});

describe('close() gives back what is held', () => {
  it('an acquired lease: lost$ says locker-closed, the key is deleted, release() resolves false and never rejects', async () => {
    const { memory, locker, events } = setup();
    const lease = await firstValueFrom(locker.acquire('k'));
    const lost = firstValueFrom(lease.lost$);
    await locker.close();
    const error = await lost;
    expect(isLockLostError(error)).toBe(true);
    expect(error).toMatchObject({ reason: 'locker-closed', key: 'k', token: lease.token });
    expect(lease.held).toBe(false);
    expect(memory.holder('k')).toBeUndefined();
    expect(events.filter((e) => e.type === 'lost')).toMatchObject([{ id: lease.id, reason: 'locker-closed' }]);
    await expect(lease.release()).resolves.toBe(false);
    await expect(lease.extend()).resolves.toBe(false);
  });

  it('every lease it holds is given back, with one release call each', async () => {
    const { memory, store, locker } = setup();
    const leases = await Promise.all(['a', 'b', 'c'].map((k) => firstValueFrom(locker.acquire(k))));
    await locker.close();
    expect(memory.size).toBe(0);
    for (const lease of leases) expect(lease.held).toBe(false);
    expect(
      store.calls
        .filter((c) => c.op === 'release')
        .map((c) => c.key)
        .sort(),
    ).toEqual(['a', 'b', 'c']);
  });

  it('a lease whose lost$ handler calls release() during close: release() resolves false, one release call, no released event after lost', async () => {
    // Whoever hears of the loss may give the lease back at once (whileHeld does, for withLock and
    // using): that must not release the key a second time, nor stop close() from reaching the
    // other keys.
    const { memory, store, locker, events } = setup();
    const leases = await Promise.all(['a', 'b'].map((k) => firstValueFrom(locker.acquire(k))));
    const answers: Array<Promise<boolean>> = [];
    for (const lease of leases) lease.lost$.subscribe(() => answers.push(lease.release()));
    await locker.close();
    expect(answers).toHaveLength(2);
    expect(await Promise.all(answers)).toEqual([false, false]);
    expect(memory.size).toBe(0);
    expect(
      store.calls
        .filter((c) => c.op === 'release')
        .map((c) => c.key)
        .sort(),
    ).toEqual(['a', 'b']);
    expect(events.filter((e) => e.type === 'released')).toEqual([]);
  });

  for (const onLost of ['error', 'notify'] as const) {
    it(`withLock and using streams error with LockLostError 'locker-closed' and their work is stopped (onLost: '${onLost}')`, async () => {
      const { memory, locker } = setup({ onLost });
      let withLockStopped = false;
      let usingStopped = false;
      const a = watch(
        NEVER.pipe(
          finalize(() => (withLockStopped = true)),
          locker.withLock('a'),
        ),
      );
      const b = watch(locker.using('b', () => NEVER.pipe(finalize(() => (usingStopped = true)))));
      await sleep(10);
      expect(memory.size).toBe(2);
      await locker.close();
      for (const s of [a, b]) {
        expect(isLockLostError(s.error)).toBe(true);
        expect(s.error).toMatchObject({ reason: 'locker-closed' });
      }
      expect(withLockStopped).toBe(true);
      expect(usingStopped).toBe(true);
      expect(memory.size).toBe(0);
    });
  }

  it('a release already in flight at close is waited for', async () => {
    const memory = new MemoryLockStore();
    const slowRelease: LockStore = {
      tryAcquire: (key, token, ttl, fences) => memory.tryAcquire(key, token, ttl, fences),
      release: async (key, token) => {
        await sleep(100);
        return memory.release(key, token);
      },
      extend: (key, token, ttl) => memory.extend(key, token, ttl),
    };
    const locker = createLocker({ store: slowRelease, keyPrefix: '' });
    const lease = await firstValueFrom(locker.acquire('k'));
    const released = lease.release();
    const started = performance.now();
    await locker.close();
    expect(performance.now() - started).toBeGreaterThanOrEqual(80);
    expect(memory.holder('k')).toBeUndefined();
    await expect(released).resolves.toBe(true);
  });

  it('close() between a release and the local hand-off it started: the waiter fails, the key is given back once', async () => {
    const { memory, store, locker } = setup();
    const holder = await firstValueFrom(locker.acquire('k'));
    const next = watch(locker.acquire('k'));
    const released = holder.release(); // passes the lock on in a microtask…
    const closing = locker.close(); // …that close() comes before
    await closing;
    await expect(released).resolves.toBe(true);
    expect(isLockerClosedError(next.error)).toBe(true);
    expect(next.values).toEqual([]);
    expect(memory.holder('k')).toBeUndefined();
    expect(store.count('release')).toBe(1);
  });

  it('no renewal is sent after close', async () => {
    const { store, locker } = setup();
    const leases = await Promise.all(['a', 'b', 'c'].map((k) => firstValueFrom(locker.acquire(k, { ttl: 60, renew: { interval: 10 } }))));
    await sleep(50);
    expect(store.count('extend') + store.count('extendMany')).toBeGreaterThan(0); // renewals ran
    await locker.close();
    const renewals = store.count('extend') + store.count('extendMany');
    await sleep(150);
    expect(store.count('extend') + store.count('extendMany')).toBe(renewals);
    for (const lease of leases) expect(lease.held).toBe(false);
  });

  it('no timer of the locker is left behind: the renewal timer is stopped', async () => {
    const store = new MemoryLockStore();
    const locker = createLocker({ store, ttl: 60_000 });
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      await firstValueFrom(locker.acquire('k'));
      await locker.close();
      store.close();
      // (the calls' commandTimeout timer, 2 s, may still fire once: it is not the renewals')
      vi.advanceTimersByTime(10_000);
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('the close() promise', () => {
  it('close() twice, and Symbol.asyncDispose, return the same promise; events$ completes; no event after it', async () => {
    const { locker, events, completed } = setup();
    await firstValueFrom(locker.acquire('k'));
    const first = locker.close();
    expect(locker.close()).toBe(first);
    expect(locker[Symbol.asyncDispose]()).toBe(first);
    await first;
    expect(completed()).toBe(true);
    const count = events.length;
    await firstValueFrom(locker.acquire('k')).catch(() => undefined);
    expect(events).toHaveLength(count);
  });

  it('`await using` closes the locker at the end of the block, giving its leases back', async () => {
    const memory = new MemoryLockStore();
    let lease: Lease;
    let escaped: ReturnType<typeof createLocker>;
    {
      await using locker = createLocker({ store: memory });
      escaped = locker;
      lease = await firstValueFrom(locker.acquire('k'));
      expect(memory.size).toBe(1);
    }
    expect(escaped.closed).toBe(true);
    expect(lease.held).toBe(false);
    expect(memory.size).toBe(0);
    memory.close();
  });

  it('never rejects, even when the store fails every call', async () => {
    const memory = new MemoryLockStore();
    let failing = false;
    const flaky: LockStore = {
      tryAcquire: (key, token, ttl, fences) => memory.tryAcquire(key, token, ttl, fences),
      release: () => (failing ? Promise.reject(new Error('store down')) : Promise.resolve(true)),
      extend: (key, token, ttl) => memory.extend(key, token, ttl),
    };
    const locker = createLocker({ store: flaky, keyPrefix: '' });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    await firstValueFrom(locker.acquire('k'));
    failing = true;
    await expect(locker.close()).resolves.toBeUndefined();
    expect(events.some((e) => e.type === 'release-failed')).toBe(true);
  });

  it('with a store that never answers, close() resolves about commandTimeout after it was called', async () => {
    const COMMAND_TIMEOUT = 400;
    const memory = new MemoryLockStore();
    let frozen = false;
    const never = new Promise<never>(() => undefined);
    const freezable: LockStore = {
      tryAcquire: (key, token, ttl, fences) => (frozen ? never : memory.tryAcquire(key, token, ttl, fences)),
      release: (key, token) => (frozen ? never : memory.release(key, token)),
      extend: (key, token, ttl) => (frozen ? never : memory.extend(key, token, ttl)),
    };
    const locker = createLocker({ store: freezable, keyPrefix: '', commandTimeout: COMMAND_TIMEOUT });
    await firstValueFrom(locker.acquire('held'));
    await memory.tryAcquire('busy', 'someone-else', 60_000);
    const waiter = watch(locker.acquire('busy', { retry: { minDelay: 1, jitter: 0 } }));
    await sleep(20);
    frozen = true; // from now on every call hangs: an acquire is in flight, the release will hang
    await sleep(5);
    const started = performance.now();
    await locker.close();
    const ms = performance.now() - started;
    expect(isLockerClosedError(waiter.error)).toBe(true);
    // "about commandTimeout": the release close() sends times out after commandTimeout; calls
    // abandoned earlier must not add a second commandTimeout on top
    expect(ms).toBeGreaterThanOrEqual(COMMAND_TIMEOUT - 10);
    expect(ms, `close() took ${Math.round(ms)} ms with commandTimeout ${COMMAND_TIMEOUT}`).toBeLessThan(COMMAND_TIMEOUT * 1.5);
  });
});

describe('the store', () => {
  it('the default in-memory store (made by the locker) is closed: its sweeper stops', async () => {
    const locker = createLocker();
    const engine = locker as unknown as { access: { store: MemoryLockStore } };
    const store = engine.access.store;
    expect(store).toBeInstanceOf(MemoryLockStore);
    await firstValueFrom(locker.acquire('k'));
    expect(store['sweeper']).toBeDefined();
    await locker.close();
    expect(store['sweeper']).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it("a store the user passed in is not closed: another locker's lock on it stays, and it works on", async () => {
    const memory = new MemoryLockStore();
    const mine = createLocker({ store: memory, keyPrefix: '' });
    const other = createLocker({ store: memory, keyPrefix: '' });
    const theirs = await firstValueFrom(other.acquire('theirs'));
    await firstValueFrom(mine.acquire('mine'));
    await mine.close();
    expect(memory.holder('mine')).toBeUndefined();
    expect(memory.holder('theirs')).toBe(theirs.token);
    expect(memory['sweeper']).toBeDefined();
    expect(theirs.held).toBe(true);
    const values = await lastValueFrom(of('still works').pipe(other.withLock('again')));
    expect(values).toBe('still works');
    await theirs.release();
    await other.close();
    memory.close();
  });
});
