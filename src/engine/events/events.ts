/**
 * What a locker reports on `events$`: one typed event per thing that happened to a lock, so users
 * can feed metrics and logs, and so failures that must never be thrown into user code (a release
 * that fails after the stream has ended) still reach someone.
 *
 * Identifiers: `token` is the value the store holds for the key (one store session's UUID). When
 * the lock passes between local holders of one locker without the store (a cohort hand-off, see
 * the README), those holders share the token; `id` is unique per acquisition
 * (`<token>:<fence>`), and `fence` is unique per acquisition of a key.
 */
import type { LockerClosedError, LockLostError, LockLostReason, LockStoreError } from '../../errors/errors.js';

/**
 * A lease was taken.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is AcquiredEvent => e.type === 'acquired')).subscribe((e) => {
 *   metrics.histogram('lock.wait_ms', e.waitedMs, { key: e.key, passed: String(e.passed) });
 * });
 * ```
 */
export interface AcquiredEvent {
  /** Always `'acquired'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'acquired';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** Unique per acquisition: `<token>:<fence>`. */
  readonly id: string;
  /** The lease's fencing token. */
  readonly fence: number;
  /** From subscription to the grant, in ms (on the locker's clock). */
  readonly waitedMs: number;
  /** How many times this acquisition found the lock held before it got it, plus one. */
  readonly attempts: number;
  /** True when the lock came from the previous local holder without a store call (cohort hand-off). */
  readonly passed: boolean;
}

/**
 * An acquisition gave up: the lock stayed held for the whole `waitTimeout` (or its retry policy
 * stopped) — or, with `skipped: true`, an `onBusy: 'skip'` operator found it held at its one
 * attempt and completed without running its work (not a failure).
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is TimedOutEvent => e.type === 'timed-out')).subscribe((e) => {
 *   if (!e.skipped) log.warn({ key: e.key, waitedMs: e.waitedMs, attempts: e.attempts }, 'gave up waiting for a lock');
 * });
 * ```
 */
export interface TimedOutEvent {
  /** Always `'timed-out'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'timed-out';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** From subscription to giving up, in ms (on the locker's clock). */
  readonly waitedMs: number;
  /** How many times this acquisition found the lock held (store attempts and looks at the local line), at least 1. */
  readonly attempts: number;
  /** True when this was an `onBusy: 'skip'` operator skipping its work (its stream completed empty). */
  readonly skipped: boolean;
}

/**
 * An acquisition failed because the store failed or timed out.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is AcquireFailedEvent => e.type === 'acquire-failed')).subscribe((e) => {
 *   log.error({ key: e.key, err: e.error }, 'lock store failed while acquiring');
 * });
 * ```
 */
export interface AcquireFailedEvent {
  /** Always `'acquire-failed'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'acquire-failed';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The error, also given to the stream or call concerned. */
  readonly error: LockStoreError;
  /** How many times this acquisition found the lock held (store attempts and looks at the local line), at least 1. */
  readonly attempts: number;
}

/**
 * A holder's lease was given back, as the store confirmed it. `outcome`:
 * - `'released'`: the store still had our key and gave it up (deleted it, or handed it to the next
 *   process in its line);
 * - `'passed'`: the lock went to the next local holder without a store call, and the store later
 *   confirmed (at the next renewal or at the final release) that the lease was still ours;
 * - `'gone'`: the store no longer had our key (it expired, another owner took it, or the store lost
 *   its data): the hold was not protected until its end.
 * A release the store could not confirm (unreachable) is a `release-failed` event instead. A holder
 * whose lease was lost gets neither: its `lost` event told how its hold ended.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is ReleasedEvent => e.type === 'released')).subscribe((e) => {
 *   if (e.outcome === 'gone') log.warn({ key: e.key, id: e.id, heldMs: e.heldMs }, 'lock had expired before its release');
 * });
 * ```
 */
export interface ReleasedEvent {
  /** Always `'released'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'released';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** Unique per acquisition: `<token>:<fence>` (log this one). */
  readonly id: string;
  /** The holder's fencing token: higher than every earlier holder's of this key. */
  readonly fence: number;
  /** From the grant to the holder's release, in ms. */
  readonly heldMs: number;
  /** How the hold ended, as the store confirmed it (see above). */
  readonly outcome: 'released' | 'passed' | 'gone';
}

