/**
 * A semaphore's permits passed on in-process (src/engine/shared/PermitPasses.ts), on the in-memory
 * store: a releasing holder hands its permits — store lease, token, renewal — to the oldest local
 * waiter that asked for the same, with the next fence of its grant's block and without a store
 * call; within the cohort policy's bounds; never for read-write locks, another limit, weight or
 * TTL, a lost lease, or a waiter that left; the passed waiter's place in the store's line is given
 * up; closing the locker mid-pass gives the permits back.
 */
import { firstValueFrom, from, lastValueFrom, of, type Observable, type Subscription } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, isLockerClosedError, MemoryLockStore, type Lease, type LockEvent, type Locker, type LockerOptions } from '../../src/index.js';
import type { LockEngine } from '../../src/engine/LockEngine.js';
import type { SharedLocks } from '../../src/engine/shared/SharedLocks.js';
import { sleep } from '../support/timing.js';

const opened: Locker[] = [];
afterEach(async () => {
  for (const locker of opened.splice(0)) await locker.close();
});

/** The locker's shared locks (for their pass turns). */
function sharedOf(locker: Locker): SharedLocks {
  return (locker as unknown as LockEngine as unknown as { shared: SharedLocks }).shared;
}

/**
 * A memory store that counts its shared-lock calls; `releaseDelay` ms before each releaseShared
 * answers; `failReleases` makes releaseShared reject.
 */
function countingSharedStore(releaseDelay = 0) {
  const store = new MemoryLockStore();
  const calls = { acquire: 0, release: 0, released: 0, leave: 0, fencesAsked: [] as number[], failReleases: false };
  const acquire = store.tryAcquireShared.bind(store);
  const release = store.releaseShared.bind(store);
  const leave = store.leaveShared.bind(store);
  store.tryAcquireShared = (key, token, ttl, weight, capacity, place, fences) => {
    calls.acquire++;
    calls.fencesAsked.push(fences ?? 1);
    return acquire(key, token, ttl, weight, capacity, place, fences);
  };
  store.releaseShared = async (key, token) => {
    calls.release++;
    if (releaseDelay > 0) await sleep(releaseDelay);
    if (calls.failReleases) throw new Error('store down');
    const answer = await release(key, token);
    calls.released++;
    return answer;
  };
  store.leaveShared = (key, token) => (calls.leave++, leave(key, token));
  return { store, calls };
}

/**
 * Turns that outlast a slow machine's steps: waiters that join after the store grant get passes
 * only within the turn, 12 ms by default, which a loaded machine can spend between two releases.
 */
const LONG_TURNS = { maxPasses: 256, maxMs: 60_000, roundMs: 60_000 };

function newLocker(store: MemoryLockStore, options: Partial<LockerOptions> = {}): Locker {
  const locker = createLocker({ store, retry: { minDelay: 1, jitter: 2 }, ...options });
  opened.push(locker);
  return locker;
}

/** Subscribes to an acquisition; `lease` resolves with what it emits. */
function waitFor(lease$: Observable<Lease>): { lease: Promise<Lease>; subscription: Subscription; error: Promise<unknown> } {
  let subscription!: Subscription;
  let fail!: (e: unknown) => void;
  const error = new Promise<unknown>((r) => (fail = r));
  const lease = new Promise<Lease>((resolve) => {
    subscription = lease$.subscribe({ next: resolve, error: fail });
  });
  return { lease, subscription, error };
}

/** Until the store's line for `key` holds `n` waiters. */
async function waitersInLine(store: MemoryLockStore, key: string, n: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (((await store.inspectShared(`lock:${key}`))?.waiting ?? 0) >= n) return;
    await sleep(2);
  }
  throw new Error(`${n} waiters never stood in line for ${key}`);
}

