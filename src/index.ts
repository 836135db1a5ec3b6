/**
 * rxjs-lock: distributed locks for RxJS. Taking a lock is subscribing; giving it back happens
 * whatever ends the stream. This entry point has no Redis dependency; the Redis store is in
 * `rxjs-lock/redis`.
 */
export { createLocker } from './engine/createLocker.js';
export type { Locker } from './engine/Locker.js';
export type { Lease } from './engine/lease/Lease.js';
export type {
  LockEvent,
  AcquiredEvent,
  TimedOutEvent,
  AcquireFailedEvent,
  RenewedEvent,
  RenewFailedEvent,
  LostEvent,
  ReleasedEvent,
  ReleaseFailedEvent,
  AbandonedReleasedEvent,
} from './engine/events.js';
export { withLock, type WithLockOptions } from './operators/withLock.js';
export { usingLock } from './operators/usingLock.js';
export { getDefaultLocker, setDefaultLocker } from './operators/defaultLocker.js';
export { DEFAULTS, type LockerOptions, type AcquireOptions, type RetryOptions, type RetryDelay, type RenewOptions, type OnLost } from './options/LockerOptions.js';
export type { LockStore, AcquireResult, Acquired, NotAcquired, ExtendOutcome, ExtendRequest } from './store/LockStore.js';
export { MemoryLockStore, type MemoryLockStoreOptions } from './backends/memory/MemoryLockStore.js';
export {
  LockError,
  LockTimeoutError,
  LockStoreError,
  LockLostError,
  LockOptionsError,
  isLockError,
  isLockTimeoutError,
  isLockStoreError,
  isLockLostError,
  isLockOptionsError,
  type LockErrorName,
  type LockLostReason,
  type StoreOperation,
} from './errors.js';