/**
 * A release could not be confirmed (store down or slow); the key expires with its TTL.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is ReleaseFailedEvent => e.type === 'release-failed')).subscribe((e) => {
 *   log.warn({ key: e.key, err: e.error }, 'release not confirmed: the key expires with its TTL');
 * });
 * ```
 */
export interface ReleaseFailedEvent {
  /** Always `'release-failed'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'release-failed';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** The error, also given to the stream or call concerned. */
  readonly error: LockStoreError;
}

/**
 * A store call granted the lock after nobody wanted it any more (the subscriber unsubscribed while
 * it was in flight, the call had timed out, or a hand-off reached a waiter that was leaving), and
 * the lock was given back. `deleted` is false when that release could not delete it.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is AbandonedReleasedEvent => e.type === 'abandoned-released')).subscribe((e) => {
 *   if (!e.deleted) log.warn({ key: e.key }, 'an unwanted grant could not be given back: it expires with its TTL');
 * });
 * ```
 */
export interface AbandonedReleasedEvent {
  /** Always `'abandoned-released'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'abandoned-released';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** True when the store deleted the key; false when that release could not. */
  readonly deleted: boolean;
}

/**
 * A held lease was extended (by renewal or `lease.extend()`).
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is RenewedEvent => e.type === 'renewed')).subscribe((e) => {
 *   log.debug({ key: e.key, validForMs: e.validForMs }, 'lease renewed');
 * });
 * ```
 */
export interface RenewedEvent {
  /** Always `'renewed'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'renewed';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** Time left until the lease's new `validUntil`, in ms. */
  readonly validForMs: number;
}

/**
 * A renewal call failed; it is retried while the lease is still valid.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is RenewFailedEvent => e.type === 'renew-failed')).subscribe((e) => {
 *   log.warn({ key: e.key, err: e.error, validForMs: e.validForMs }, 'renewal failed, retrying while the lease is valid');
 * });
 * ```
 */
export interface RenewFailedEvent {
  /** Always `'renew-failed'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'renew-failed';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** The error, also given to the stream or call concerned. */
  readonly error: LockStoreError;
  /** Time left until the lease's `validUntil`, in ms: the retries' budget. */
  readonly validForMs: number;
}

/**
 * A held lease stopped protecting its holder: it expired, another owner took the key, it could
 * not be renewed before its deadline, or the locker was closed. `withLock`/`using` streams error
 * with `error` (unless `onLost: 'notify'`, which is ignored for `'locker-closed'`).
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is LostEvent => e.type === 'lost')).subscribe((e) => {
 *   log.error({ key: e.key, id: e.id, fence: e.fence, reason: e.reason }, 'lock lost while held');
 * });
 * ```
 */
export interface LostEvent {
  /** Always `'lost'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'lost';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The value the store holds for the key: one store session's UUID, shared by the local holders the lock passed between. */
  readonly token: string;
  /** Unique per acquisition: `<token>:<fence>` (log this one). */
  readonly id: string;
  /** The holder's fencing token: higher than every earlier holder's of this key. */
  readonly fence: number;
  /** Why the lease stopped protecting its holder. */
  readonly reason: LockLostReason;
  /** The error, also given to the stream or call concerned. */
  readonly error: LockLostError;
}

/**
 * An acquisition has waited `longWait` ms (the locker option; 5 s by default), and again every
 * `longWait` ms while it still waits: what the store says of the key now, read for this report.
 * It tells the two usual causes of a long wait apart:
 * - a holder that keeps the lock: `holder` names it (its token: one store session of one process)
 *   with its remaining TTL, and `seenForMs` grows from one report to the next while the same
 *   holder keeps it (or `heldHere`: one of this locker's own acquisitions holds it);
 * - a slow or failing store: `storeReadMs` (how long this one read took) is large, or `error` says
 *   why the read failed, while `holder` is missing or `null` (free: the grant is on its way).
 * Only sent while someone listens to `events$`; nothing is read from the store otherwise.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is LongWaitEvent => e.type === 'long-wait')).subscribe((e) => {
 *   if (e.error !== undefined || (e.storeReadMs ?? 0) > 100) log.warn({ key: e.key, waitedMs: e.waitedMs, storeReadMs: e.storeReadMs }, 'lock store slow');
 *   else if (e.holder) log.warn({ key: e.key, holder: e.holder.token, heldForAtLeastMs: e.holder.seenForMs }, 'waiting behind a long holder');
 * });
 * ```
 */
