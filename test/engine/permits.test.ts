/**
 * Semaphores and read-write locks on the in-memory store, through the locker's operators: limits,
 * head-of-line fairness, cancellation, skip, loss, close, option validation, and the store
 * capability check.
 */
import {
  defer,
  EMPTY,
  finalize,
  firstValueFrom,
  ignoreElements,
  lastValueFrom,
  map,
  merge,
  mergeMap,
  NEVER,
  of,
  Subject,
  takeUntil,
  throwError,
  timer,
  type Observable,
} from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createLocker,
  isLockCapabilityError,
  isLockLostError,
  isLockOptionsError,
  isLockTimeoutError,
  MemoryLockStore,
  withPermit,
  withReadLock,
  withWriteLock,
  type LockEvent,
  type Locker,
} from '../../src/index.js';
import { coreOnly } from '../../src/store/capabilities.js';
import { sleep } from '../support/timing.js';

const opened: Locker[] = [];
afterEach(async () => {
  for (const locker of opened.splice(0)) await locker.close();
});

function newLocker(store = new MemoryLockStore(), options: Parameters<typeof createLocker>[0] = {}): Locker {
  const locker = createLocker({ store, retry: { minDelay: 1, jitter: 2 }, ...options });
  opened.push(locker);
  return locker;
}

/** Counts how many run at once. */
function gauge() {
  let inside = 0;
  let max = 0;
  const order: string[] = [];
  return {
    get max() {
      return max;
    },
    order,
    run: (name: string, ms: number, weight = 1): Observable<string> =>
      defer(() => {
        inside += weight;
        max = Math.max(max, inside);
        order.push(name);
        return timer(ms).pipe(
          map(() => name),
          finalize(() => (inside -= weight)),
        );
      }),
  };
}

