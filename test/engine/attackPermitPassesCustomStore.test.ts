/**
 * Attack: a custom `SharedLockStore` written before permits passed on in-process — it ignores the
 * `fences` argument of `tryAcquireShared` and answers grants without `fences`, as the interface
 * allows ("a store that reserves only one may leave it out"). Each of its grants reserves one
 * fence; the next grant's fence is the one after. Permits passed on from such a grant would hand
 * out fences the store never reserved, the very fences of its next grants: two holders with one
 * fence. Promise (the changeset's): nothing passes, every holder's fence is its own.
 */
import { firstValueFrom } from 'rxjs';
import { afterEach, describe, expect, it } from 'vitest';
import { createLocker, MemoryLockStore, type Lease, type Locker } from '../../src/index.js';
import type { AcquireResult } from '../../src/store/LockStore.js';
import type { SharedLockStore } from '../../src/store/SharedLockStore.js';
import { sleep } from '../support/timing.js';

const opened: Locker[] = [];
afterEach(async () => {
  for (const locker of opened.splice(0)) await locker.close();
});

/** A shared store of the version before passes: one fence per grant, never a `fences` in its answers. */
function storeOfOneFence(): MemoryLockStore {
  const store = new MemoryLockStore();
  const acquire = store.tryAcquireShared.bind(store);
  store.tryAcquireShared = (key, token, ttl, weight, capacity, place) =>
    acquire(key, token, ttl, weight, capacity, place).then((result: AcquireResult) => {
      if (!result.acquired) return result;
      const { fences: _ignored, ...answer } = result;
      return answer;
    });
  return store satisfies SharedLockStore;
}

describe('a custom shared store that reserves one fence per grant and does not say so', () => {
  it('passes nothing: each holder has a store grant and a fence of its own', async () => {
    const store = storeOfOneFence();
    // (long turns: a pass would not be cut short by a slow machine)
    const cohort = { maxPasses: 256, maxMs: 60_000, roundMs: 60_000 };
    const a = createLocker({ store, retry: { minDelay: 1, jitter: 2 }, cohort });
    const b = createLocker({ store, retry: { minDelay: 1, jitter: 2 }, cohort });
    opened.push(a, b);
    const first = await firstValueFrom(a.acquirePermit('s', { limit: 1 }));
    const next = firstValueFrom(a.acquirePermit('s', { limit: 1 }));
    await sleep(10);
    await first.release();
    const second = await next;
    const other = firstValueFrom(b.acquirePermit('s', { limit: 1 }));
    await sleep(10);
    await second.release();
    const third: Lease = await other;
    expect(second.token).not.toBe(first.token);
    expect(new Set([first.fence, second.fence, third.fence]).size).toBe(3);
    await third.release();
  });
});