export interface LongWaitEvent {
  /** Always `'long-wait'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'long-wait';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** From subscription to this report, in ms (on the locker's clock). */
  readonly waitedMs: number;
  /** How many times this acquisition has found the lock held so far. */
  readonly attempts: number;
  /** One of this locker's own acquisitions holds the key (the wait is in this process's line). */
  readonly heldHere: boolean;
  /**
   * The key's holder as the store answered this report's read: `null` when the key was free at
   * that moment; absent when the store cannot be read (no `inspect` capability) or the read
   * failed, and for a shared lock's wait (see `permits`).
   */
  readonly holder?: {
    /** The holder's token (its store session: one per locker and key). */
    readonly token: string;
    /** Its remaining TTL, in ms. */
    readonly ttlMs: number;
    /** Processes waiting in the store's line (0 for a store without one). */
    readonly waiting: number;
    /** The first fence of its grant, when the store keeps it. */
    readonly fence?: number;
    /**
     * For how long this acquisition's reports have seen this same token hold the key, in ms: 0 at
     * the first report that saw it. (The token may have given the key up and taken it back between
     * two reads.)
     */
    readonly seenForMs: number;
  } | null;
  /**
   * A shared lock's wait (`withPermit`, `withReadLock`, `withWriteLock`), as the store answered this
   * report's read (`inspectShared`): the permits in use out of `limit`, how many holders hold them,
   * how many wait in its line (this acquisition included), and how many this acquisition asks for
   * (a read lock 1, a write lock all of them). Absent for a mutex (see `holder`), and when the
   * store cannot be read or the read failed. `heldHere` then says that one of this locker's own
   * acquisitions holds permits of the lock.
   */
  readonly permits?: {
    /** Permits held now by live holders (the sum of their weights). */
    readonly used: number;
    /** The lock's limit, as this acquisition asked for it (a read-write lock: 2,147,483,647). */
    readonly limit: number;
    /** The permits this acquisition asks for. */
    readonly weight: number;
    /** Live holders. */
    readonly holders: number;
    /** Live waiters in the store's line, this acquisition included. */
    readonly waiting: number;
  };
  /** How long this report's store read took, in ms (absent without an `inspect` capability). */
  readonly storeReadMs?: number;
  /** Why this report's store read failed (unreachable, or slower than `commandTimeout`). */
  readonly error?: LockStoreError;
}

/**
 * `locker.close()` ended an acquisition that was still waiting.
 *
 * @example
 * ```ts
 * locker.events$.pipe(filter((e): e is ClosedEvent => e.type === 'closed')).subscribe((e) => {
 *   log.info({ key: e.key }, 'acquisition ended by locker.close()');
 * });
 * ```
 */
export interface ClosedEvent {
  /** Always `'closed'`: tells this event apart from the others of {@link LockEvent}. */
  readonly type: 'closed';
  /** The lock's key, as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /** The error, also given to the stream or call concerned. */
  readonly error: LockerClosedError;
}

/**
 * Every event a locker reports on `events$`.
 *
 * @example
 * ```ts
 * locker.events$.subscribe((e: LockEvent) => {
 *   switch (e.type) {
 *     case 'acquired': return metrics.increment('lock.acquired', { key: e.key });
 *     case 'lost': return log.error({ key: e.key, reason: e.reason }, 'lock lost');
 *     case 'release-failed': return log.warn({ key: e.key, err: e.error }, 'release not confirmed');
 *   }
 * });
 * ```
 */
export type LockEvent =
  | AcquiredEvent
  | TimedOutEvent
  | LongWaitEvent
  | AcquireFailedEvent
  | RenewedEvent
  | RenewFailedEvent
  | LostEvent
  | ReleasedEvent
  | ReleaseFailedEvent
  | AbandonedReleasedEvent
  | ClosedEvent;