describe('withPermit', () => {
  it("lets at most `limit` permits be held at once, counting each holder's permits", async () => {
    const locker = newLocker();
    const g = gauge();
    const jobs = Array.from({ length: 8 }, (_, i) =>
      g.run(`j${i}`, 10, i % 2 === 0 ? 2 : 1).pipe(locker.withPermit('k', { limit: 3, permits: i % 2 === 0 ? 2 : 1 })),
    );
    await lastValueFrom(merge(...jobs));
    expect(g.max).toBeLessThanOrEqual(3);
    expect(g.order).toHaveLength(8);
  });

  it('serves waiters first come, first served: a 3-permit waiter is not overtaken by 1-permit ones', async () => {
    const locker = newLocker();
    const g = gauge();
    const holder = g.run('holder', 30).pipe(locker.withPermit('fifo', { limit: 3 }));
    const big = g.run('big', 5, 3).pipe(locker.withPermit('fifo', { limit: 3, permits: 3 }));
    const smalls = Array.from({ length: 4 }, (_, i) => g.run(`small${i}`, 5).pipe(locker.withPermit('fifo', { limit: 3 })));
    // holder first (1 of 3); big queues at 5 ms; the small ones, which would fit, come after it and wait
    await lastValueFrom(merge(holder, delayed(big, 5), ...smalls.map((s) => delayed(s, 10))));
    expect(g.order.indexOf('big')).toBe(1);
  });

  it('a waiter that unsubscribes leaves the line, and a grant that comes anyway is given back', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const held = await firstValueFrom(locker.acquirePermit('leave', { limit: 1 }));
    const stop = new Subject<void>();
    const waiting = locker.acquirePermit('leave', { limit: 1 }).pipe(takeUntil(stop)).subscribe();
    await sleep(10);
    expect((await store.inspectShared('lock:leave'))?.waiting).toBe(1);
    stop.next();
    waiting.unsubscribe();
    await sleep(5);
    expect((await store.inspectShared('lock:leave'))?.waiting).toBe(0);
    await held.release();
    expect(await store.inspectShared('lock:leave')).toBeNull();
    expect(events.filter((e) => e.type === 'released')).toHaveLength(1);
  });

  it('a waiter that unsubscribes while its attempt is in flight leaves the line once the attempt settled, not before', async () => {
    const store = new MemoryLockStore();
    const acquire = store.tryAcquireShared.bind(store);
    const leave = store.leaveShared.bind(store);
    const calls: string[] = [];
    let slow = false;
    store.tryAcquireShared = async (...args) => {
      // (the store takes the place only after 40 ms: a leave sent before this settles would find
      // nothing to give up, and the place would stay in line until it lapses, 3 s on)
      if (slow) await sleep(40);
      const answer = await acquire(...args);
      calls.push('acquire settled');
      return answer;
    };
    store.leaveShared = (...args) => (calls.push('leave'), leave(...args));
    const locker = newLocker(store);
    const held = await firstValueFrom(locker.acquirePermit('inflight', { limit: 1 }));
    calls.length = 0;
    slow = true;
    const waiting = locker.acquirePermit('inflight', { limit: 1 }).subscribe({ error: () => undefined });
    await sleep(10);
    waiting.unsubscribe(); // the first attempt is still in flight
    await sleep(80);
    expect(calls).toEqual(['acquire settled', 'leave']);
    expect((await store.inspectShared('lock:inflight'))?.waiting).toBe(0);
    await held.release();
    expect(await store.inspectShared('lock:inflight')).toBeNull();
  });

  it('a waiter that unsubscribes while its attempt is being granted: the leave gives the permits back and says so (abandoned-released), once', async () => {
    const store = new MemoryLockStore();
    const acquire = store.tryAcquireShared.bind(store);
    store.tryAcquireShared = async (...args) => {
      const answer = await acquire(...args); // granted at once…
      await sleep(40); // …answered late
      return answer;
    };
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    let token: string | undefined;
    const waiting = locker.acquirePermit('granted-meanwhile', { limit: 1 }).subscribe({ next: (lease) => (token = lease.token), error: () => undefined });
    await sleep(10);
    expect((await store.inspectShared('lock:granted-meanwhile'))?.holders).toHaveLength(1);
    waiting.unsubscribe(); // the grant is on its way
    await sleep(80);
    expect(token).toBeUndefined();
    expect(await store.inspectShared('lock:granted-meanwhile')).toBeNull();
    const given = events.filter((e) => e.type === 'abandoned-released');
    expect(given).toEqual([{ type: 'abandoned-released', key: 'granted-meanwhile', token: expect.any(String), deleted: true }]);
    expect(events.filter((e) => e.type === 'acquired')).toEqual([]);
  });

  it('a waiter that unsubscribes while refused: its leave gives nothing back, and no abandoned-released is reported', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const held = await firstValueFrom(locker.acquirePermit('refused', { limit: 1 }));
    const waiting = locker.acquirePermit('refused', { limit: 1 }).subscribe({ error: () => undefined });
    await sleep(10);
    waiting.unsubscribe();
    await sleep(20);
    expect((await store.inspectShared('lock:refused'))?.waiting).toBe(0);
    expect(events.filter((e) => e.type === 'abandoned-released')).toEqual([]);
    await held.release();
  });

  it("onBusy: 'skip' completes empty when the permits are taken, and runs when one is free", async () => {
    const locker = newLocker();
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const held = await firstValueFrom(locker.acquirePermit('skip', { limit: 1 }));
    let ran = false;
    await lastValueFrom(defer(async () => (ran = true)).pipe(locker.withPermit('skip', { limit: 1, onBusy: 'skip' })), { defaultValue: undefined });
    expect(ran).toBe(false);
    // reported as a skip: one attempt, no wait
    expect(events.filter((e) => e.type === 'timed-out')).toEqual([
      { type: 'timed-out', key: 'skip', waitedMs: expect.any(Number), attempts: 1, skipped: true },
    ]);
    await held.release();
    await lastValueFrom(defer(async () => (ran = true)).pipe(locker.withPermit('skip', { limit: 1, onBusy: 'skip' })));
    expect(ran).toBe(true);
  });

  it("onBusy: 'skip' skips only a busy lock: a store failure still errors the stream", async () => {
    const store = new MemoryLockStore();
    store.tryAcquireShared = () => Promise.reject(new Error('connection refused'));
    const locker = newLocker(store);
    const error = await lastValueFrom(of('ran').pipe(locker.withPermit('skip-fails', { limit: 1, onBusy: 'skip' }))).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LockStoreError', key: 'skip-fails' });
  });

  it('times out with LockTimeoutError after waitTimeout, leaving the line; the error and the timed-out event say how long and how many attempts', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const held = await firstValueFrom(locker.acquirePermit('busy', { limit: 1 }));
    const started = performance.now();
    const error = await firstValueFrom(locker.acquirePermit('busy', { limit: 1, waitTimeout: 30 })).catch((e: unknown) => e);
    const took = performance.now() - started;
    expect(isLockTimeoutError(error)).toBe(true);
    if (!isLockTimeoutError(error)) return;
    // waited the wait limit (on the locker's clock), no longer than the call took
    expect(error.waitedMs).toBeGreaterThanOrEqual(29);
    expect(error.waitedMs).toBeLessThanOrEqual(took + 1);
    // (retry every 1–3 ms: several attempts, the first and the last that left the line among them)
    expect(error.attempts).toBeGreaterThanOrEqual(2);
    expect(events.filter((e) => e.type === 'timed-out')).toEqual([
      { type: 'timed-out', key: 'busy', waitedMs: error.waitedMs, attempts: error.attempts, skipped: false },
    ]);
    expect((await store.inspectShared('lock:busy'))?.waiting).toBe(0);
    await held.release();
  });

  describe('a retry function decides when a permit wait attempts again', () => {
    /** A memory store recording each shared call: `acquire:<place>` and `leave`. */
    function recordedStore() {
      const store = new MemoryLockStore();
      const calls: string[] = [];
      const acquire = store.tryAcquireShared.bind(store);
      const leave = store.leaveShared.bind(store);
      store.tryAcquireShared = (key, token, ttl, weight, capacity, place, fences) => (
        calls.push(`acquire:${place}`), acquire(key, token, ttl, weight, capacity, place, fences)
      );
      store.leaveShared = (key, token) => (calls.push('leave'), leave(key, token));
      return { store, calls };
    }

    it('one that completes without emitting: one last attempt, which leaves the line, then LockTimeoutError (even with waitTimeout Infinity)', async () => {
      const { store, calls } = recordedStore();
      const locker = newLocker(store);
      const events: LockEvent[] = [];
      locker.events$.subscribe((e) => events.push(e));
      const held = await firstValueFrom(locker.acquirePermit('gives-up', { limit: 1 }));
      calls.length = 0;
      const asked: number[] = [];
      const error = await firstValueFrom(
        locker.acquirePermit('gives-up', { limit: 1, waitTimeout: Infinity, retry: (n) => (asked.push(n), timer(5).pipe(ignoreElements())) }),
      ).catch((e: unknown) => e);
      expect(isLockTimeoutError(error)).toBe(true);
      expect(asked).toEqual([1]);
      expect(calls).toEqual(['acquire:keep', 'acquire:leave']);
      expect(events.filter((e) => e.type === 'timed-out')).toEqual([expect.objectContaining({ key: 'gives-up', attempts: 2, skipped: false })]);
      expect((await store.inspectShared('lock:gives-up'))?.waiting).toBe(0);
      await held.release();
    });

    it('one that stops after 3 retries: asked with 1 … 4, five attempts, the last leaving the line', async () => {
      const { store, calls } = recordedStore();
      const locker = newLocker(store);
      const held = await firstValueFrom(locker.acquirePermit('three', { limit: 1 }));
      calls.length = 0;
      const asked: number[] = [];
      const error = await firstValueFrom(
        locker.acquirePermit('three', { limit: 1, waitTimeout: Infinity, retry: (n) => (asked.push(n), n <= 3 ? timer(2) : EMPTY) }),
      ).catch((e: unknown) => e);
      expect(isLockTimeoutError(error)).toBe(true);
      expect(asked).toEqual([1, 2, 3, 4]);
      expect(calls).toEqual(['acquire:keep', 'acquire:keep', 'acquire:keep', 'acquire:keep', 'acquire:leave']);
      expect((error as { attempts: number }).attempts).toBe(5);
      expect((await store.inspectShared('lock:three'))?.waiting).toBe(0);
      await held.release();
    });

    it('one that errors: the acquisition fails with that very error and the waiter leaves the line', async () => {
      const { store, calls } = recordedStore();
      const locker = newLocker(store);
      const events: LockEvent[] = [];
      locker.events$.subscribe((e) => events.push(e));
      const held = await firstValueFrom(locker.acquirePermit('errs', { limit: 1 }));
      calls.length = 0;
      const failure = new Error('retry policy failed');
      const error = await firstValueFrom(locker.acquirePermit('errs', { limit: 1, waitTimeout: Infinity, retry: () => throwError(() => failure) })).catch(
        (e: unknown) => e,
      );
      expect(error).toBe(failure);
      await sleep(10);
      expect(calls).toEqual(['acquire:keep', 'leave']);
      expect(events.filter((e) => e.type === 'timed-out')).toEqual([]);
      expect((await store.inspectShared('lock:errs'))?.waiting).toBe(0);
      await held.release();
    });
  });

  describe('a waiter whose retry policy sleeps long (no wake-up signals on this store)', () => {
    it('looks again when the first holder’s lease ends (an expiry frees permits unannounced), not a policy step later', async () => {
      const store = new MemoryLockStore({ placeTtl: 30_000 });
      const locker = newLocker(store);
      await firstValueFrom(locker.acquirePermit('expires', { limit: 1, ttl: 300, renew: false })); // never released
      const started = performance.now();
      const lease = await firstValueFrom(locker.acquirePermit('expires', { limit: 1, waitTimeout: 20_000, retry: { minDelay: 8_000, jitter: 0 } }));
      // the holder's key lapsed after 300 ms; the policy's step is 8 s
      expect(performance.now() - started).toBeLessThan(4_000);
      await lease.release();
    });

    it('refreshes its place before it lapses, so it keeps its turn in the line', async () => {
      const store = new MemoryLockStore({ placeTtl: 300 });
      const calls = { acquire: 0 };
      const acquire = store.tryAcquireShared.bind(store);
      store.tryAcquireShared = (...args) => (calls.acquire++, acquire(...args));
      const locker = newLocker(store);
      const held = await firstValueFrom(locker.acquirePermit('kept', { limit: 1, ttl: 30_000 }));
      const waiting = locker
        .acquirePermit('kept', { limit: 1, waitTimeout: 20_000, retry: { minDelay: 8_000, jitter: 0 } })
        .subscribe({ error: () => undefined });
      const lapsed: number[] = [];
      const until = performance.now() + 1_500;
      while (performance.now() < until) {
        const waitingNow = (await store.inspectShared('lock:kept'))?.waiting ?? 0;
        if (waitingNow !== 1) lapsed.push(Math.round(until - performance.now()));
        await sleep(20);
      }
      // its place (300 ms) was never missing from the line, though the policy sleeps 8 s
      expect(lapsed).toEqual([]);
      expect(calls.acquire).toBeGreaterThanOrEqual(1 + 4); // the holder's, then a refresh at least every 100 ms or so
      waiting.unsubscribe();
      await held.release();
    });
  });

  it('a lease that ends without renewal is lost with LockLostError, and its permit comes back', async () => {
    const locker = newLocker();
    const error = await lastValueFrom(NEVER.pipe(locker.withPermit('lost', { limit: 1, ttl: 40, renew: false }))).catch((e: unknown) => e);
    expect(isLockLostError(error)).toBe(true);
    const next = await firstValueFrom(locker.acquirePermit('lost', { limit: 1, waitTimeout: 200 }));
    await next.release();
  });

  it('renews holders while their work runs past the TTL', async () => {
    const locker = newLocker();
    const g = gauge();
    // each holds for twice its TTL (a TTL that leaves a stalled event loop room: 60 ms and 250 ms
    // did not, on a machine loaded by parallel full-suite runs)
    const run = (name: string) => g.run(name, 2000).pipe(locker.withPermit('renewed', { limit: 1, ttl: 1000 }));
    await lastValueFrom(merge(run('a'), run('b')));
    expect(g.max).toBe(1);
  });

  it('close(): waiters fail with LockerClosedError, holders lose their lease, permits are given back', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker(store);
    const holding = lastValueFrom(NEVER.pipe(locker.withPermit('close', { limit: 1 }))).catch((e: unknown) => e);
    await sleep(5);
    const waiting = firstValueFrom(locker.acquirePermit('close', { limit: 1 })).catch((e: unknown) => e);
    await sleep(5);
    await locker.close();
    expect(await holding).toMatchObject({ name: 'LockLostError', reason: 'locker-closed' });
    expect(await waiting).toMatchObject({ name: 'LockerClosedError' });
    expect(await store.inspectShared('lock:close')).toBeNull();
    await expect(firstValueFrom(locker.acquirePermit('close', { limit: 1 }))).rejects.toMatchObject({ name: 'LockerClosedError' });
  });

  it('a holder that releases after close() gave its permits back: answered false, nothing more sent to the store', async () => {
    const store = new MemoryLockStore();
    const releases: string[] = [];
    const releaseShared = store.releaseShared.bind(store);
    store.releaseShared = (key, token) => (releases.push(token), releaseShared(key, token));
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const lease = await firstValueFrom(locker.acquirePermit('closed-first', { limit: 2 }));
    await locker.close();
    expect(releases).toEqual([lease.token]);
    expect(await lease.release()).toBe(false);
    await sleep(20);
    expect(releases).toEqual([lease.token]);
    expect(events.filter((e) => e.type === 'released' || e.type === 'release-failed')).toEqual([]);
  });

  it('close() resolves only once the store answered the release of the permits it gave back', async () => {
    const store = new MemoryLockStore();
    const order: string[] = [];
    const releaseShared = store.releaseShared.bind(store);
    store.releaseShared = async (key, token) => {
      await sleep(30);
      const released = await releaseShared(key, token);
      order.push('released');
      return released;
    };
    const locker = newLocker(store, { commandTimeout: 30_000 });
    await firstValueFrom(locker.acquirePermit('slow-release', { limit: 1 }));
    await locker.close().then(() => order.push('closed'));
    expect(order).toEqual(['released', 'closed']);
  });

  it("a shared lock's store call that hangs fails with LockStoreError after commandTimeout", async () => {
    const store = new MemoryLockStore();
    store.tryAcquireShared = () => new Promise(() => undefined);
    const locker = newLocker(store, { commandTimeout: 50, waitTimeout: 20_000 });
    const error = await firstValueFrom(locker.acquirePermit('hangs', { limit: 1 })).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'LockStoreError', key: 'hangs' });
  });

  it('a changed limit: new grants fit their own limit, holders keep their permits', async () => {
    const store = new MemoryLockStore();
    const locker = newLocker(store);
    const three = await Promise.all([1, 2, 3].map(() => firstValueFrom(locker.acquirePermit('limit', { limit: 3 }))));
    // limit lowered to 2 while 3 are held: nobody is revoked, the new caller waits
    const lowered = firstValueFrom(locker.acquirePermit('limit', { limit: 2 }));
    await sleep(20);
    expect(three.every((lease) => lease.held)).toBe(true);
    await three[0]!.release();
    await sleep(20);
    expect((await store.inspectShared('lock:limit'))?.used).toBe(2); // still waiting: 2 held, limit 2
    await three[1]!.release();
    const lease = await lowered;
    // raised to 5: gets in at once beside them
    const raised = await firstValueFrom(locker.acquirePermit('limit', { limit: 5, waitTimeout: 0 }));
    for (const l of [three[2]!, lease, raised]) await l.release();
  });

  it('a fence per grant, increasing', async () => {
    const locker = newLocker();
    const fences: number[] = [];
    for (let i = 0; i < 3; i++) {
      await lastValueFrom(locker.usingPermit('fences', async (lease) => fences.push(lease.fence), { limit: 2 }));
    }
    expect(fences).toEqual([...fences].sort((a, b) => a - b));
    expect(new Set(fences).size).toBe(3);
  });
});

