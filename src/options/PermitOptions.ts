/**
 * The options of counting semaphores (`withPermit`, `usingPermit`, `acquirePermit`) and read-write
 * locks (`withReadLock`, `withWriteLock`, …), documented where they are declared. Validation lives
 * in ./validatePermits.ts.
 */
import type { AcquireOptions, LockOperatorOptions } from './LockerOptions.js';

/**
 * What a semaphore acquisition asks for: how many permits, out of how many.
 *
 * @example
 * ```ts
 * // at most 4 exports at once; a full export takes 2 of the 4 permits
 * const count: PermitCount = { limit: 4, permits: 2 };
 * fullExport$.pipe(locker.withPermit('exports', count)).subscribe();
 * ```
 */
export interface PermitCount {
  /**
   * How many holders' permits the semaphore allows at once: a positive safe integer (1 to
   * 2^53 − 1). The key has no stored limit: each acquisition is granted when the permits held plus
   * its own fit within *its own* `limit`. So a caller with a higher limit than the current holders
   * used gets in at once, one with a lower limit waits until enough holders have left, and holders
   * are never revoked when the limit changes. Give every caller of a key the same limit.
   */
  limit: number;
  /**
   * How many permits this acquisition takes (a positive safe integer, at most `limit`). A waiter
   * that needs several is served in arrival order like any other: waiters behind it, even ones
   * needing a single permit, wait until it is served, so it is never starved.
   * @default 1
   */
  permits?: number;
}

/**
 * Options of `locker.withPermit` and `locker.usingPermit`: the permit count and the options of a
 * `withLock` (`ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`). Each permit holder has
 * its own lease, renewed while its work runs. `reentrant` is not accepted: permits never join.
 *
 * @example
 * ```ts
 * const options: PermitOptions = { limit: 4, waitTimeout: 30_000 };
 * render$.pipe(locker.withPermit('renderer', options)).subscribe(); // at most 4 renders at once
 * ```
 */
export interface PermitOptions extends Omit<LockOperatorOptions, 'reentrant'>, PermitCount {}

/**
 * Options of `locker.acquirePermit`: the permit count and an acquisition's options (`ttl`,
 * `waitTimeout`, `retry`, `renew`, `onLost`).
 *
 * @example
 * ```ts
 * const lease = await firstValueFrom(locker.acquirePermit('api:quota', { limit: 10, permits: 2 }));
 * try { await callApiTwice(); } finally { await lease.release(); }
 * ```
 */
export interface AcquirePermitOptions extends Omit<AcquireOptions, 'reentrant'>, PermitCount {}

/**
 * Options of `withReadLock`/`withWriteLock` and their `using` variants: those of a `withLock`
 * (`ttl`, `waitTimeout`, `retry`, `renew`, `onLost`, `onBusy`, `reentrant`).
 *
 * With `reentrant: true` (or a locker created with it), a read or write lock subscribed inside
 * the work of a read-write lock of the same key and locker joins it, as a reentrant `withLock`
 * does (same token and fence, no store call, given back when the outermost stream ends): a read
 * joins an enclosing read or write lock, a write joins an enclosing write lock. A write inside a
 * read lock that no write lock encloses fails at once with `LockUpgradeError` (it would wait for
 * itself). The mutex `withLock(key)` and the read-write lock `key` are apart: neither joins the
 * other.
 *
 * @example
 * ```ts
 * const options: ReadWriteLockOptions = { waitTimeout: 5_000 };
 * loadConfig$.pipe(locker.withReadLock('config', options)).subscribe();
 * // a read nested in a write of the same key joins it instead of waiting for it
 * saveConfig(next).pipe(
 *   mergeMap(() => loadConfig$.pipe(locker.withReadLock('config', { reentrant: true }))),
 *   locker.withWriteLock('config', { reentrant: true }),
 * ).subscribe();
 * ```
 */
export type ReadWriteLockOptions = LockOperatorOptions;

/**
 * Options of `acquireReadLock`/`acquireWriteLock`: an acquisition's options. With `reentrant:
 * true`, one subscribed inside the work of a read-write lock of the same key joins it as
 * {@link ReadWriteLockOptions} says (its lease's `release()` then gives nothing back).
 *
 * @example
 * ```ts
 * const lease = await firstValueFrom(locker.acquireWriteLock('config', { ttl: 5_000 }));
 * ```
 */
export type AcquireReadWriteOptions = AcquireOptions;
