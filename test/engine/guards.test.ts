/**
 * The safety guards of the gate and the lease, each pinned by a test that fails without it
 * (found by mutation testing: `npm run mutation`). Most are about a lease whose validity has
 * passed while its deadline timer has not fired yet — the event loop was blocked (a long
 * synchronous computation, a GC pause): the lease must then be treated as lost, not handed on,
 * extended or revived.
 */
import { firstValueFrom, lastValueFrom, of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type Lease, type LockStore } from '../../src/index.js';
import type { AcquireResult, ExtendOutcome } from '../../src/store/LockStore.js';
import { RecordingStore, recordingLocker } from '../support/recordingStore.js';

/** Blocks the event loop for `ms` (what a long synchronous computation or a GC pause does). */
function block(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

const setup = recordingLocker;

describe('the local pass checks the lease is still valid', () => {
  it('a holder that releases after its validity passed (loop blocked) does not pass the lock on: the next waiter goes to the store', async () => {
    const { store, locker } = setup({ ttl: 100, renew: false, cohort: { maxMs: 60_000 } });
    const first = await firstValueFrom(locker.acquire('k'));
    const heldAtGrant: boolean[] = [];
    const second = lastValueFrom(locker.using('k', (lease) => of(lease.held)));
    block(120); // past the first lease's validity, before its deadline timer could fire
    expect(first.held).toBe(false);
    await first.release();
    heldAtGrant.push(await second);
    // the waiter was granted a lease of its own, valid when it got it, from the store
    expect(heldAtGrant).toEqual([true]);
    expect(store.count('tryAcquire')).toBe(2);
  });

  it('a pass whose lease expires between the release and the hand-off (loop blocked in between) goes to the store instead', async () => {
    const { store, locker } = setup({ ttl: 100, renew: false, cohort: { maxMs: 60_000 } });
    const first = await firstValueFrom(locker.acquire('k'));
    const second = lastValueFrom(locker.using('k', (lease) => of(lease.held)));
    await new Promise((resolve) => setTimeout(resolve, 40));
    const released = first.release(); // valid now: the hand-off is queued for a microtask…
    block(120); // …which runs only after the lease's validity passed
    await released;
    expect(await second).toBe(true);
    expect(store.count('tryAcquire')).toBe(2);
  });

  it('the next waiter must ask for the same lease: another TTL, or another renewal, goes to the store', async () => {
    for (const [mine, other] of [
      [{}, { ttl: 5000 }],
      [{}, { renew: false as const }],
      [{}, { renew: { interval: 100 } }],
      // a lease nobody renews must not pass to a waiter that expects renewal (default or explicit)
      [{ renew: false as const }, {}],
      [{ renew: false as const }, { renew: { interval: 100 } }],
    ] as const) {
      const { store, locker } = setup({ ttl: 3000, cohort: { maxMs: 60_000 } });
      const first = await firstValueFrom(locker.acquire('k', mine));
      const second = lastValueFrom(locker.using('k', (lease) => of(lease.fence), other));
      await first.release();
      expect(await second).toBeGreaterThan(first.fence);
      expect(store.count('tryAcquire'), JSON.stringify([mine, other])).toBe(2);
    }
  });
});

/** A memory store whose extend answers after `delay()` ms, having blocked the loop for `blockMs`. */
class SlowExtend implements LockStore {
  readonly inner = new MemoryLockStore();
  blockMs = 0;
  delayMs = 0;
  tryAcquire(key: string, token: string, ttl: number, fences?: number): Promise<AcquireResult> {
    return this.inner.tryAcquire(key, token, ttl, fences);
  }
  release(key: string, token: string): Promise<boolean> {
    return this.inner.release(key, token);
  }
  async extend(key: string, token: string, ttl: number): Promise<ExtendOutcome> {
    const outcome = await this.inner.extend(key, token, ttl);
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    block(this.blockMs); // the answer is handled right after this, before any timer runs
    return outcome;
  }
}

describe('a lease is never revived', () => {
  it('an "extended" answer handled after the validity passed (before the deadline timer fired) loses the lease', async () => {
    const store = new SlowExtend();
    const locker = createLocker({ store, keyPrefix: '', ttl: 300, renew: false });
    const lease = await firstValueFrom(locker.acquire('k'));
    store.delayMs = 10;
    store.blockMs = 320; // the answer comes when the lease is past its validity
    const extended = await lease.extend();
    expect(extended).toBe(false);
    expect(lease.held).toBe(false);
    const lost = await firstValueFrom(lease.lost$);
    expect(lost.reason).not.toBe(undefined);
    await locker.close();
  });

  it('a renewal answered after the validity passed does not revive it either: the stream errors with LockLostError', async () => {
    const store = new SlowExtend();
    const locker = createLocker({ store, keyPrefix: '', ttl: 300 }); // renewal at ~100 ms
    let lease: Lease | undefined;
    const ended = lastValueFrom(
      locker.using('k', (l) => {
        lease = l;
        store.delayMs = 10;
        store.blockMs = 250; // answered at ~360 ms: past the ~295 ms validity
        return new Promise(() => undefined);
      }),
    ).catch((e: unknown) => e);
    const error = await ended;
    expect(error).toMatchObject({ name: 'LockLostError' });
    expect(lease!.held).toBe(false);
    await locker.close();
  });

  it('a lease given back is not extended any more, and extend() answers false', async () => {
    const { locker, store } = setup({ ttl: 300 });
    const lease = await firstValueFrom(locker.acquire('k'));
    await lease.release();
    const before = store.count('extend');
    expect(await lease.extend()).toBe(false);
    expect(store.count('extend')).toBe(before);
  });
});

describe('release runs once', () => {
  it('release() called many times, also from a lost$ handler and an events$ handler, sends one store release and answers one promise', async () => {
    const { locker, store, events } = setup({ ttl: 300 });
    const lease = await firstValueFrom(locker.acquire('k'));
    const fromHandlers: Array<Promise<boolean>> = [];
    lease.lost$.subscribe({ complete: () => fromHandlers.push(lease.release()) });
    const sub = locker.events$.subscribe(() => fromHandlers.push(lease.release()));
    const first = lease.release();
    const again = lease.release();
    expect(again).toBe(first);
    expect(await first).toBe(true);
    for (const p of fromHandlers) expect(p).toBe(first);
    expect(store.count('release')).toBe(1);
    expect(events.filter((e) => e.type === 'released')).toHaveLength(1);
    sub.unsubscribe();
  });
});

describe('fences', () => {
  it('every holder of a key gets a fence above the previous one, local passes and store grants alike', async () => {
    const { locker } = setup({ cohort: { maxPasses: 3, maxMs: 60_000 } });
    const fences: number[] = [];
    await Promise.all(Array.from({ length: 12 }, () => lastValueFrom(locker.using('k', (lease) => (fences.push(lease.fence), of(1))))));
    expect(fences).toHaveLength(12);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
  });

  it('a pass never uses a fence beyond the block the store granted: it goes back to the store', async () => {
    // a store that grants one fence whatever is asked: no pass is possible
    const inner = new MemoryLockStore();
    const store: LockStore = {
      tryAcquire: async (key, token, ttl) => {
        const result = await inner.tryAcquire(key, token, ttl, 1);
        return result.acquired ? { ...result, fences: 1 } : result;
      },
      release: (key, token) => inner.release(key, token),
      extend: (key, token, ttl) => inner.extend(key, token, ttl),
    };
    const recording = new RecordingStore(store);
    const locker = createLocker({ store: recording, keyPrefix: '', cohort: { maxMs: 60_000 } });
    const fences: number[] = [];
    await Promise.all(Array.from({ length: 5 }, () => lastValueFrom(locker.using('k', (lease) => (fences.push(lease.fence), of(1))))));
    expect(recording.count('tryAcquire')).toBe(5);
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
  });
});

describe('the gate state machine', () => {
  it('canMove allows exactly the moves of the MOVES table', async () => {
    const { canMove, MOVES } = await import('../../src/engine/gate/GateState.js');
    const names = Object.keys(MOVES) as Array<keyof typeof MOVES>;
    for (const from of names) for (const to of names) expect(canMove(from, to), `${from} → ${to}`).toBe(MOVES[from].includes(to));
  });
});
