/**
 * A held lock, as `locker.acquire()` emits it and `locker.using()` hands it to the work.
 */
import type { Observable } from 'rxjs';
import type { LockLostError } from '../../errors/errors.js';

/**
 * A held lock. `withLock` and `using` release it for you.
 *
 * @example
 * ```ts
 * locker.using('ledger:7', async (lease: Lease) => {
 *   lease.lost$.subscribe((err) => log.error({ id: lease.id, reason: err.reason }, 'lost the ledger lock'));
 *   await ledger.write(lease.fence, entry); // the ledger refuses writes with a fence lower than its last
 * }).subscribe();
 * ```
 */
export interface Lease {
  /** The key as the caller named it (without the locker's `keyPrefix`). */
  readonly key: string;
  /**
   * The value the store holds for the key while this lease is held: only it can release or extend
   * the key. One store session's UUID: local holders that the lock passed between without the
   * store (cohort hand-offs) share it. To tell acquisitions apart, use {@link Lease.id}.
   */
  readonly token: string;
  /** Unique per acquisition: `<token>:<fence>`. Log this one. */
  readonly id: string;
  /**
   * Fencing token: strictly greater than the fence of every earlier acquisition of this key,
   * across processes and client restarts. Pass it with every write to the protected resource and
   * let the resource refuse writes with a lower fence (see `FencedResource` in `rxjs-lock/redis`):
   * then a holder that lost its lease without noticing (a long pause) cannot overwrite the work of
   * the next holder.
   */
  readonly fence: number;
  /**
   * The key's TTL in ms as of the last store answer: the acquisition's `ttl` (or the TTL a key
   * handed over from another process came with), then the last answered extension's. A renewal
   * sent while an `extend(ttl)` was in flight may run after it with the TTL renewals kept until
   * then: this reads that TTL until the next renewal, which asks for the one `extend(ttl)` chose.
   */
  readonly ttl: number;
  /** `performance.now()` when this holder got the lock. */
  readonly acquiredAt: number;
  /**
   * `performance.now()` after which the lease no longer protects its holder unless renewed:
   * the send time of the last successful acquire/extend call plus `ttl − (ttl·1% + 2 ms)` — or
   * sooner: an extend call with a shorter TTL (`extend(ttl)`, or a renewal to the TTL asked for
   * of a key granted with a longer one) counts from its sending, answered or not, since the store
   * may run it even if its answer never comes; and an answered call's TTL counts only as far as
   * the calls that may have run after it leave (a longer `extend(ttl)` answered while a renewal is
   * in flight takes effect with that renewal's successor).
   */
  readonly validUntil: number;
  /** True while the lease is neither released nor lost and its validity has not passed. */
  readonly held: boolean;
  /** True once `release()` has been called. */
  readonly released: boolean;
  /**
   * Emits a `LockLostError` (key, token and `reason`: `'expired'`, `'taken-over'` or
   * `'store-unreachable'`) and completes if the lease is lost; completes without a value once it
   * is released. Replays to late subscribers.
   */
  readonly lost$: Observable<LockLostError>;
  /**
   * Gives the lock back. Resolves `true` when it was given back while ours: the store confirmed our
   * key and deleted it (or handed it to the next process in its line), or the lock passed to the
   * next local holder of this locker while the lease was valid (the store is not asked then: its
   * later word on that hold is the `released` event on `locker.events$`). Resolves `false` when
   * the key was already gone (expired, taken over, or lost by the store), the lease was lost, or
   * the store could not be reached (reported as `release-failed`). Never rejects; calling it again
   * returns the first call's promise. Stops renewal at once.
   */
  release(): Promise<boolean>;
  /**
   * Extends the lease to `ttl` ms from now (default: the TTL the holder chose — the last
   * `extend(ttl)`'s, else the acquisition's), for code that manages leases itself; renewal, when
   * on, continues from there with the new TTL. Resolves
   * `true` when extended, `false` when the lease is no longer held (released, or lost: then
   * `lost$` says why, and a key found expired or taken marks it lost). Rejects with
   * `LockStoreError` when the store failed (the lease stays valid until `validUntil`, which a
   * shorter `ttl` brought forward when the call was sent: the store may have run it), and with
   * `LockOptionsError` for an invalid `ttl`.
   *
   * @example
   * ```ts
   * const lease = await firstValueFrom(locker.acquire('import', { renew: false, ttl: 10_000 }));
   * for (const batch of batches) {
   *   await importBatch(batch, lease.fence);
   *   if (!(await lease.extend())) break; // lost: stop writing
   * }
   * await lease.release();
   * ```
   */
  extend(ttl?: number): Promise<boolean>;
}
