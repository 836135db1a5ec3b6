/**
 * A shared lock's holders, seen by the lease keeper (../lease/LeaseKeeper.ts) as plain store
 * leases: `extend` is `extendShared` and `release` is `releaseShared`. So each permit holder gets
 * the mutex's whole lease keeping — renewal on one heap and timer, deadlines on the monotonic
 * clock, loss as `LockLostError`, release once — without a second implementation of it.
 */
import type { LockStore } from '../../store/LockStore.js';
import type { SharedLockStore } from '../../store/SharedLockStore.js';

export function sharedLeaseView(store: SharedLockStore): LockStore {
  return {
    tryAcquire: () => Promise.reject(new Error('rxjs-lock: a shared lease is taken with tryAcquireShared')),
    extend: (key, token, ttlMs) => store.extendShared(key, token, ttlMs),
    release: (key, token) => store.releaseShared(key, token),
  };
}
