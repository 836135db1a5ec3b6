/**
 * Attack: re-entrant release() from a `lost$` subscriber.
 *
 * `lease.release()` completes `lease.lost$` ("completes without a value once it is released")
 * before it hands the lease to its gate and remembers the promise. A subscriber that releases
 * the lease when `lost$` completes — `lease.lost$.subscribe({ complete: cleanup })`, a
 * `finalize(() => lease.release())` on it — therefore calls release() again while the first call
 * is still under way: the "runs once, later calls return the same promise" guard has nothing to
 * return yet, so the gate is asked twice. The second ask finds the lease no longer the gate's
 * holder and goes the way of a lost lease; its answer (false) is what release() resolves.
 *
 * Promises (Lease.release): resolves `true` when the lock was given back while ours (the store
 * confirmed it, or it passed to the next local holder); runs once. And a local waiter gets the
 * lock by a cohort pass, without a store round trip.
 */
import { firstValueFrom } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { createLocker, type LockEvent } from '../../src/index.js';
import { countingStore } from '../support/countingStore.js';

describe('attack: release() called again from a lost$ complete handler', () => {
  it('no waiter: release() resolves true (the store deleted our key), one release call', async () => {
    const { store, calls } = countingStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const lease = await firstValueFrom(locker.acquire('k'));
    lease.lost$.subscribe({ complete: () => void lease.release() });
    const released = await lease.release();
    await locker.close();
    expect({ released, releaseCalls: calls.release, event: events.find((e) => e.type === 'released') }).toMatchObject({
      released: true,
      releaseCalls: 1,
      event: { type: 'released', outcome: 'released' },
    });
  });

  it('a local waiter: release() resolves true and the waiter gets the lock by a pass (no second store trip)', async () => {
    const { store, calls } = countingStore();
    const locker = createLocker({ store, keyPrefix: '' });
    const events: LockEvent[] = [];
    locker.events$.subscribe((e) => events.push(e));
    const first = await firstValueFrom(locker.acquire('k'));
    const next = firstValueFrom(locker.acquire('k'));
    first.lost$.subscribe({ complete: () => void first.release() });
    const released = await first.release();
    const second = await next;
    await second.release();
    await locker.close();
    const acquired = events.filter((e): e is Extract<LockEvent, { type: 'acquired' }> => e.type === 'acquired').map((e) => e.passed);
    expect({ released, acquired, storeAcquires: calls.tryAcquire, secondFence: second.fence - first.fence }).toEqual({
      released: true,
      acquired: [false, true],
      storeAcquires: 1,
      secondFence: 1,
    });
  });
});