describe('a semaphore passes its permits on in-process', () => {
  it('to the oldest local waiter that asked for the same: no store call, the same token, the next fence; its place is given up', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store, { cohort: LONG_TURNS });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
    const c = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 2);
    // the first grant reserved fences for the waiters behind it: it was alone then, so a spare block
    expect(calls.fencesAsked[0]).toBeGreaterThan(1);
    const before = { ...calls };

    expect(await a.release()).toBe(true);
    const bLease = await b.lease;
    expect(bLease.token).toBe(a.token);
    expect(bLease.fence).toBe(a.fence + 1);
    expect(calls.release).toBe(before.release); // nothing went to the store for the pass
    expect(bLease.held).toBe(true);

    expect(await bLease.release()).toBe(true);
    const cLease = await c.lease;
    expect(cLease.token).toBe(a.token);
    expect(cLease.fence).toBe(a.fence + 2);
    expect(calls.release).toBe(before.release);

    // the passed waiters left the store's line (one leave each); one holder in the store all along
    await sleep(5);
    expect(calls.leave).toBe(before.leave + 2);
    const info = await store.inspectShared('lock:s');
    expect(info).toMatchObject({ used: 1, waiting: 0 });
    expect(info!.holders.map((h) => h.token)).toEqual([a.token]);

    expect(await cLease.release()).toBe(true);
    expect(calls.release).toBe(before.release + 1);
    expect(await store.inspectShared('lock:s')).toBeNull();
    expect(sharedOf(locker).passState).toBe(0); // the turn went with the lease
    const acquired = events.filter((e) => e.type === 'acquired');
    expect(acquired.map((e) => e.type === 'acquired' && e.passed)).toEqual([false, true, true]);
    await sleep(5);
    const released = events.filter((e) => e.type === 'released');
    expect(released.map((e) => e.type === 'released' && e.outcome)).toEqual(['passed', 'passed', 'released']);
  });

  it('withPermit and usingPermit pass their permits on as acquirePermit does', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store, { cohort: LONG_TURNS });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    // the first holds until the two others stand in the store's line
    const first = lastValueFrom(locker.usingPermit('s', () => from(waitersInLine(store, 's', 2)), { limit: 1 }));
    const second = lastValueFrom(of('with').pipe(locker.withPermit('s', { limit: 1 })));
    const third = lastValueFrom(locker.usingPermit('s', () => of('using'), { limit: 1 }));
    expect(await Promise.all([first, second, third])).toEqual([undefined, 'with', 'using']);
    const acquired = events.filter((e) => e.type === 'acquired');
    expect(acquired.map((e) => e.type === 'acquired' && e.passed)).toEqual([false, true, true]);
    expect(calls.release).toBe(1); // one store lease, passed on twice, given back once
  });

  it('within the cohort bounds: after maxPasses the permits go back to the store, whose line decides', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store, { cohort: { maxPasses: 1, maxMs: 60_000, roundMs: 60_000 } });
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
    const c = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 2);
    await a.release();
    const bLease = await b.lease;
    expect(bLease.token).toBe(a.token);
    await bLease.release();
    expect(calls.release).toBe(1);
    const cLease = await c.lease;
    expect(cLease.token).not.toBe(a.token); // a store grant from the line
    expect(cLease.fence).toBeGreaterThan(bLease.fence);
    await cLease.release();
  });

  for (const [name, options] of [
    ['cohort: false', { cohort: false }],
    ['localGate: false', { localGate: false }],
  ] as const) {
    it(`never with ${name}: every holder is a store grant`, async () => {
      const { store, calls } = countingSharedStore();
      const locker = newLocker(store, options);
      const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
      const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
      await waitersInLine(store, 's', 1);
      await a.release();
      const bLease = await b.lease;
      expect(bLease.token).not.toBe(a.token);
      expect(calls.fencesAsked.every((n) => n === 1)).toBe(true);
      await bLease.release();
    });
  }

  for (const [name, holder, waiter] of [
    ['another key', { key: 's', limit: 1 }, { key: 't', limit: 1 }],
    ['more permits of the same limit', { key: 's', limit: 3, permits: 2 }, { key: 's', limit: 3, permits: 3 }],
    ['the same permits of another limit', { key: 's', limit: 3, permits: 3 }, { key: 's', limit: 4, permits: 3 }],
    ['another TTL', { key: 's', limit: 1 }, { key: 's', limit: 1, ttl: 5_000 }],
    ['another renewal', { key: 's', limit: 1 }, { key: 's', limit: 1, renew: false }],
    ['no renewal against renewal', { key: 's', limit: 1, renew: false }, { key: 's', limit: 1 }],
    ['another renewal interval', { key: 's', limit: 1, renew: { interval: 2_000 } }, { key: 's', limit: 1, renew: { interval: 3_000 } }],
    ['a renewal interval of its own', { key: 's', limit: 1 }, { key: 's', limit: 1, renew: { interval: 3_000 } }],
  ] as const) {
    it(`never to a waiter that asked for ${name}`, async () => {
      const { store } = countingSharedStore();
      const locker = newLocker(store);
      const other = newLocker(store);
      const { key, ...holding } = holder;
      const a = await firstValueFrom(locker.acquirePermit(key, holding));
      // (another locker holds 't' so that a waiter for it waits too)
      const blocker = key === waiter.key ? undefined : await firstValueFrom(other.acquirePermit(waiter.key, { limit: 1 }));
      const { key: waiterKey, ...asking } = waiter;
      const b = waitFor(locker.acquirePermit(waiterKey, asking));
      await waitersInLine(store, waiterKey, 1);
      await a.release();
      await blocker?.release();
      const bLease = await b.lease;
      expect(bLease.token).not.toBe(a.token);
      await bLease.release();
      expect(sharedOf(locker).passState).toBe(0);
    });
  }

  it('passes between holders that asked for no renewal alike', async () => {
    const { store } = countingSharedStore();
    const locker = newLocker(store);
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1, renew: false }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1, renew: false }));
    await waitersInLine(store, 's', 1);
    await a.release();
    expect((await b.lease).token).toBe(a.token);
    await (await b.lease).release();
  });

  it('read-write locks never pass, and their grants reserve one fence', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store);
    const w = await firstValueFrom(locker.acquireWriteLock('rw'));
    const next = waitFor(locker.acquireWriteLock('rw'));
    const reader = waitFor(locker.acquireReadLock('rw'));
    await waitersInLine(store, 'rw', 2);
    await w.release();
    const nextLease = await next.lease;
    expect(nextLease.token).not.toBe(w.token);
    await nextLease.release();
    await (await reader.lease).release();
    expect(calls.fencesAsked.every((n) => n === 1)).toBe(true);
    expect(sharedOf(locker).passState).toBe(0);
  });

  it("a turn's passes beyond the time bound go to the waiters that were there at the store grant, each once, and only to those that asked for the same", async () => {
    const { store } = countingSharedStore();
    // roundMs 0: with others in the store's line at the grant the turn has no time, only the batch
    const locker = newLocker(store, { cohort: { maxPasses: 256, maxMs: 60_000, roundMs: 0 } });
    const other = newLocker(store);
    const third = newLocker(store);
    const blocker = await firstValueFrom(other.acquirePermit('s', { limit: 1 }));
    const a1 = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 1);
    const a2 = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 2);
    const odd = waitFor(locker.acquirePermit('s', { limit: 2, permits: 2 })); // asks for something else
    await waitersInLine(store, 's', 3);
    const c = waitFor(third.acquirePermit('s', { limit: 1 })); // (not other's: the blocker would pass to it)
    await waitersInLine(store, 's', 4);
    await blocker.release(); // the store grants a1 from the line: a2 (same ask) is its batch; odd is not
    const first = await a1.lease;
    const a3 = waitFor(locker.acquirePermit('s', { limit: 1 })); // after the grant: not in the batch
    await waitersInLine(store, 's', 4);
    await first.release();
    const second = await a2.lease;
    expect(second.token).toBe(first.token);
    await second.release(); // the batch had its pass, the turn has no time left: back to the store
    const fromStore = await Promise.race([a3.lease, (async () => (await odd.lease) && undefined)(), (async () => (await c.lease) && undefined)()]);
    expect(fromStore?.token).not.toBe(first.token);
    for (const lease of await Promise.all([odd.lease, c.lease, a3.lease].map((p) => p.then(async (l) => (await l.release(), l))))) expect(lease).toBeDefined();
    expect(sharedOf(locker).passState).toBe(0);
  });

  it('a waiter that leaves before the pass lands: the permits go to the next one, or back to the store', async () => {
    const { store } = countingSharedStore();
    const locker = newLocker(store, { cohort: LONG_TURNS });
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
    const c = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 2);
    const released = a.release();
    b.subscription.unsubscribe(); // after the pass was decided, before it lands (a microtask)
    expect(await released).toBe(true);
    const cLease = await c.lease;
    expect(cLease.token).toBe(a.token);
    expect(cLease.fence).toBe(a.fence + 1);

    const d = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 1);
    const last = cLease.release();
    d.subscription.unsubscribe();
    expect(await last).toBe(true);
    await sleep(10);
    expect(await store.inspectShared('lock:s')).toBeNull(); // nobody took it: given back
  });

  it("a turn's length counts the other processes in the store's line, not this locker's own waiters there", async () => {
    const { store } = countingSharedStore();
    // a turn of roundMs / (others + 1): 3 s with nobody else in line, 1 s if the two local waiters counted
    const locker = newLocker(store, { cohort: { maxPasses: 256, maxMs: 60_000, roundMs: 3_000 } });
    const other = newLocker(store);
    const blocker = await firstValueFrom(other.acquirePermit('s', { limit: 1 }));
    const waits = [0, 1, 2].map(() => waitFor(locker.acquirePermit('s', { limit: 1 })));
    await waitersInLine(store, 's', 3);
    await blocker.release(); // the store grants the first from its line: the two others are still in it
    const first = await waits[0]!.lease;
    const late = waitFor(locker.acquirePermit('s', { limit: 1 })); // after the grant: a pass only within the turn
    await sleep(1_500);
    let holder = first;
    for (const next of [waits[1]!, waits[2]!, late]) {
      await holder.release();
      holder = await next.lease;
      expect(holder.token).toBe(first.token);
    }
    await holder.release();
  });

  it("a store that does not say who waits in its line: a turn lasts the cohort's maxMs", async () => {
    const { store } = countingSharedStore();
    const acquire = store.tryAcquireShared.bind(store);
    store.tryAcquireShared = async (...args) => {
      const { waiting: _, ...result } = (await acquire(...args)) as { waiting?: number; acquired: boolean };
      return result as Awaited<ReturnType<typeof acquire>>;
    };
    const locker = newLocker(store, { cohort: { maxPasses: 256, maxMs: 60_000, roundMs: 1 } });
    const first = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const late = waitFor(locker.acquirePermit('s', { limit: 1 })); // after the grant: a pass only within the turn
    await waitersInLine(store, 's', 1);
    await sleep(20);
    await first.release();
    expect((await late.lease).token).toBe(first.token);
    await (await late.lease).release();
  });

  it('a store grant reserves fences for the passes it may make: a spare block alone or beside waiters that ask for something else, room for every pass beside one that asks for the same', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store);
    const other = newLocker(store);
    const held = await firstValueFrom(other.acquirePermit('t', { limit: 1 }));
    const unlike = [
      waitFor(locker.acquirePermit('t', { limit: 1 })), // another key
      waitFor(locker.acquirePermit('t', { limit: 1, ttl: 5_000 })), // another TTL
      waitFor(locker.acquirePermit('t', { limit: 1, renew: false })), // another renewal
    ];
    await waitersInLine(store, 't', 3);
    // (beside them, on 's': another weight, another limit)
    const heavy = await firstValueFrom(other.acquirePermit('s', { limit: 3, permits: 3 }));
    const unlikeS = [waitFor(locker.acquirePermit('s', { limit: 3, permits: 2 })), waitFor(locker.acquirePermit('s', { limit: 4, permits: 2 }))];
    await waitersInLine(store, 's', 2);
    await heavy.release();
    const leases = await Promise.all(unlikeS.map((w) => w.lease));
    for (const lease of leases) await lease.release();
    calls.fencesAsked.length = 0;
    const alone = await firstValueFrom(locker.acquirePermit('u', { limit: 1 }));
    expect(calls.fencesAsked).toEqual([16]); // 1 + a spare 15 (CohortPolicy.fencesFor with nobody alike waiting)
    const alike = waitFor(locker.acquirePermit('u', { limit: 1 }));
    await waitersInLine(store, 'u', 1);
    const another = waitFor(locker.acquirePermit('u', { limit: 1 }));
    await waitersInLine(store, 'u', 2);
    // the second waiter asked with one alike waiting before it: room for maxPasses (256) passes
    expect(calls.fencesAsked.slice(1, 3)).toEqual([16, 257]);
    await alone.release();
    await (await alike.lease).release();
    await (await another.lease).release();
    await held.release();
    for (const w of unlike) await (await w.lease).release();
  });

  it('a pass that finds no taker gives the permits back, and a failed release then is reported', async () => {
    const { store, calls } = countingSharedStore();
    const locker = newLocker(store);
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 1);
    calls.failReleases = true;
    const released = a.release();
    b.subscription.unsubscribe();
    expect(await released).toBe(true);
    await sleep(20);
    expect(events.some((e) => e.type === 'release-failed')).toBe(true);
    expect(sharedOf(locker).passState).toBe(0);
  });

  it('a lost lease does not pass: its release answers false and the waiter gets a store grant', async () => {
    const { store } = countingSharedStore();
    const locker = newLocker(store);
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1, ttl: 60, renew: false }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1, ttl: 60, renew: false }));
    await sleep(100); // a's lease ended (no renewal); the store granted b from the line
    expect(await a.release()).toBe(false);
    const bLease = await b.lease;
    expect(bLease.token).not.toBe(a.token);
    await bLease.release();
    expect(sharedOf(locker).passState).toBe(0);
  });

  it('a lease whose validity ran out before its loss was noticed does not pass: release answers false, the waiter gets a store grant', async () => {
    const { store } = countingSharedStore();
    const locker = newLocker(store, { cohort: LONG_TURNS });
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1, ttl: 100, renew: false }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1, ttl: 100, renew: false }));
    await waitersInLine(store, 's', 1);
    // The holder's work keeps the event loop past the lease's validity (and the store's TTL): the
    // loss timer has not run when it releases.
    const until = performance.now() + 150;
    while (performance.now() < until) {
      // busy: a synchronous section that outlasts the lease
    }
    expect(await a.release()).toBe(false);
    const bLease = await b.lease;
    expect(bLease.token).not.toBe(a.token);
    await bLease.release();
    expect(sharedOf(locker).passState).toBe(0);
  });

  it('closing the locker while a pass is under way gives the permits back once, before close() resolves', async () => {
    const { store, calls } = countingSharedStore(30);
    const locker = newLocker(store, { cohort: LONG_TURNS });
    const a = await firstValueFrom(locker.acquirePermit('s', { limit: 1 }));
    const b = waitFor(locker.acquirePermit('s', { limit: 1 }));
    await waitersInLine(store, 's', 1);
    const released = a.release();
    const closed = locker.close();
    expect(await released).toBe(true);
    await closed;
    expect(calls.released).toBe(1); // answered before close() resolved
    expect(isLockerClosedError(await b.error)).toBe(true);
    expect(await store.inspectShared('lock:s')).toBeNull();
    await sleep(50);
    expect(calls.release).toBe(1);
  });

  it('under contention from two lockers on one store: never more holders than the limit, unique fences growing along each pass', async () => {
    const store = new MemoryLockStore();
    const lockers = [newLocker(store), newLocker(store)];
    let inside = 0;
    let most = 0;
    const fences: number[] = [];
    const passedFrom = new Map<number, number>(); // fence → the fence of the holder before it on the same lease
    const lastFenceOfToken = new Map<string, number>();
    await Promise.all(
      lockers.flatMap((locker) =>
        [0, 1, 2].map(async () => {
          for (let i = 0; i < 30; i++) {
            const lease = await firstValueFrom(locker.acquirePermit('hot', { limit: 2 }));
            inside++;
            most = Math.max(most, inside);
            fences.push(lease.fence);
            const before = lastFenceOfToken.get(lease.token);
            if (before !== undefined) passedFrom.set(lease.fence, before);
            lastFenceOfToken.set(lease.token, lease.fence);
            await sleep(Math.random() < 0.5 ? 0 : 1);
            inside--;
            await lease.release();
          }
        }),
      ),
    );
    expect(most).toBeLessThanOrEqual(2);
    expect(new Set(fences).size).toBe(fences.length);
    for (const [fence, before] of passedFrom) expect(fence).toBeGreaterThan(before);
    expect(passedFrom.size).toBeGreaterThan(0); // some permits did pass
    expect(await store.inspectShared('lock:hot')).toBeNull();
  });
});