describe('read-write locks', () => {
  it('readers share, writers are exclusive', async () => {
    const locker = newLocker();
    let readers = 0;
    let writers = 0;
    let maxReaders = 0;
    const violations: string[] = [];
    const read = defer(() => {
      readers++;
      maxReaders = Math.max(maxReaders, readers);
      if (writers > 0) violations.push('read during write');
      return timer(10).pipe(finalize(() => readers--));
    }).pipe(locker.withReadLock('rw'));
    const write = defer(() => {
      writers++;
      if (writers > 1 || readers > 0) violations.push('write overlaps');
      return timer(5).pipe(finalize(() => writers--));
    }).pipe(locker.withWriteLock('rw'));
    await lastValueFrom(merge(read, read, write, read, write, read, read), { defaultValue: undefined });
    expect(violations).toEqual([]);
    expect(maxReaders).toBeGreaterThan(1);
  });

  it('a waiting writer is not starved by readers that keep coming', async () => {
    const locker = newLocker();
    const order: string[] = [];
    const reader = (i: number) => defer(() => (order.push(`r${i}`), timer(20))).pipe(locker.withReadLock('starve'));
    const writer = defer(() => (order.push('w'), timer(1))).pipe(locker.withWriteLock('starve'));
    // readers overlap continuously; the writer arrives after the first two
    await lastValueFrom(merge(reader(0), reader(1), delayed(writer, 5), ...[2, 3, 4, 5].map((i) => delayed(reader(i), 8 + i * 4))), {
      defaultValue: undefined,
    });
    expect(order.indexOf('w')).toBe(2);
  });
});

