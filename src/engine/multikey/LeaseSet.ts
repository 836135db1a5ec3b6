/**
 * Several locks held together, as `locker.acquireLocks()` emits them and `locker.usingLocks()`
 * hands them to the work: one {@link Lease} per distinct key, taken in the set's lock order.
 */
import type { Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';
import type { Lease } from '../lease/Lease.js';

/**
 * Locks on several keys, held together. `withLocks` and `usingLocks` release them for you.
 *
 * @example
 * ```ts
 * const locks: LeaseSet = await firstValueFrom(locker.acquireLocks(['account:1', 'account:2'], { ttl: 5_000 }));
 * try {
 *   await ledger.transfer('account:1', 'account:2', 100, { fences: locks.fences });
 * } finally {
 *   await locks.release();
 * }
 * ```
 */
export interface LeaseSet {
  /**
   * The distinct keys, as the caller named them, in the order they were taken: sorted by the key
   * as the store sees it (the locker's `keyPrefix` + key), by UTF-16 code unit.
   */
  readonly keys: readonly string[];
  /**
   * Each key's lease (its own token, fence, TTL and renewal): `leases.get('order:7')!.fence` is the
   * fencing token to pass to what that key protects.
   */
  readonly leases: ReadonlyMap<string, Lease>;
  /** Each key's fence: `fences.get(key)` is `leases.get(key).fence`. */
  readonly fences: ReadonlyMap<string, number>;
  /** `performance.now()` when the last key was taken: from then on, the whole set was held. */
  readonly acquiredAt: number;
  /** The earliest `validUntil` of the leases: past it, the set no longer protects its holder unless renewed. */
  readonly validUntil: number;
  /** True while the set is neither released nor lost and every lease is held. */
  readonly held: boolean;
  /** True once `release()` has been called. */
  readonly released: boolean;
  /**
   * Emits the `LockLostError` of the first lease of the set that is lost (its `key` says which)
   * and completes; completes without a value once the set is released. Replays to late
   * subscribers. The other keys stay held until `release()` (which `withLocks`/`usingLocks` call
   * at once with `onLost: 'error'`, the default).
   */
  readonly lost$: Observable<LockLostError>;
  /**
   * Gives back every lock of the set (those still held; a lost one needs no release). Resolves
   * `true` when each one was given back while ours, `false` when any was already gone, lost, or
   * could not be given back (reported as `release-failed` on `locker.events$`). Never rejects;
   * calling it again returns the first call's promise.
   */
  release(): Promise<boolean>;
  /**
   * Extends every lease of the set to `ttl` ms from now (default: the TTL each lease's holder chose), as
   * `Lease.extend` does. Resolves `true` when all were extended, `false` when the set is no longer
   * held or any lease was found expired or taken (then `lost$` says so). Rejects with
   * `LockStoreError` when the store failed for any of them, `LockOptionsError` for an invalid `ttl`.
   */
  extend(ttl?: number): Promise<boolean>;
}
