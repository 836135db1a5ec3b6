/**
 * rxjs-lock: distributed locks for RxJS. Taking a lock is subscribing; giving it back happens
 * whatever ends the stream. This entry point has no Redis dependency; the Redis store is in
 * `rxjs-lock/redis`.
 *
 * @module rxjs-lock
 */
export { createLocker } from './api/createLocker.js';
export { withLock, type WithLockOptions } from './api/withLock.js';
export { usingLock } from './api/usingLock.js';
export { withPermit, type WithPermitOptions } from './api/withPermit.js';
export { withReadLock, withWriteLock, type WithReadWriteLockOptions } from './api/withReadWriteLock.js';
export { withLocks } from './api/withLocks.js';
export { usingLocks } from './api/usingLocks.js';
export { getDefaultLocker, setDefaultLocker, IN_MEMORY_DEFAULT_WARNING } from './api/defaultLocker.js';
export { exclusivePerKey, type ExclusivePerKeyOptions } from './api/exclusivePerKey.js';
export type { LockedWork } from './engine/acquisition/workSignal.js';
export type { Locker, LockedSetWork } from './engine/Locker.js';
export type { LeaseSet } from './engine/multikey/LeaseSet.js';
export type { Lease } from './engine/lease/Lease.js';
export type {
  LockEvent,
  AcquiredEvent,
  TimedOutEvent,
  LongWaitEvent,
  AcquireFailedEvent,
  RenewedEvent,
  RenewFailedEvent,
  LostEvent,
  ReleasedEvent,
  ReleaseFailedEvent,
  AbandonedReleasedEvent,
  ClosedEvent,
} from './engine/events/events.js';
export type { LockerLockInfo, WaitUntilFreeOptions } from './engine/inspection/KeyInspector.js';
export type { LockerPermitsInfo, LockerSharedHolderInfo, WaitUntilPermitsFreeOptions } from './engine/inspection/SharedInspector.js';
export {
  DEFAULTS,
  type LockerOptions,
  type AcquireOptions,
  type RetryOptions,
  type RetryDelay,
  type RenewOptions,
  type OnLost,
  type OnBusy,
  type LockOperatorOptions,
  type CohortOptions,
} from './options/LockerOptions.js';
export type { PermitCount, PermitOptions, AcquirePermitOptions, ReadWriteLockOptions, AcquireReadWriteOptions } from './options/PermitOptions.js';
export type { LockStore, AcquireResult, Acquired, NotAcquired, ExtendOutcome, ReleasedGrant } from './store/LockStore.js';
export type {
  SharedLockStore,
  SharedPlace,
  SharedLockInfo,
  SharedHolderInfo,
  InspectableSharedStore,
  BatchExtendSharedStore,
} from './store/SharedLockStore.js';
export type {
  QueueingStore,
  LeaveResult,
  WakeUpStore,
  WakeSignal,
  StoreWatch,
  BatchExtendStore,
  ExtendRequest,
  KeyCheckingStore,
  ClosableStore,
  InspectableStore,
  LockInfo,
} from './store/capabilities.js';
export { MemoryLockStore, type MemoryLockStoreOptions } from './backends/memory/MemoryLockStore.js';
export {
  LockError,
  LockTimeoutError,
  LockStoreError,
  ReplicaAckError,
  LockLostError,
  LockOptionsError,
  LockerClosedError,
  QuorumUnreachableError,
  LockCapabilityError,
  LockUpgradeError,
  isLockError,
  isLockTimeoutError,
  isLockStoreError,
  isReplicaAckError,
  isLockLostError,
  isLockOptionsError,
  isLockerClosedError,
  isQuorumUnreachableError,
  type FailedNode,
  isLockCapabilityError,
  isLockUpgradeError,
  type LockErrorName,
  type LockLostReason,
  type StoreOperation,
} from './errors/errors.js';