describe('the free operators', () => {
  it('withPermit, withReadLock and withWriteLock take the given locker, and check their options at once', async () => {
    const locker = newLocker();
    const g = gauge();
    await lastValueFrom(merge(...[0, 1, 2, 3].map((i) => g.run(`p${i}`, 5).pipe(withPermit('free', { limit: 2, locker })))));
    expect(g.max).toBe(2);
    const w = gauge();
    await lastValueFrom(
      merge(
        w.run('r1', 5).pipe(withReadLock('free-rw', { locker })),
        w.run('w', 5).pipe(withWriteLock('free-rw', { locker })),
        w.run('r2', 5).pipe(withReadLock('free-rw', { locker })),
      ),
    );
    expect(w.order).toEqual(['r1', 'w', 'r2']);
    expect(() => withPermit('k', { limit: 1, permits: 2, locker })).toThrow(/permits/);
    expect(() => withPermit('k', { limit: 1, locker: {} as Locker })).toThrow(/locker/);
    expect(() => withWriteLock('k', { reentrant: 1 } as never)).toThrow(/reentrant/);
    expect(() => withPermit('k', { limit: 1, reentrant: true, locker } as never)).toThrow(/reentrant/);
  });
});

describe('options and capability', () => {
  it('refuses bad limits and permits with LockOptionsError naming the option', () => {
    const locker = newLocker();
    const bad: Array<[unknown, string]> = [
      [undefined, 'options'],
      [{}, 'limit'],
      [{ limit: 0 }, 'limit'],
      [{ limit: 1.5 }, 'limit'],
      [{ limit: 2 ** 53 }, 'limit'],
      [{ limit: 2, permits: 3 }, 'permits'],
      [{ limit: 2, permits: 0 }, 'permits'],
      [{ limit: 2, reentrant: true }, 'options.reentrant'],
      [{ limit: 2, ttl: -1 }, 'ttl'],
    ];
    for (const [options, option] of bad) {
      let error: unknown;
      try {
        locker.withPermit('k', options as never);
      } catch (e) {
        error = e;
      }
      expect(isLockOptionsError(error), JSON.stringify(options)).toBe(true);
      expect(error).toMatchObject({ option });
    }
    expect(() => locker.withReadLock('k', { reentrant: 'yes' } as never)).toThrow(/reentrant/);
    expect(() => locker.acquirePermit('k', { limit: 1, reentrant: true } as never)).toThrow(/reentrant/);
    expect(() => locker.acquireWriteLock('k', { onBusy: 'skip' } as never)).toThrow(/onBusy/);
    expect(() => locker.withPermit('', { limit: 1 })).toThrow(/key/);
  });

  it('a store without shared locks: the stream errors with LockCapabilityError', async () => {
    const locker = newLocker(coreOnly(new MemoryLockStore()) as MemoryLockStore);
    const error = await firstValueFrom(locker.acquireReadLock('k')).catch((e: unknown) => e);
    expect(isLockCapabilityError(error)).toBe(true);
    expect(error).toMatchObject({ capability: 'shared' });
  });
});

function delayed<T>(source: Observable<T>, ms: number): Observable<T> {
  return timer(ms).pipe(mergeMap(() => source));
}
