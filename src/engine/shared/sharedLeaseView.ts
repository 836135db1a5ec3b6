/**
 * A shared lock's holders, seen by the lease keeper (../lease/LeaseKeeper.ts) as plain store
 * leases: `extend` is `extendShared`, `release` is `releaseShared` and, when the store can batch
 * them, `extendMany` is `extendSharedMany`. So each permit holder gets the mutex's whole lease
 * keeping — renewal on one heap and timer, renewals that fall due together sent in one round trip,
 * deadlines on the monotonic clock, loss as `LockLostError`, release once — without a second
 * implementation of it.
 */
import type { BatchExtendStore } from '../../store/capabilities.js';
import type { LockStore } from '../../store/LockStore.js';
import { batchExtendSharedOf, type SharedLockStore } from '../../store/SharedLockStore.js';

export function sharedLeaseView(store: SharedLockStore): LockStore {
  const view: LockStore = {
    tryAcquire: () => Promise.reject(new Error('rxjs-lock: a shared lease is taken with tryAcquireShared')),
    extend: (key, token, ttlMs) => store.extendShared(key, token, ttlMs),
    release: (key, token) => store.releaseShared(key, token),
  };
  const batch = batchExtendSharedOf(store);
  if (batch === undefined) return view;
  const batched: LockStore & BatchExtendStore = { ...view, extendMany: (requests) => batch.extendSharedMany(requests) };
  return batched;
}
