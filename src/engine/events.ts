/**
 * What a locker reports on `events$`: one typed event per thing that happened to a lock, so users
 * can feed metrics and logs, and so failures that must never be thrown into user code (a release
 * that fails after the stream has ended) still reach someone.
 */
import type { LockLostError, LockLostReason, LockStoreError } from '../errors.js';

/** A lease was taken. */
export interface AcquiredEvent {
  readonly type: 'acquired';
  readonly key: string;
  readonly token: string;
  /** The lease's fencing token. */
  readonly fence: number;
  /** From subscription to the store's yes, in ms. */
  readonly waitedMs: number;
  readonly attempts: number;
}

/** An acquisition gave up: the lock stayed held for the whole `waitTimeout`. */
export interface TimedOutEvent {
  readonly type: 'timed-out';
  readonly key: string;
  readonly waitedMs: number;
  readonly attempts: number;
}

/** An acquisition failed because the store failed or timed out. */
export interface AcquireFailedEvent {
  readonly type: 'acquire-failed';
  readonly key: string;
  readonly error: LockStoreError;
  readonly attempts: number;
}

/** A lease was given back. */
export interface ReleasedEvent {
  readonly type: 'released';
  readonly key: string;
  readonly token: string;
  readonly fence: number;
  /** From the acquire call being sent to the release being answered, in ms. */
  readonly heldMs: number;
  /** False when the key had already expired or been taken by another owner. */
  readonly deleted: boolean;
  /** True when the lock went straight to the next local waiter, without a store call (cohort hand-off). */
  readonly passed: boolean;
}

/** A release could not be confirmed (store down or slow); the key expires with its TTL. */
export interface ReleaseFailedEvent {
  readonly type: 'release-failed';
  readonly key: string;
  readonly token: string;
  readonly error: LockStoreError;
}

/**
 * An acquire call succeeded on the store after nobody wanted its result any more (the
 * subscriber unsubscribed while it was in flight, or the call had timed out), and the lock it
 * took was given back. `deleted` is false when that release could not delete it.
 */
export interface AbandonedReleasedEvent {
  readonly type: 'abandoned-released';
  readonly key: string;
  readonly token: string;
  readonly deleted: boolean;
}

/** A held lease was extended (by renewal or `lease.extend()`). */
export interface RenewedEvent {
  readonly type: 'renewed';
  readonly key: string;
  readonly token: string;
  /** Time left until the lease's new `validUntil`, in ms. */
  readonly validForMs: number;
}

/** A renewal call failed; it is retried while the lease is still valid. */
export interface RenewFailedEvent {
  readonly type: 'renew-failed';
  readonly key: string;
  readonly token: string;
  readonly error: LockStoreError;
  /** Time left until the lease's `validUntil`, in ms: the retries' budget. */
  readonly validForMs: number;
}

/**
 * A held lease stopped protecting its holder: it expired, another owner took the key, or it
 * could not be renewed before its deadline. `withLock`/`using` streams error with `error`
 * unless `onLost: 'notify'`.
 */
export interface LostEvent {
  readonly type: 'lost';
  readonly key: string;
  readonly token: string;
  readonly fence: number;
  readonly reason: LockLostReason;
  readonly error: LockLostError;
}

/** Every event a locker reports on `events$`. */
export type LockEvent =
  | AcquiredEvent
  | TimedOutEvent
  | AcquireFailedEvent
  | RenewedEvent
  | RenewFailedEvent
  | LostEvent
  | ReleasedEvent
  | ReleaseFailedEvent
  | AbandonedReleasedEvent;
